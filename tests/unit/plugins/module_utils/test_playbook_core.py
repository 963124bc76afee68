# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the data steps behind the roles: query, placement, checkpoint location, verify, summary."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import (
    placement,
    stop_record,
    stop_summary,
    verify,
)
from ansible_collections.rlark.ops.plugins.module_utils import query as q
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import gate_summary, location


def job(run_script="", mounts=None, volumes=None, storage_map=None, image="reg/x@sha256:" + "a" * 64):
    pod = {
        "containers": [{"name": "main", "image": image, "volumeMounts": mounts or []}],
        "volumes": volumes or [],
    }
    workload = {"kind": "StatefulSet", "replicas": 1, "template": {"spec": pod}}
    if storage_map:
        workload["pvcStorageMap"] = storage_map
    return {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "demo"},
        "spec": {
            "tasks": [
                {
                    "name": "actor",
                    "head": True,
                    "role": "Actor",
                    "runScript": run_script,
                    "kubernetes": {"workload": workload},
                },
                {
                    "name": "rollout",
                    "role": "Rollout",
                    "kubernetes": {
                        "workload": {
                            "kind": "StatefulSet",
                            "replicas": 2,
                            "template": {"spec": {"containers": [{"name": "main"}]}},
                        }
                    },
                },
            ]
        },
    }


HOST_MOUNT = [{"name": "data", "mountPath": "/data/rlinf"}]
HOST_VOL = [{"name": "data", "hostPath": {"path": "/data/rlinf"}}]
SCRIPT = "cd /w && python train.py runner.logger.log_path=/data/rlinf/logs ++runner.logger.experiment_name=demo"


def pod(task, local, node, phase="Running", namespace="rlark-a100"):
    """A Pod CR; it lives in its Task's namespace."""
    return {
        "metadata": {"namespace": namespace, "labels": {"rlark.io/task-name": task, "rlark.io/local-pod-name": local}},
        "status": {"node": node, "phase": phase},
    }


# ---------------------------------------------------------------- query
def test_query_selects_and_asserts():
    data = [{"job": {"metadata": {"name": "a"}, "status": {"phase": "Running"}}}, {"job": {"metadata": {"name": "b"}}}]
    assert q.query(data, "[?job.status.phase=='Running'].job.metadata.name") == ["a"]
    assert q.holds(data, "[?job.status.phase=='Running']") is True
    assert q.holds(data, "[?job.status.phase=='Stopped']") is False


@pytest.mark.parametrize("expr", ["[?", "", "foo[", 3])
def test_query_invalid_expression_is_one_sentence(expr):
    with pytest.raises(q.QueryError) as err:
        q.query({}, expr)
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- placement
HOSTVARS = {
    "localhost": {},
    "n1": {"rlark_node_name": "a100-01", "rlark_node_root": "/sb/nodes/a100-01"},
    "dual-a": {"rlark_node_name": "dual-01", "rlark_node_cluster": "rlark-a100"},
    "dual-h": {"rlark_node_name": "dual-01", "rlark_node_cluster": "rlark-h100"},
    "10.0.0.9-host": {"ansible_host": "10.0.0.9"},
}
GROUPS = {"rlark_nodes": ["10.0.0.9-host", "edge-01"]}


def test_host_for_node_by_var_cluster_and_group():
    assert placement.host_for_node("a100-01", HOSTVARS, GROUPS) == "n1"
    assert (
        placement.host_for_node({"name": "dual-01", "namespace": "rlark-h100", "cluster": "h100"}, HOSTVARS, GROUPS)
        == "dual-h"
    )
    assert (
        placement.host_for_node({"name": "x", "addresses": [{"address": "10.0.0.9"}]}, HOSTVARS, GROUPS)
        == "10.0.0.9-host"
    )
    assert placement.host_for_node("edge-01", HOSTVARS, GROUPS) == "edge-01"
    assert placement.host_for_node("nowhere", HOSTVARS, GROUPS) is None


def test_hostpath_plan_checks_every_node_and_flags_unmapped():
    proof = {"tasks": [{"name": "actor", "matches": [{"name": "a100-01"}, {"name": "ghost"}]}]}
    plan = placement.hostpath_plan(job(mounts=HOST_MOUNT, volumes=HOST_VOL), proof, HOSTVARS, GROUPS)
    assert [h["host"] for h in plan["hosts"]] == ["n1"]
    assert plan["hosts"][0]["checks"][0]["full_path"] == "/sb/nodes/a100-01/data/rlinf"
    assert plan["hosts"][0]["checks"][0]["writable"] is True
    assert [f["id"] for f in plan["findings"]] == ["hostpath-node-unmapped"]
    assert "ghost" in plan["findings"][0]["message"]


