# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    # The attributes the action-backed modules share (their work runs in an action plugin on the controller).
    # A module still states its own check_mode, and may override a description here (Ansible merges the
    # module's keys over the fragment's). Plain literals: the sanity checks parse this string without running it.
    DOCUMENTATION = r"""
attributes:
  diff_mode:
    support: none
    description: No diff.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller.
"""
