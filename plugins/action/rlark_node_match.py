# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_node_match: prove the selectors on the controller, no module run.

The proof only reads the API, so on a local connection it runs in the controller's worker process
(no AnsiballZ packaging, no second Python start-up, no re-import of ansible): that overhead is most
of a module task's time. On any other connection, or with a task ``environment``, the module runs
on the target as usual, so the documented behaviour never depends on where the task is delegated.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.rlark.ops.plugins.module_utils.module_options import (
    NODE_MATCH_RULES,
    NODE_MATCH_SPEC,
    argument_spec,
)
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import FAILURES, failure_result
from ansible_collections.rlark.ops.plugins.module_utils.nodes import node_match

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        # ``environment`` defaults to ``[{}]``; any real entry may set K8S_AUTH_* for the module.
        if self._connection.transport != "local" or any(self._task.environment or []):
            result.update(self._execute_module(module_args=self._task.args, task_vars=task_vars))
            return result
        params = self.validate_argument_spec(argument_spec=argument_spec(**NODE_MATCH_SPEC), **NODE_MATCH_RULES)[1]
        try:
            outcome, failure = node_match(params, log=display.vvv)
        except FAILURES as exc:
            result.update(failure_result(exc))
            return result
        result.update(outcome)
        if failure:
            result.update(failed=True, msg=failure)
        return result
