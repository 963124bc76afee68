# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""When an action plugin may run its module's core in the worker process instead of a module run.

A module run costs a Python start-up, ansible's module imports and (on the controller) packaging the
module with its module_utils: most of a short task's time. The core gives the same result in the
worker only where the module would run as this process would: on the local connection, without
``become`` (the module would act as the become user: its files, its kubeconfig) and without a task
``environment`` (it may set K8S_AUTH_* or AWS_* for the module). Anywhere else the module runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def runs_in_worker(action):
    """Whether ``action``'s task may run its core in this worker process."""
    return (
        action._connection.transport == "local"
        and not action._play_context.become
        and not any(action._task.environment or [])  # ``[{}]`` when the task sets none
    )


__all__ = ["runs_in_worker"]
