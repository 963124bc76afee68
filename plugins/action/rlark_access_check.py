# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_access_check: ask the API server on the controller, no module run.

On a local connection without a task ``environment`` the reviews are sent from the worker process (a
module run would cost more than the reviews); otherwise the module runs (``controller_run.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.access import ACCESS_CHECK_SPEC, access_check
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import run_core
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_run import ControllerRunAction


class ActionModule(ControllerRunAction):
    OPTIONS = ACCESS_CHECK_SPEC

    def run_here(self, params, log):
        return run_core(params, access_check, params["timeout"], log=log)
