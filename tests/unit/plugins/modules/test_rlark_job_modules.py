# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The three modules end to end over the in-memory API (ansible's patch_module_args)."""

import json
import os
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils"))

from ansible_collections.rlark.ops.plugins.module_utils import kube, module_runner
from ansible_collections.rlark.ops.plugins.modules import rlark_job, rlark_job_info, rlark_node_match
from rlark_fake_api import FakeApi, job, make_client, pod_obj, status, task_obj


class Exit(Exception):
    pass


def run_module(module, args, api, monkeypatch, check_mode=False, diff=False, capsys=None):
    captured = {}

    def fake_client(params, timeout=120, log=None):
        captured["params"] = params
        return make_client(api, timeout=timeout)

    # Every module's client comes from module_runner (api_client or run_module_core).
    monkeypatch.setattr(module_runner, "client_from_params", fake_client)
    args = dict(args)
    if check_mode:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        module.main()
    out = capsys.readouterr()[0]
    result = json.loads(out)
    result["_rc"] = exc.value.code
    result["_params"] = captured.get("params")
    return result


def seeded(**kw):
    api = FakeApi()
    api.add("jobs", job(**kw))
    for t in ("actor", "rollout", "env"):
        api.add("tasks", task_obj("demo", t))
        api.add("pods", pod_obj("demo-" + t))
    return api


def test_stop_without_wait_takes_three_calls(monkeypatch, capsys):
    api = seeded()
    r = run_module(rlark_job, {"name": "demo", "state": "stopped"}, api, monkeypatch, capsys=capsys)
    assert r["_rc"] == 0 and r["changed"] and r["action"] == "stopped"
    assert r["api_calls"] == 3 and r["api_retries"] == 0
    assert len(r["tasks"]) == 3 and r["pods"] == []
    assert r["job"]["spec"]["stopped"] is True
    assert r["diff"]["before"]["spec"]["stopped"] is False and r["diff"]["after"]["spec"]["stopped"] is True
    assert "resourceVersion" not in r["diff"]["after"]["metadata"]


def test_check_mode_stop_is_a_server_dry_run(monkeypatch, capsys):
    api = seeded()
    r = run_module(rlark_job, {"name": "demo", "state": "stopped"}, api, monkeypatch, check_mode=True, capsys=capsys)
    assert r["changed"] and api.get("jobs", "demo")["spec"]["stopped"] is False
    assert [r[2].get("dryRun") for r in api.requests if r[0] == "PATCH"] == ["All"]


def test_create_from_definition_string_then_unchanged(monkeypatch, capsys):
    api = FakeApi()
    definition = json.dumps(job(phase=None))
    r = run_module(rlark_job, {"definition": definition}, api, monkeypatch, capsys=capsys)
    assert r["changed"] and r["action"] == "created"
    r = run_module(rlark_job, {"definition": definition}, api, monkeypatch, capsys=capsys)
    assert not r["changed"] and r["action"] == "unchanged"
    assert r["diff"]["before"] == r["diff"]["after"]


def test_src_file_and_unknown_field_error(monkeypatch, capsys, tmp_path):
    bad = job(phase=None)
    bad["spec"]["tasks"][1]["replica"] = 2
    path = tmp_path / "job.json"
    path.write_text(json.dumps(bad))
    r = run_module(rlark_job, {"src": str(path)}, FakeApi(), monkeypatch, capsys=capsys)
    assert r["failed"] and r["_rc"] == 1
    assert 'unknown field "spec.tasks[1].replica"' in r["msg"]
    assert r["status"]["code"] == 400 and r["status"]["reason"] == "BadRequest"
    assert "Traceback" not in r["msg"]


def test_refusal_renders_findings(monkeypatch, capsys):
    api = seeded(phase="Succeeded")
    r = run_module(rlark_job, {"name": "demo", "state": "stopped"}, api, monkeypatch, capsys=capsys)
    assert r["failed"]
    assert r["findings"][0]["id"] == "job-terminal-phase"
    assert "[error] job-terminal-phase" in r["msg"]
    assert api.count("PATCH") == 0


def test_forbidden_is_a_sentence(monkeypatch, capsys):
    api = seeded()
    api.fail_next(
        status(403, "Forbidden", 'jobs.rlinf.io "demo" is forbidden: User "viewer" cannot patch resource "jobs"'),
        method="PATCH",
    )
    r = run_module(rlark_job, {"name": "demo", "state": "stopped"}, api, monkeypatch, capsys=capsys)
    assert r["failed"] and r["msg"].startswith("The API server rejected PATCH")
    assert "forbidden" in r["msg"] and r["msg"].count("\n") == 0
    assert r["status"]["code"] == 403


