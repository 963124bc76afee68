# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the Job model (logic in module_utils.jobspec): the one head-task rule for the roles."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


def head_task_name(job):
    """Name of the Job's head task (RLark's rule: the first template with ``head: true``), '' when none."""
    return jobspec.head_task(plain(job)).get("name") or ""


class FilterModule:
    def filters(self):
        return {"head_task_name": head_task_name}