def sh(script):
    import subprocess

    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout


def test_hostpath_results_from_the_real_script(tmp_path):
    ok = tmp_path / "n1" / "data" / "rlinf"
    ok.mkdir(parents=True)
    hostvars = {
        "n1": {"rlark_node_name": "a100-01", "rlark_node_root": str(tmp_path / "n1")},
        "n2": {"rlark_node_name": "a100-02", "rlark_node_root": str(tmp_path / "n2")},
    }
    proof = {"tasks": [{"name": "actor", "matches": [{"name": "a100-01"}, {"name": "a100-02"}]}]}
    plan = placement.hostpath_plan(job(mounts=HOST_MOUNT, volumes=HOST_VOL), proof, hostvars, {})
    outputs = {h["host"]: {"stdout": sh(h["script"])} for h in plan["hosts"]}
    res = placement.hostpath_results(plan, outputs)
    assert [(f["id"], "a100-02" in f["message"]) for f in res["findings"]] == [("hostpath-missing", True)]
    assert [r["exists"] for r in res["results"]] == [True, False]


def test_hostpath_unreachable_host_is_a_finding():
    plan = placement.hostpath_plan(
        job(mounts=HOST_MOUNT, volumes=HOST_VOL), {"tasks": [{"name": "actor", "matches": ["a100-01"]}]}, HOSTVARS, {}
    )
    res = placement.hostpath_results(plan, {"n1": {"stdout": "", "msg": "ssh: no route"}})
    assert res["findings"][0]["id"] == "hostpath-node-unreachable" and "no route" in res["findings"][0]["message"]


# ---------------------------------------------------------------- checkpoint location
def test_locate_hostpath_on_head_pod_node():
    res = {"job": job(SCRIPT, HOST_MOUNT, HOST_VOL), "pods": [pod("demo-actor", "demo-actor-0", "a100-01")]}
    loc = location.locate(res)
    assert loc["ok"] and loc["kind"] == "hostPath" and loc["node"] == "a100-01"
    assert loc["container_root"] == "/data/rlinf/logs/demo/checkpoints"
    assert loc["host_path"] == "/data/rlinf/logs/demo/checkpoints"
    assert location.step_dir(loc["container_root"], 12) == "/data/rlinf/logs/demo/checkpoints/global_step_12"


def test_locate_object_storage_and_refusals():
    mounts = [{"name": "ckpt", "mountPath": "/ckpt"}]
    vols = [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "c1"}}]
    script = "python t.py runner.output_dir=/ckpt/runs runner.experiment_name=e1"
    s3 = {"rlark-s3": {"bucket": "checkpoints", "endpoint_url": "http://127.0.0.1:1"}}
    loc = location.locate({"job": job(script, mounts, vols, {"c1": "rlark-s3"})}, object_storage=s3)
    assert loc["ok"] and loc["kind"] == "s3" and loc["s3"]["prefix"] == "runs/e1/checkpoints"
    plain_pvc = location.locate({"job": job(script, mounts, vols, {"c1": "local-path"})}, object_storage=s3)
    assert not plain_pvc["ok"] and plain_pvc["kind"] == "pvc"
    container = location.locate({"job": job(script)})
    assert not container["ok"] and container["kind"] == "container" and "disappears" in container["reason"]
    unknown = location.locate({"job": job("python t.py")})
    assert not unknown["ok"] and "unknown" in unknown["reason"]


def test_run_script_wins_over_manifest_root_and_last_override_wins():
    # A word quoted as a whole reaches Hydra unquoted; non-runner keys are not returned.
    assert location.hydra_overrides("a runner.x=1 +runner.x=2 'runner.y=3' actor.z=4") == {
        "runner.x": "2",
        "runner.y": "3",
    }
    manifest = {"checkpoint": {"root": "/data/rlinf/other"}}
    loc = location.locate({"job": job(SCRIPT, HOST_MOUNT, HOST_VOL)}, manifest=manifest)
    assert loc["container_root"] == "/data/rlinf/logs/demo/checkpoints" and loc["source"].startswith("runner.logger")
    loc = location.locate({"job": job("python t.py", HOST_MOUNT, HOST_VOL)}, manifest=manifest)
    assert loc["container_root"] == "/data/rlinf/other" and loc["source"].startswith("launch manifest")


