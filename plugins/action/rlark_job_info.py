# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_job_info: on a local connection the read runs in the worker process.

Every role reads its Jobs with it, and a module run costs more than the reads. On any other connection, or
with ``become`` or a task ``environment``, the module runs on the target (``controller_run.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.job_info import JOB_INFO_SPEC, job_info
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import run_core
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_run import ControllerRunAction


class ActionModule(ControllerRunAction):
    OPTIONS = JOB_INFO_SPEC

    def run_here(self, params, log):
        return run_core(params, job_info, params["timeout"], log=log)
