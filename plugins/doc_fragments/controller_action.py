# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    # What the action-backed modules share (their work runs in an action plugin on the controller). A module
    # may override a key here (Ansible merges the module's keys over the fragment's, option by option and
    # attribute by attribute). Plain literals: the sanity checks parse these strings without running them.
    DOCUMENTATION = r"""
author:
  - rlark.ops contributors (@rlark-ops)
attributes:
  check_mode:
    support: full
    description: Reads and writes nothing in any mode.
  diff_mode:
    support: none
    description: No diff.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller.
"""

    # The decision actions: one call per decision of a runbook, chosen by phase (each module lists its choices).
    DECISION = r"""
options:
  phase:
    description: Which decision.
    type: str
    required: true
"""