# ---------------------------------------------------------------- verify
LOG = """Starting Ray head
Cluster is ready: 3/3 nodes alive.
Executing run script...
Resuming training from checkpoint directory /data/rlinf/logs/demo/checkpoints/global_step_6.
Global Step: 7/100
"""


def test_log_report_names_seen_missing_and_failures():
    r = verify.log_report(
        LOG, ["Cluster is ready", "Executing run script", "never"], ["Traceback", "Ray cluster check failed"]
    )
    assert r["seen"] == ["Cluster is ready", "Executing run script"] and r["missing"] == ["never"] and not r["ok"]
    r2 = verify.log_report(LOG + "Traceback (most recent call last):\n", ["Cluster is ready"], ["Traceback"])
    assert r2["failures"][0]["line"].startswith("Traceback") and not r2["ok"]


def test_jmespath_signal_over_live_objects():
    live = {"pods": [{"status": {"phase": "Running"}}, {"status": {"phase": "Running"}}]}
    r = verify.log_report("", ["jmespath: length(pods[?status.phase=='Running']) == `2`"], [], live=live)
    assert r["ok"]
    r = verify.log_report("", ["jmespath: length(pods[?status.phase=='Pending']) == `1`"], [], live=live)
    assert r["missing"] and not r["ok"]


def test_resume_report_exact_dir_and_next_step():
    ok = verify.resume_report(LOG, "/data/rlinf/logs/demo/checkpoints/global_step_6", 6)
    assert ok["ok"] and ok["first_step"] == 7
    wrong = verify.resume_report(LOG, "/data/rlinf/logs/demo/checkpoints/global_step_3", 3)
    assert {f["id"] for f in wrong["findings"]} == {"resume-wrong-dir", "resume-step-mismatch"}
    scratch = verify.resume_report("Training from scratch\nGlobal Step: 1/9\n", "/c/global_step_6", 6)
    assert {"resume-line-missing", "resume-from-scratch", "resume-step-mismatch"} <= {
        f["id"] for f in scratch["findings"]
    }


def test_job_state_separates_submitted_and_running():
    j = job(SCRIPT, HOST_MOUNT, HOST_VOL)
    tasks = [
        {"metadata": {"name": "demo-actor", "namespace": "rlark-a100"}, "status": {"phase": "Running"}},
        {"metadata": {"name": "demo-rollout", "namespace": "rlark-a100"}, "status": {"phase": "Pending"}},
    ]
    proof = {
        "tasks": [
            {"name": "actor", "cluster": "rlark-a100", "matches": [{"name": "a100-01"}]},
            {"name": "rollout", "cluster": "rlark-a100", "matches": [{"name": "a100-02"}, {"name": "a100-03"}]},
        ]
    }
    pods = [pod("demo-actor", "demo-actor-0", "a100-01"), pod("demo-rollout", "demo-rollout-0", "a100-02")]
    st = verify.job_state({"job": j, "tasks": tasks, "pods": pods}, proof)
    assert st["submitted"] and not st["running"]
    pods.append(pod("demo-rollout", "demo-rollout-1", "h100-01"))
    tasks[1]["status"]["phase"] = "Running"
    st = verify.job_state({"job": j, "tasks": tasks, "pods": pods}, proof)
    assert not st["running"] or any(f["id"] == "verify-pod-off-node" for f in st["findings"])
    assert any(f["id"] == "verify-pod-off-node" and "h100-01" in f["message"] for f in st["findings"])
    missing = verify.job_state({}, proof, "demo")
    assert not missing["submitted"] and missing["findings"][0]["id"] == "verify-job-missing"


