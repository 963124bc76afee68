# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rlark_job_running action: reads until the Job runs as designed, and gives up with what it saw."""

from unittest import mock

from ansible_collections.rlark.ops.plugins.action import rlark_job_running as action_mod


def _action(args, reads):
    task = mock.MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    task.diff = False
    action = action_mod.ActionModule(
        task, mock.MagicMock(), mock.MagicMock(check_mode=False), None, mock.MagicMock(), None
    )
    calls = []

    def execute_module(module_name, module_args, task_vars):
        calls.append((module_name, dict(module_args)))
        return reads[min(len(calls), len(reads)) - 1]

    action._execute_module = execute_module
    return action, calls


def _state(resource, proof, name):
    running = resource.get("phase") == "Running"
    findings = [] if running else [{"id": "task-not-running", "message": "actor: 0/2 pods Running"}]
    return {"submitted": True, "running": running, "findings": findings, "observed": {}}


def test_reads_until_running_and_forwards_only_the_api_options(monkeypatch):
    monkeypatch.setattr(action_mod, "job_state", _state)
    pending = {"resources": [{"phase": "Pending"}]}
    running = {"resources": [{"phase": "Running"}]}
    args = {"name": "demo", "timeout": 60, "interval": 0, "kubeconfig": "/k", "proof": {"tasks": []}}
    action, calls = _action(args, [pending, pending, running])
    result = action.run(task_vars={})
    assert result["running"] is True and result["timed_out"] is False and "msg" not in result
    assert result["resources"] == running["resources"]
    assert [c[0] for c in calls] == ["rlark.ops.rlark_job_info"] * 3
    assert calls[0][1] == {"name": "demo", "kubeconfig": "/k"}
    assert [line.split(": ", 1)[1] for line in result["wait_log"]] == [
        "actor: 0/2 pods Running",
        "every pod runs as designed",
    ]


def test_gives_up_with_what_it_saw_and_the_failed_read(monkeypatch):
    monkeypatch.setattr(action_mod, "job_state", _state)
    action, calls = _action({"name": "demo", "timeout": 0}, [{"failed": True, "msg": "API server unreachable"}])
    result = action.run(task_vars={})
    assert result["running"] is False and result["timed_out"] is True and not result.get("failed")
    assert result["msg"].startswith("Timed out after 0s waiting for Job demo to run as designed")
    assert result["msg"].endswith("Last read failed: API server unreachable")
    assert len(calls) == 1 and result["resources"] == []