def test_copy_from_with_resume_dir_and_pvc_warning(monkeypatch, capsys):
    warned = []
    monkeypatch.setattr(rlark_job.AnsibleModule, "warn", lambda self, text: warned.append(text))
    api = seeded(pvc=True, stopped=True, phase="Stopped")
    api.get("jobs", "demo")["spec"]["tasks"][0]["runScript"] = (
        "python train.py runner.logger.log_path=/data/ckpt runner.logger.experiment_name=demo"
    )
    step = "/data/ckpt/demo/checkpoints/global_step_20"
    r = run_module(
        rlark_job,
        {"copy_from": "demo", "name": "demo-r1", "resume_dir": step},
        api,
        monkeypatch,
        capsys=capsys,
    )
    assert r["changed"] and r["action"] == "created"
    new = api.get("jobs", "demo-r1")
    assert new["spec"]["stopped"] is False
    # Its own output directory (named after the new Job), the original's step to load, and marks saying so.
    assert new["spec"]["tasks"][0]["runScript"] == (
        "python train.py runner.logger.log_path=/data/ckpt ++runner.logger.experiment_name=demo-r1 "
        "++runner.resume_dir=" + step
    )
    assert new["metadata"]["labels"]["rlark.ops/resumed-from"] == "demo"
    assert new["metadata"]["annotations"]["rlark.ops/resume-step"] == "20"
    assert api.get("jobs", "demo")["spec"]["stopped"] is True
    assert [f["id"] for f in r["findings"]] == ["copy-agent-pvc"] * 3
    assert len(warned) == 3 and warned[0].startswith("copy-agent-pvc: Volume 'ckpt' of task 'actor'")


def test_copy_refuses_bad_resume_dir(monkeypatch, capsys):
    api = seeded()
    r = run_module(
        rlark_job,
        {"copy_from": "demo", "name": "demo-r1", "resume_dir": "/x/global_step_2/"},
        api,
        monkeypatch,
        capsys=capsys,
    )
    # The default fake run script does not say where RLinf writes: the copy could not get its own directory.
    assert r["failed"] and [f["id"] for f in r["findings"]] == ["resume-dir-trailing-slash", "resume-output-unknown"]
    assert api.count("POST") == 0


def test_absent_refuses_pvcs_then_deletes(monkeypatch, capsys):
    api = seeded(pvc=True)
    r = run_module(rlark_job, {"name": "demo", "state": "absent"}, api, monkeypatch, capsys=capsys)
    assert r["failed"] and "pvc-demo-actor-ckpt" in r["msg"]
    r = run_module(
        rlark_job,
        {"name": "demo", "state": "absent", "allow_pvc_deletion": True, "wait": True},
        api,
        monkeypatch,
        capsys=capsys,
    )
    assert r["changed"] and r["job"] == {} and r["tasks"] == []
    assert r["wait_log"][-1].endswith("Job gone, 0 task(s) remaining")


def test_env_fallbacks_are_declared(monkeypatch, capsys):
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", "/tmp/kc")
    monkeypatch.setenv("K8S_AUTH_CONTEXT", "viewer")
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "false")
    r = run_module(rlark_job_info, {"name": "demo"}, seeded(), monkeypatch, capsys=capsys)
    assert r["_params"]["kubeconfig"] == "/tmp/kc" and r["_params"]["context"] == "viewer"
    assert r["_params"]["validate_certs"] is False


def test_job_info_by_name_and_selector(monkeypatch, capsys):
    api = seeded()
    api.add("nodes", {"metadata": {"name": "a100-01", "namespace": "rlark-a100"}})
    r = run_module(rlark_job_info, {"name": "demo"}, api, monkeypatch, capsys=capsys)
    assert not r["changed"] and len(r["resources"]) == 1
    entry = r["resources"][0]
    assert len(entry["tasks"]) == 3 and len(entry["pods"]) == 3 and len(entry["nodes"]) == 1
    r = run_module(rlark_job_info, {"name": "missing"}, api, monkeypatch, capsys=capsys)
    assert r["resources"] == []


