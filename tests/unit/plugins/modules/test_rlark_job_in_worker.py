# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_job in the worker: the action gives the module's result, sends the same requests and stores the same Jobs.

Each case runs the module (module.main()) over one in-memory API and the action on a local connection over
another seeded the same way; off a local connection, with become or async, the action runs the module.
"""

import json
import os
import sys

import pytest
from ansible.errors import AnsibleActionFail
from ansible.module_utils.basic import missing_required_lib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils"))

from ansible_collections.rlark.ops.plugins.action import rlark_job as job_action
from ansible_collections.rlark.ops.plugins.module_utils import job_write
from ansible_collections.rlark.ops.plugins.modules import rlark_job
from rlark_fake_api import FakeApi, job
from test_module_result_masking import assert_masked, seeded_secret
from test_rlark_job_info_in_worker import action, use_api
from test_rlark_job_modules import run_module, seeded

# What only a module run adds (ansible's invocation) or the test harness does (_rc, _params).
MODULE_ONLY = {"invocation", "_rc", "_params", "warnings"}
NO_LOG_MASK = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"  # what AnsibleModule puts for a no_log value
NO_WAIT = {"wait": True, "wait_timeout": 0, "wait_sleep": 0}


def definition(**changes):
    obj = job(phase=None)
    for task in obj["spec"]["tasks"]:
        task["kubernetes"]["workload"]["replicas"] = changes.get(task["name"], 1)
    return json.dumps(obj)


def stored_job():
    api = FakeApi()
    api.add("jobs", json.loads(definition()))
    return api


def copy_source():
    api = seeded(pvc=True, stopped=True, phase="Stopped")
    api.get("jobs", "demo")["spec"]["tasks"][0]["runScript"] = (
        "python train.py runner.logger.log_path=/data/ckpt runner.logger.experiment_name=demo"
    )
    return api


def same_as_module(monkeypatch, capsys, make_api, args, check_mode=False):
    """The action's result in the worker, asserted equal to the module's; returns (result, the action's API)."""
    module_api, worker_api = make_api(), make_api()
    # With controller code loaded, AnsibleModule.warn displays instead of returning: collect what it is given.
    warned = []
    monkeypatch.setattr(rlark_job.AnsibleModule, "warn", lambda self, text: warned.append(text))
    module = run_module(rlark_job, dict(args), module_api, monkeypatch, check_mode=check_mode, capsys=capsys)
    use_api(monkeypatch, worker_api)
    here = action(job_action, dict(args), check_mode=check_mode).run(task_vars={})
    assert sorted(set(here) - {"warnings"}) == sorted(set(module) - MODULE_ONLY)
    for key in set(module) - MODULE_ONLY:
        assert here[key] == module[key], key
    assert here.get("warnings", []) == warned
    assert worker_api.requests == module_api.requests
    assert worker_api.objects == module_api.objects
    return here, worker_api


@pytest.mark.parametrize(
    "make_api, args, action_done",
    [
        (FakeApi, {"definition": definition()}, "created"),
        (stored_job, {"definition": definition()}, "unchanged"),
        (stored_job, {"definition": definition(rollout=2), "update": True}, "updated"),
        (seeded, {"name": "demo", "state": "stopped"}, "stopped"),
        (lambda: seeded(stopped=True, phase="Stopped"), {"name": "demo", "state": "started"}, "started"),
        (seeded, {"name": "demo", "state": "absent", "wait": True}, "deleted"),
        (
            copy_source,
            {"copy_from": "demo", "name": "demo-r1", "resume_dir": "/data/ckpt/demo/checkpoints/global_step_20"},
            "created",
        ),
    ],
    ids=["create", "unchanged", "update", "stopped", "started", "absent", "copy_from"],
)
def test_each_state_in_the_worker_gives_the_module_result(monkeypatch, capsys, make_api, args, action_done):
    here, _api = same_as_module(monkeypatch, capsys, make_api, args)
    assert not here.get("failed") and here["action"] == action_done
    assert here["changed"] is (action_done != "unchanged")


def test_warnings_of_an_update_and_a_copy_are_the_task_warnings(monkeypatch, capsys):
    here, _api = same_as_module(monkeypatch, capsys, stored_job, {"definition": definition(rollout=2), "update": True})
    assert [w.split(":")[0] for w in here["warnings"]] == ["job-update-stale-annotations"]
    args = {"copy_from": "demo", "name": "demo-r1", "resume_dir": "/data/ckpt/demo/checkpoints/global_step_20"}
    here, _api = same_as_module(monkeypatch, capsys, copy_source, args)
    assert [w.split(":")[0] for w in here["warnings"]] == ["copy-agent-pvc"] * 3


@pytest.mark.parametrize(
    "make_api, args",
    [(FakeApi, {"definition": definition()}), (seeded, {"name": "demo", "state": "stopped"})],
    ids=["create", "stop"],
)
def test_check_mode_in_the_worker_is_a_dry_run_that_stores_nothing(monkeypatch, capsys, make_api, args):
    here, api = same_as_module(monkeypatch, capsys, make_api, args, check_mode=True)
    assert here["changed"] is True
    writes = [r for r in api.requests if r[0] in ("POST", "PATCH", "DELETE")]
    assert writes and [r[2].get("dryRun") for r in writes] == ["All"] * len(writes)
    assert api.objects == make_api().objects


def test_diff_in_the_worker_is_the_module_diff(monkeypatch, capsys):
    here, _api = same_as_module(monkeypatch, capsys, seeded, {"name": "demo", "state": "stopped"})
    assert here["diff"]["before"]["spec"]["stopped"] is False and here["diff"]["after"]["spec"]["stopped"] is True


def test_a_refusal_in_the_worker_names_finding_and_severity(monkeypatch, capsys):
    here, api = same_as_module(
        monkeypatch, capsys, lambda: seeded(phase="Succeeded"), {"name": "demo", "state": "stopped"}
    )
    assert here["failed"] and [(f["id"], f["severity"]) for f in here["findings"]] == [("job-terminal-phase", "error")]
    assert api.count("PATCH") == 0


def test_a_wait_timeout_after_a_write_in_the_worker_reports_changed(monkeypatch, capsys):
    here, api = same_as_module(monkeypatch, capsys, seeded, dict(NO_WAIT, name="demo", state="stopped"))
    assert here["failed"] and here["changed"] is True
    assert [(f["id"], f["severity"]) for f in here["findings"]] == [("wait-timeout", "error")]
    assert api.get("jobs", "demo")["spec"]["stopped"] is True


@pytest.mark.parametrize(
    "args",
    [
        {"copy_from": "demo", "name": "x", "state": "stopped"},
        {"name": "demo", "state": "stopped", "wait_for": "Running"},
        {"definition": "[1]"},
        {"definition": "kind: [Job"},
        {"src": "/nonexistent/job.yml"},
    ],
    ids=["copy-needs-present", "wait-for-unreachable", "not-an-object", "bad-yaml", "missing-src"],
)
def test_option_and_definition_errors_in_the_worker_are_the_module_failures(monkeypatch, capsys, args):
    here, api = same_as_module(monkeypatch, capsys, seeded, args)
    assert here["failed"] and "changed" not in here and "Traceback" not in here["msg"]
    assert api.requests == []


@pytest.mark.parametrize(
    "args",
    [
        {"definition": definition(), "copy_from": "demo", "name": "x"},
        {"state": "stopped"},
        {"state": "present"},
        {"resume_dir": "/x/global_step_2", "definition": definition()},
        {"name": "demo", "state": "paused"},
    ],
    ids=["mutually-exclusive", "required-if", "required-if-one-of", "required-by", "choices"],
)
def test_bad_option_combinations_fail_with_the_module_messages(monkeypatch, capsys, args):
    module = run_module(rlark_job, dict(args), FakeApi(), monkeypatch, capsys=capsys)
    with pytest.raises(AnsibleActionFail) as failed:
        action(job_action, dict(args)).run(task_vars={})
    assert module["failed"] and failed.value.result["msg"] == module["msg"]


def test_secret_values_of_the_job_are_masked_in_the_worker_result(monkeypatch, capsys):
    here, _api = same_as_module(monkeypatch, capsys, seeded_secret, {"name": "demo", "state": "stopped"})
    assert_masked(here)


def test_no_log_option_values_never_show_in_the_worker_result(monkeypatch, capsys):
    token = "plain-looking-t0ken-4711"

    def planted():
        api = seeded()
        api.get("jobs", "demo")["metadata"]["labels"] = {"note": token}
        return api

    here, _api = same_as_module(monkeypatch, capsys, planted, {"name": "demo", "state": "stopped", "api_key": token})
    assert token not in json.dumps(here) and here["job"]["metadata"]["labels"]["note"] == NO_LOG_MASK


@pytest.mark.parametrize(
    "where, wrap_async",
    [({"transport": "ssh"}, False), ({"become": True}, False), ({"async_val": 600}, True)],
    ids=["ssh", "become", "async"],
)
def test_the_action_runs_the_module_off_the_worker(where, wrap_async):
    act = action(job_action, {"name": "demo", "state": "stopped"}, **where)
    act._execute_module = lambda **kw: {"changed": True, "action": "from the target", "kw": kw}
    result = act.run(task_vars={})
    assert result["action"] == "from the target"
    assert result["kw"]["module_args"] == {"name": "demo", "state": "stopped"}
    assert result["kw"]["wrap_async"] is wrap_async


def test_without_pyyaml_the_module_fails_in_ansibles_words(monkeypatch, capsys):
    monkeypatch.setattr(job_write, "yaml", None)
    monkeypatch.setattr(job_write, "YAML_IMPORT_ERROR", "ModuleNotFoundError: No module named 'yaml'")
    r = run_module(rlark_job, {"definition": definition()}, FakeApi(), monkeypatch, capsys=capsys)
    assert r["failed"] and r["msg"] == missing_required_lib("PyYAML") and "api_calls" not in r
