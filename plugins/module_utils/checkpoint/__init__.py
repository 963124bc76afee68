# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RLinf checkpoints: where a Job writes them (location, dir_guard), whether a step is complete (the gate and its
rules, local and S3 listings), its content integrity, and waits on the gate (waiting, gate_summary)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
