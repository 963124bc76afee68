# Copyright: rlark.ops contributors
# Apache License 2.0 (see LICENSE)
"""Checkpoint completeness gate: RLinf layouts as data, local and S3 listings, the verdicts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
