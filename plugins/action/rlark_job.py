# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_job: on a local connection the write and its wait run in the worker process.

Every migrate, stop and resume writes its Job with it, and a module run costs more than the write. Check
mode is the play's, task-level ``check_mode`` included: the write is a server-side dry run wherever it runs.
On any other connection, or with ``become``, a task ``environment`` or ``async``, the module runs on the
target (``controller_run.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools

from ansible_collections.rlark.ops.plugins.module_utils.job_write import (
    JOB_WRITE_RULES,
    JOB_WRITE_SPEC,
    DefinitionError,
    job_write,
    option_failure,
)
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import run_core
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_run import ControllerRunAction


class ActionModule(ControllerRunAction):
    OPTIONS = JOB_WRITE_SPEC
    RULES = JOB_WRITE_RULES

    def run_here(self, params, log):
        failure = option_failure(params)
        if failure:
            return failure
        core = functools.partial(job_write, check_mode=self._play_context.check_mode, log=log)
        try:
            return run_core(params, core, params["wait_timeout"], log=log)
        except DefinitionError as exc:
            return dict(exc.result, failed=True)
