# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_job_info read in the worker: the action and rlark_job_running's reads give the module's result.

On a local connection the read runs its core in the worker (no module run); anywhere else the module
runs on the target (``in_worker.py``). Both give the same result for the same API.
"""

import os
import sys
from types import SimpleNamespace
from unittest import mock

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils"))

from ansible_collections.rlark.ops.plugins.action import rlark_job_info as info_action
from ansible_collections.rlark.ops.plugins.action import rlark_job_running as running_action
from ansible_collections.rlark.ops.plugins.module_utils import module_runner
from ansible_collections.rlark.ops.plugins.modules import rlark_job_info
from rlark_fake_api import FakeApi, job, make_client, pod_obj, task_obj
from test_rlark_job_modules import run_module


def seeded(phase="Running"):
    api = FakeApi()
    api.add("jobs", job(phase=phase))
    api.add("jobs", job(name="other", phase="Stopped", stopped=True))
    for t in ("actor", "rollout", "env"):
        api.add("tasks", task_obj("demo", t))
        api.add("pods", pod_obj("demo-" + t))
    api.add("nodes", {"metadata": {"name": "a100-01", "namespace": "rlark-a100"}})
    return api


def use_api(monkeypatch, api):
    monkeypatch.setattr(module_runner, "client_from_params", lambda params, timeout=120, log=None: make_client(api))


def action(module, args, transport="local", check_mode=False, async_val=0, become=False):
    task = mock.MagicMock(args=args, async_val=async_val, check_mode=check_mode, diff=False, environment=[{}])
    connection = SimpleNamespace(transport=transport, _shell=mock.MagicMock(), has_native_async=False)
    play_context = mock.MagicMock(check_mode=check_mode, become=become)
    act = module.ActionModule(task, connection, play_context, None, None, None)
    act._execute_module = mock.MagicMock(side_effect=AssertionError("ran the module"))
    return act


@pytest.mark.parametrize(
    "args",
    [
        {"name": "demo"},
        {"name": "missing"},
        {"field_selectors": ["status.phase=Running"]},
        {"name": "demo", "nodes": False},
        {"field_selectors": ["status.phase"]},
    ],
)
def test_the_action_in_the_worker_gives_the_module_result(monkeypatch, capsys, args):
    api = seeded()
    use_api(monkeypatch, api)
    here = action(info_action, dict(args)).run(task_vars={})
    module = run_module(rlark_job_info, dict(args), api, monkeypatch, capsys=capsys)
    assert bool(here.get("failed")) is bool(module.get("failed"))
    for key in ("resources", "msg", "api_calls", "api_retries", "changed"):
        assert here.get(key) == module.get(key), key


def test_the_action_runs_the_module_off_a_local_connection():
    act = action(info_action, {"name": "demo"}, transport="ssh")
    act._execute_module = mock.MagicMock(return_value={"changed": False, "resources": ["from the target"]})
    assert act.run(task_vars={})["resources"] == ["from the target"]
    assert act._execute_module.call_count == 1


def test_rlark_job_running_reads_in_the_worker(monkeypatch):
    use_api(monkeypatch, seeded())
    result = action(running_action, {"name": "demo", "wait_timeout": 0}).run(task_vars={})
    assert [r["job"]["metadata"]["name"] for r in result["resources"]] == ["demo"]


def test_rlark_job_running_in_the_worker_fails_a_read_on_a_bad_option(monkeypatch):
    use_api(monkeypatch, seeded())
    result = action(running_action, {"name": "demo", "wait_timeout": 0, "nodes": "perhaps"}).run(task_vars={})
    assert result["timed_out"] is True and result["resources"] == []
    assert "nodes" in result["msg"] and "Last read failed" in result["msg"]
