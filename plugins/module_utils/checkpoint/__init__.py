# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checkpoint completeness gate: RLinf layouts as data, local and S3 listings, the verdicts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