def test_job_state_is_not_running_while_a_task_has_fewer_pods_than_replicas():
    """RLark's Job reads Running as soon as one Task is; the verdict counts every Task's Pod CRs (issue 31)."""
    j = job(SCRIPT, HOST_MOUNT, HOST_VOL)
    j["status"] = {"phase": "Running", "tasks": [{"name": "actor", "phase": "Running"}, {"name": "rollout"}]}
    actor = {"metadata": {"name": "demo-actor", "namespace": "rlark-a100"}, "status": {"phase": "Running"}}
    rollout = {"metadata": {"name": "demo-rollout", "namespace": "rlark-a100"}}  # the agent has not reached it
    pods = [pod("demo-actor", "demo-actor-0", "a100-01")]
    st = verify.job_state({"job": j, "tasks": [actor, rollout], "pods": pods})
    assert not st["running"] and st["submitted"]
    assert st["observed"]["rollout"] == {
        "namespace": "rlark-a100",
        "phase": None,
        "replicas": 2,
        "pods": 0,
        "pod_phases": [],
        "nodes": [],
    }
    assert [f["message"] for f in st["findings"] if f["id"] == "verify-pod-count"] == [
        "Task demo-rollout has 0 Pod CR(s), expected 2."
    ]
    # a Task phase that still reads Running (written before a pod went) does not make up for a missing pod
    rollout["status"] = {"phase": "Running"}
    pods.append(pod("demo-rollout", "demo-rollout-0", "a100-02"))
    assert not verify.job_state({"job": j, "tasks": [actor, rollout], "pods": pods})["running"]
    pods.append(pod("demo-rollout", "demo-rollout-1", "a100-03"))
    assert verify.job_state({"job": j, "tasks": [actor, rollout], "pods": pods})["running"]


# ---------------------------------------------------------------- gate view, stop record, summary
def test_gate_summary_requires_the_newest_step_complete():
    partial = {
        "complete": True,
        "step": 6,
        "newest_step": 9,
        "latest_complete_step": 6,
        "steps": [
            {"step": 6, "verdict": "complete"},
            {"step": 9, "verdict": "incomplete", "reasons": ["write too recent"]},
        ],
    }
    v = gate_summary.summarize(partial)
    assert v["complete"] and not v["newest_complete"] and "global_step_9" in v["reason"] and "too recent" in v["reason"]
    done = gate_summary.summarize({"complete": True, "step": 9, "newest_step": 9, "latest_complete_step": 9})
    assert done["newest_complete"] and not done["reason"]
    assert not gate_summary.summarize({"skipped": True})["ran"]


def test_stop_record_items_and_unconfirmed_digest():
    res = {"job": job(SCRIPT, HOST_MOUNT, HOST_VOL, image="reg/x:v1")}
    loc = location.locate(dict(res, pods=[pod("demo-actor", "demo-actor-0", "a100-01")]))
    manifest = {
        "code": {"repo": "r", "ref": "abc"},
        "data": {"location": "/d", "version": "v3"},
        "hydra": {"config_name": "c"},
    }
    rec = stop_record.build(res, manifest, loc, {"step": 6, "backend": "fsdp", "checkpoint": "/x/global_step_6"})
    assert rec["backend"] == "fsdp" and rec["global_step"] == 6 and rec["rlinf_code"]["ref"] == "abc"
    assert rec["data_version"]["version"] == "v3" and rec["images"][0]["digest_status"] == stop_record.NOT_CONFIRMED
    assert rec["checkpoint"]["container_path"].endswith("checkpoints/global_step_6")
    assert rec["checkpoint"]["stored_at"].startswith("node a100-01:")
    assert rec["final_config"]["run_script_overrides"]["runner.logger.experiment_name"] == "demo"
    assert stop_record.build(res)["rlinf_code"].startswith("not recorded")


def test_stop_summary_counts_an_unconfirmed_stop_as_failed():
    out = stop_summary.stop_summary([{"job": "a", "outcome": "stopped-unconfirmed", "reason": "API server lost"}])
    assert out["failed"] == ["a"] and not out["ok"] and out["counts"]["stopped-unconfirmed"] == 1
    assert "1 stopped-unconfirmed" in out["table"]
    assert out["outcome"] == "failed or unconfirmed: a" and out["stop_records"] == []
    done = stop_summary.stop_summary([{"job": "b", "outcome": "stopped", "record": "/r/b/1/stop.yml"}])
    assert done["outcome"] == "all stopped" and done["stop_records"] == ["/r/b/1/stop.yml"]


def test_stop_summary_table_and_exit_decision():
    out = stop_summary.stop_summary(
        [
            {"job": "b", "outcome": "refused", "reason": "newest checkpoint incomplete"},
            {"job": "a", "outcome": "stopped", "step": 6, "checkpoint": "/c/global_step_6"},
            {"job": "c", "outcome": "already stopped"},
        ]
    )
    assert out["refused"] == ["b"] and not out["ok"]
    zero = {"failed": 0, "stopped-unconfirmed": 0, "would stop": 0}
    assert out["counts"] == dict(zero, stopped=1, refused=1, **{"already stopped": 1})
    lines = out["table"].splitlines()
    assert lines[0].startswith("JOB") and lines[1].startswith("a ") and "incomplete" in lines[2]