def test_node_match_fails_on_errors_unless_told_not_to(monkeypatch, capsys):
    api = FakeApi()
    for ns in ("rlark-a100", "rlark-h100"):
        api.add(
            "nodes",
            {
                "metadata": {"name": "dual-01", "namespace": ns, "labels": {"kubernetes.io/hostname": "dual-01"}},
                "status": {"phase": "Online"},
            },
        )
    sel = [{"name": "actor", "selector": {"kubernetes.io/hostname": "dual-01"}, "head": True}]
    r = run_module(rlark_node_match, {"selectors": sel}, api, monkeypatch, capsys=capsys)
    assert r["failed"] and "selector-multi-cluster" in r["msg"]
    assert r["proof"]["tasks"][0]["clusters"] == ["rlark-a100", "rlark-h100"]
    r = run_module(rlark_node_match, {"selectors": sel, "fail_on_findings": False}, api, monkeypatch, capsys=capsys)
    assert r["_rc"] == 0 and not r["changed"] and not r["ok"]
    assert r["api_calls"] == 1
    assert r["proof"]["api_server"] == "https://fake.invalid:6443"
    assert r["proof"]["resource_version"] == str(api.rv)


def test_node_match_from_job_dict(monkeypatch, capsys):
    api = FakeApi()
    api.add(
        "nodes",
        {
            "metadata": {
                "name": "a100-01",
                "namespace": "rlark-a100",
                "labels": {"kubernetes.io/hostname": "a100-01", "rlinf.io/pool": "rollout"},
            },
            "status": {"phase": "Online"},
        },
    )
    d = job()
    d["spec"]["tasks"] = d["spec"]["tasks"][:1]
    r = run_module(rlark_node_match, {"job": d, "cluster_id": "a100"}, api, monkeypatch, capsys=capsys)
    assert r["_rc"] == 0 and r["ok"] and r["findings"] == []
    assert r["proof"]["tasks"][0]["matches"][0]["name"] == "a100-01"


def test_kube_error_has_no_traceback(monkeypatch, capsys):
    def broken(params, timeout=120, log=None):
        raise kube.ConfigError("No API server to talk to: set kubeconfig (or K8S_AUTH_KUBECONFIG) or host.")

    monkeypatch.setattr(module_runner, "client_from_params", broken)
    with patch_module_args({"name": "x"}), pytest.raises(SystemExit):
        rlark_job_info.main()
    r = json.loads(capsys.readouterr()[0])
    assert r["failed"] and r["msg"].startswith("No API server") and "exception" not in r


def test_job_info_field_selectors_filter_locally_beyond_name(monkeypatch, capsys):
    api = seeded()
    api.add("jobs", job(name="other", phase="Stopped", stopped=True))
    args = {"field_selectors": ["status.phase=Running"]}
    r = run_module(rlark_job_info, args, api, monkeypatch, capsys=capsys)
    assert [e["job"]["metadata"]["name"] for e in r["resources"]] == ["demo"]
    r = run_module(rlark_job_info, {"field_selectors": ["metadata.name=other"]}, api, monkeypatch, capsys=capsys)
    assert [e["job"]["metadata"]["name"] for e in r["resources"]] == ["other"]
    r = run_module(rlark_job_info, {"field_selectors": ["status.phase"]}, api, monkeypatch, capsys=capsys)
    assert r["failed"] and "field_selectors" in r["msg"]


def test_wait_for_phase_and_a_terminal_phase_fails_at_once(monkeypatch, capsys):
    api = seeded()
    r = run_module(
        rlark_job, {"name": "demo", "state": "started", "wait_for": "Running"}, api, monkeypatch, capsys=capsys
    )
    assert r["_rc"] == 0 and not r["changed"] and r["job"]["status"]["phase"] == "Running"
    assert any("phase Running" in line for line in r["wait_log"])
    api = seeded(phase="Failed")
    r = run_module(
        rlark_job,
        {
            "name": "demo",
            "state": "present",
            "definition": job(phase=None),
            "wait_for": "Running",
            "wait_timeout": 5,
            "wait_sleep": 1,
        },
        api,
        monkeypatch,
        capsys=capsys,
    )
    assert r["failed"] and [f["id"] for f in r["findings"]] == ["wait-phase-unreachable"]
    r = run_module(
        rlark_job, {"name": "demo", "state": "stopped", "wait_for": "Running"}, api, monkeypatch, capsys=capsys
    )
    assert r["failed"] and "cannot be reached with state=stopped" in r["msg"]
