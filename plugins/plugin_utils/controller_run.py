# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugins that run an API module's core in the controller on a local connection.

An API task on a local connection runs in the controller's worker process (no AnsiballZ packaging,
no second Python start-up, no re-import of ansible): that overhead is most of a module task's time.
On any other connection, with ``become``, a task ``environment`` (it may set ``K8S_AUTH_*`` for the
module) or ``async``, the module runs on the target as usual, so the documented behaviour never
depends on where the task is delegated (``in_worker.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.module_options import argument_spec
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload
from ansible_collections.rlark.ops.plugins.plugin_utils.in_worker import InWorkerAction

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()


class ControllerRunAction(InWorkerAction):
    """An API module's action: ``OPTIONS`` are the module's own options, the shared auth options join them."""

    def argument_spec(self):
        return argument_spec(**self.OPTIONS)
