# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""When an action plugin may run its module's core in the worker process instead of a module run.

A module run costs a Python start-up, ansible's module imports and (on the controller) packaging the
module with its module_utils: most of a short task's time. The core gives the same result in the
worker only where the module would run as this process would: on the local connection, without
``become`` (the module would act as the become user: its files, its kubeconfig) and without a task
``environment`` (it may set K8S_AUTH_* or AWS_* for the module). Anywhere else the module runs, and so
does an ``async`` task: it goes on in the background, which only a module run does.
:class:`InWorkerAction` is the action plugin that chooses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.common.parameters import remove_values
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()


def runs_in_worker(action):
    """Whether ``action``'s task may run its core in this worker process."""
    return (
        action._connection.transport == "local"
        and not action._play_context.become
        and not any(action._task.environment or [])  # ``[{}]`` when the task sets none
        and not action._task.async_val
    )


class InWorkerAction(ActionBase):
    """The module's core here where :func:`runs_in_worker` allows, else the module on the target.

    Subclasses set ``OPTIONS`` (the module's argument spec), ``RULES`` (its mutually_exclusive, required_*
    rules) and ``run_here(params, log)``, which returns the module's result for validated ``params``. That
    result is masked as the module's ``exit_json`` masks it: no value of a ``no_log`` option shows in it.
    """

    TRANSFERS_FILES = False
    # An async task runs the module in the background (runs_in_worker), as a plain module task does.
    _supports_async = True
    OPTIONS = {}
    RULES = {}

    def argument_spec(self):
        return self.OPTIONS

    def run_here(self, params, log):
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if not runs_in_worker(self):
            wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
            result.update(self._execute_module(module_args=self._task.args, task_vars=task_vars, wrap_async=wrap_async))
            return result
        checked, params = self.validate_argument_spec(argument_spec=self.argument_spec(), **self.RULES)
        here = self.run_here(params, display.vvv)
        secrets = checked._no_log_values
        result.update(remove_values(here, secrets) if secrets else here)
        return result


__all__ = ["InWorkerAction", "runs_in_worker"]
