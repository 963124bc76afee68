# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_access_check: ask the API server on the controller, no module run.

As for rlark_node_match: on a local connection without a task ``environment`` the reviews are sent
from the worker process (a module run would cost more than the reviews); otherwise the module runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.rlark.ops.plugins.module_utils.access import ACCESS_CHECK_SPEC, run_access_check
from ansible_collections.rlark.ops.plugins.module_utils.module_options import argument_spec

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if self._connection.transport != "local" or any(self._task.environment or []):
            result.update(self._execute_module(module_args=self._task.args, task_vars=task_vars))
            return result
        params = self.validate_argument_spec(argument_spec=argument_spec(**ACCESS_CHECK_SPEC))[1]
        result.update(run_access_check(params, log=display.vvv))
        return result
