# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugins that run a read-only API module's core in the controller on a local connection.

A read-only API task on a local connection runs in the controller's worker process (no AnsiballZ
packaging, no second Python start-up, no re-import of ansible): that overhead is most of a module
task's time. On any other connection, or with a task ``environment`` (it may set ``K8S_AUTH_*`` for
the module), the module runs on the target as usual, so the documented behaviour never depends on
where the task is delegated (``in_worker.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.rlark.ops.plugins.module_utils.module_options import argument_spec
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload
from ansible_collections.rlark.ops.plugins.plugin_utils.in_worker import runs_in_worker

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()

display = Display()


class ControllerRunAction(ActionBase):
    """Subclasses set ``OPTIONS`` (the module's own options), ``RULES`` and ``run_here(params, log)``."""

    TRANSFERS_FILES = False
    OPTIONS = {}
    RULES = {}

    def run_here(self, params, log):
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if not runs_in_worker(self):
            result.update(self._execute_module(module_args=self._task.args, task_vars=task_vars))
            return result
        params = self.validate_argument_spec(argument_spec=argument_spec(**self.OPTIONS), **self.RULES)[1]
        result.update(self.run_here(params, display.vvv))
        return result
