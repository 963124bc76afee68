# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_guarded_stop: the whole guarded stop of one Job in one call.

Wiring only: the options become a StopPolicy, a gate call (run on the task's target, where the
checkpoint lives, as rlark_ckpt_wait does), a log source read on the controller and the records
location; module_utils/guarded_stop decides and writes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.rlark.ops.plugins.module_utils import jobspec, log_follow
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop import journal
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop.policy import WHEN, StopPolicy
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop.transaction import DEFAULT_DEADLINE, GuardedStop
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import (
    LOG_SOURCE_SPEC,
    clusters_of,
    head_pod_name,
)
from ansible_collections.rlark.ops.plugins.module_utils.kube import client_from_params
from ansible_collections.rlark.ops.plugins.module_utils.module_options import argument_spec
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import FAILURES, call_counts, failure_result
from ansible_collections.rlark.ops.plugins.module_utils.records import acting_identity, file_mode, new_run_id
from ansible_collections.rlark.ops.plugins.module_utils.wait_options import wait_spec
from ansible_collections.rlark.ops.plugins.plugin_utils.checkpoint_wait import checkpoint_wait
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()

display = Display()

SPEC = dict(
    name=dict(type="str", required=True),
    resource=dict(type="dict", default={}),
    run_id=dict(type="str"),
    records_dir=dict(type="path", required=True),
    records_mode=dict(type="raw"),
    gate=dict(type="dict", default={}),
    when=dict(type="str", default="now", choices=list(WHEN)),
    save_window_seconds=dict(type="float", default=0),
    **wait_spec(3600, 0.25, older=("next_checkpoint_timeout", "next_checkpoint_poll"), prefix="next_checkpoint_"),
    done_markers=dict(type="list", elements="raw", default=[]),
    accept_truncated_logs=dict(type="bool", default=False),
    **LOG_SOURCE_SPEC,
    manifest=dict(type="dict", default={}),
    location=dict(type="dict", default={}),
    selection=dict(type="dict", default={}),
    identity=dict(type="dict", default={}),
    wait=dict(type="bool", default=True),
    **wait_spec(600, 1.0),
    deadline=dict(type="float", default=DEFAULT_DEADLINE),
)
# Outcomes that fail the task when it runs alone (the guarded_stop role reads ``outcome`` instead).
NOT_OK = ("refused", "failed", "stopped-unconfirmed")


def log_reader(p, name, resource):
    """``read_logs(export_dir) -> read()`` for LogTail, and the expected size of the logs in bytes."""
    pods = sorted(jobspec.pod_local_name(pod) or "" for pod in resource.get("pods") or [])
    pods = [pod for pod in pods if pod]
    head = head_pod_name(name, jobspec.head_task(resource.get("job") or {}).get("name") or "")

    def read_logs(export_dir):
        return log_follow.log_reader(
            p["log_source"], name, export_dir, pods or [head],
            follow_timeout=p["wait_timeout"] + log_follow.DRAIN_SECONDS,
            logs_dir=p["logs_dir"] or None, gateway_url=p["gateway_url"] or None,
            kubeconfig=p["data_plane_kubeconfig"] or None, kubeconfigs=p["data_plane_kubeconfigs"],
            clusters=clusters_of(resource),
        )  # fmt: skip

    expected = journal.UNKNOWN_LOG_BYTES * max(1, len(pods))
    if p["log_source"] == "files" and p["logs_dir"]:
        folder = os.path.join(os.path.expanduser(p["logs_dir"]), name)
        try:
            expected = sum(entry.stat().st_size for entry in os.scandir(folder) if entry.is_file())
        except OSError:
            expected = 0
    return read_logs, head, expected


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        p = self.validate_argument_spec(argument_spec=argument_spec(**SPEC))[1]
        resource = p["resource"]
        name = p["name"]
        host = task_vars.get("inventory_hostname", name)

        def progress(line):
            display.display("%s: %s" % (host, line), stderr=True)

        def gate(wait):
            if not p["gate"]:
                return {"failed": True, "msg": "no checkpoint storage to gate (%s)" % p["location"].get("reason", "")}
            return checkpoint_wait(self, dict(p["gate"], **wait), task_vars, progress)

        try:
            mode = file_mode(p["records_mode"] or self._templar.template(task_vars.get("rlark_records_mode") or ""))
            policy = StopPolicy(
                p["when"], p["save_window_seconds"], p["next_checkpoint_wait_timeout"], p["next_checkpoint_wait_sleep"],
                p["done_markers"], p["accept_truncated_logs"],
            )  # fmt: skip
        except ValueError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        read_logs, head, expected = log_reader(p, name, resource)
        identity = acting_identity(task_vars.get("rlark_api_user"), p["identity"])
        run_id = p["run_id"] or new_run_id("guarded-stop")
        client = None
        try:
            client = client_from_params(p, timeout=p["deadline"] + p["wait_timeout"], log=display.vvv)
            stop = GuardedStop(
                client, resource, run_id, policy, gate, read_logs,
                {"dir": p["records_dir"], "mode": mode, "identity": identity}, head,
                check_mode=self._task.check_mode, name=name, manifest=p["manifest"], location=p["location"],
                selection=p["selection"], identity=p["identity"], expected_log_bytes=expected, wait=p["wait"],
                wait_timeout=p["wait_timeout"], interval=p["wait_sleep"], deadline=p["deadline"], progress=progress,
            )  # fmt: skip
            outcome = stop.run()
        except FAILURES as exc:
            result.update(failure_result(exc, client))
            return result
        finally:
            if client is not None:
                result.update(call_counts(client))
                client.close()
        result.update(outcome=outcome, gate=outcome.pop("gate", {}), stop=outcome.pop("stop", {}))
        result["findings"] = outcome.get("findings") or []
        result["changed"] = outcome["outcome"] in ("stopped", "stopped-unconfirmed", "failed")
        if outcome["outcome"] in NOT_OK:
            result.update(failed=True, msg="Guarded stop of %s %s: %s" % (name, outcome["outcome"], outcome["reason"]))
        return result
