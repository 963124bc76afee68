# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_stop_with_logs: stop a Job and tail its logs on the controller.

The logs are read where the controller reads them (the rlark.ops.job_logs sources), so this always
runs in the worker process; progress lines of the wait go to the terminal as they happen.

The guarded stop (gate, verdict, write-ahead record) is rlark_guarded_stop; this is the plain stop.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import tempfile

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import (
    LOG_SOURCE_SPEC,
    LogSourceError,
    head_pod_name,
)
from ansible_collections.rlark.ops.plugins.module_utils.kube import client_from_params
from ansible_collections.rlark.ops.plugins.module_utils.log_follow import DRAIN_SECONDS, log_reader
from ansible_collections.rlark.ops.plugins.module_utils.module_options import argument_spec
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import FAILURES, call_counts, failure_result
from ansible_collections.rlark.ops.plugins.module_utils.stop_logs import stop_with_logs
from ansible_collections.rlark.ops.plugins.module_utils.wait_options import wait_spec
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()

display = Display()

SPEC = dict(
    name=dict(type="str", required=True),
    head_task=dict(type="str", required=True),
    pods=dict(type="list", elements="str", default=[]),
    **LOG_SOURCE_SPEC,
    clusters=dict(type="dict", default={}),
    accept_truncated_logs=dict(type="bool", default=False),
    export_dir=dict(type="path"),
    namespace=dict(type="str"),
    wait=dict(type="bool", default=True),
    **wait_spec(600, 1.0, timeout_type="int"),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        p = self.validate_argument_spec(argument_spec=argument_spec(**SPEC))[1]
        name = p["name"]
        head = head_pod_name(name, p["head_task"])
        pods = p["pods"] or [head]

        # The exports stay here until rlark_record copies them into the run's record directory.
        if p["export_dir"]:
            os.makedirs(p["export_dir"], exist_ok=True)
        export_dir = tempfile.mkdtemp(prefix=".rlark-logs-%s-" % name, dir=p["export_dir"] or None)

        read = log_reader(
            p["log_source"], name, export_dir, pods, follow_timeout=p["wait_timeout"] + DRAIN_SECONDS,
            logs_dir=p["logs_dir"] or None, gateway_url=p["gateway_url"] or None,
            kubeconfig=p["data_plane_kubeconfig"] or None, kubeconfigs=p["data_plane_kubeconfigs"],
            clusters=p["clusters"], namespace=p["namespace"] or None,
        )  # fmt: skip

        def progress(line):
            display.display("%s: %s" % (task_vars.get("inventory_hostname", name), line), stderr=True)

        client = None
        try:
            client = client_from_params(p, timeout=p["wait_timeout"] + 60, log=display.vvv)
            outcome = stop_with_logs(
                client,
                name,
                read,
                head,
                check_mode=self._task.check_mode,
                wait=p["wait"],
                timeout=p["wait_timeout"],
                interval=p["wait_sleep"],
                progress=progress,
                export_dir=export_dir,
                accept_truncated=p["accept_truncated_logs"],
                follow=True,
            )
        except FAILURES as exc:
            result.update(failure_result(exc, client))
            return result
        except LogSourceError as exc:
            result.update(failed=True, changed=False, msg="Cannot read the logs of Job %s: %s" % (name, exc))
            return result
        finally:
            if "failed" in result or client is None:
                shutil.rmtree(export_dir, ignore_errors=True)  # only this call's temporary exports
            if client is not None:
                result.update(call_counts(client))
                client.close()
        result.update(outcome)
        if "patched_at" not in outcome or self._task.check_mode:
            shutil.rmtree(export_dir, ignore_errors=True)  # no stop, no record: nothing to keep
            result.pop("export_dir", None)
        return result
