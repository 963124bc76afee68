# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_job_running: read the Job until it runs as designed, with progress lines.

Each look is one rlark.ops.rlark_job_info read with the task's API options (in this worker where the module
would act as it does, ``in_worker.py``; else a module run on the target); the verdict is
module_utils.verify.job_state, the same one the verify role records. The wait replaces a YAML until: loop,
whose timeout said only "Unknown error".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.rlark.ops.plugins.module_utils.job_info import JOB_INFO_SPEC, job_info
from ansible_collections.rlark.ops.plugins.module_utils.module_options import argument_spec
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import run_core
from ansible_collections.rlark.ops.plugins.module_utils.verify import job_state
from ansible_collections.rlark.ops.plugins.module_utils.wait_options import all_names, wait_spec
from ansible_collections.rlark.ops.plugins.module_utils.waiter import Waiter, WaitTimeout
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload
from ansible_collections.rlark.ops.plugins.plugin_utils.in_worker import runs_in_worker

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()

display = Display()

# The wait in the one wait vocabulary (module_utils/wait_options); timeout and interval are the older names.
WAIT_SPEC = dict(
    name=dict(type="str", required=True),
    proof=dict(type="dict", default={}),
    **wait_spec(180, 2, older=("timeout", "interval")),
)
OWN_NAMES = all_names(WAIT_SPEC)


def state_line(state, failure=""):
    """One progress line: what keeps the Job from running as designed."""
    if failure:
        return "rlark_job_info failed: %s" % failure
    if state["running"]:
        return "every pod runs as designed"
    return "; ".join(f.get("message", f.get("id", "")) for f in state["findings"][:3]) or "not running yet"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def read_job(self, info_args, task_vars):
        """One rlark_job_info read: its core in this worker where the module would act as it does."""
        if not runs_in_worker(self):
            return self._execute_module(
                module_name="rlark.ops.rlark_job_info", module_args=info_args, task_vars=task_vars
            )
        checked = ArgumentSpecValidator(argument_spec(**JOB_INFO_SPEC)).validate(info_args)
        if checked.error_messages:
            return {"failed": True, "msg": "; ".join(checked.error_messages)}
        params = checked.validated_parameters
        return run_core(params, job_info, params["timeout"], log=display.vvv)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        own = {k: args.pop(k) for k in OWN_NAMES if k in args}
        checked = ArgumentSpecValidator(WAIT_SPEC).validate(own)
        if checked.error_messages:
            raise AnsibleActionFail("rlark_job_running: %s" % "; ".join(checked.error_messages))
        params = checked.validated_parameters
        info_args = dict(args, name=params["name"])
        last = {"info": {}, "failure": ""}

        def look():
            info = self.read_job(info_args, task_vars)
            last["info"], last["failure"] = info, info.get("msg", "failed") if info.get("failed") else ""
            resource = (info.get("resources") or [{}])[0] if not last["failure"] else {}
            state = job_state(resource, params["proof"], params["name"])
            return state["running"], state_line(state, last["failure"]), state

        waiter = Waiter(params["wait_timeout"], params["wait_sleep"], progress=display.display)
        timed_out = False
        try:
            state = waiter.wait(look, "Job %s to run as designed" % params["name"])
        except WaitTimeout as exc:
            state, timed_out = exc.state, True
            result["msg"] = str(exc)
        if last["failure"]:
            result["msg"] = ("%s " % result.get("msg", "")).lstrip() + "Last read failed: %s" % last["failure"]
        result.update(
            changed=False,
            resources=last["info"].get("resources") or [],
            state=state,
            running=state["running"],
            timed_out=timed_out,
            waited_seconds=round(waiter.clock() - waiter.started, 1),
            wait_log=waiter.log,
        )
        return result
