"""The gate against the sandbox trainer (rlark-sim): during a save, after it, and a save killed by stop.

Jobs are created directly with the kubernetes client (hostPath on a node, or an rlark-s3 PVC), with
short SIM_* timings, and deleted at the end. The gate runs as the core on the node directory /
bucket prefix, and once through ansible as the rlark_ckpt_gate module.
"""

import os
import secrets
import time

import pytest
import sim_support
from ckpt_gate_support import LocalSource, S3Source, run_gate
from helpers import run_ansible_module, wait_until
from independent import custom_objects
from kubernetes import client

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"


@pytest.fixture(scope="module")
def api(sandbox):
    return custom_objects(sandbox.kubeconfig)


@pytest.fixture
def make_job(api):
    created = []

    def make(prefix, node, run_script, env, volumes, mounts, storage_map=None):
        name = "%s-%s" % (prefix, secrets.token_hex(3))
        container = {
            "name": "main",
            "image": "rlinf/rlinf:sandbox",
            "env": [{"name": k, "value": str(v)} for k, v in env.items()],
            "volumeMounts": mounts,
        }
        workload = {
            "kind": "StatefulSet",
            "replicas": 1,
            "template": {"spec": {"containers": [container], "volumes": volumes}},
        }
        if storage_map:
            workload["pvcStorageMap"] = storage_map
        task = {
            "name": "actor",
            "role": "Actor",
            "agentType": "Kubernetes",
            "head": True,
            "nodeSelector": {"kubernetes.io/hostname": node},
            "runScript": run_script,
            "kubernetes": {"workload": workload},
        }
        body = {"apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "Job", "metadata": {"name": name}}
        body["spec"] = {"tasks": [task]}
        api.create_cluster_custom_object(GROUP, VERSION, "jobs", body)
        created.append(name)
        return name

    yield make
    for name in created:
        try:
            api.delete_cluster_custom_object(GROUP, VERSION, "jobs", name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise


def wait_for(predicate, timeout=40, interval=0.05, what="condition"):
    return wait_until(predicate, timeout, interval, what)


def newest_write(tree):
    return max(os.stat(os.path.join(d, f)).st_mtime for d, _dirs, files in os.walk(tree) for f in files)


def wait_quiet(tree, seconds):
    """Until nothing under ``tree`` was written for ``seconds``: the gate's quiet period is then over."""
    wait_for(lambda: time.time() - newest_write(tree) > seconds, timeout=seconds + 60, what="%s quiet" % tree)


def log_of(sandbox, job):
    path = os.path.join(sandbox.logs_dir, job, job + "-actor-0.log")
    if not os.path.exists(path):
        return ""
    with open(path) as fh:
        return fh.read()


def pods_of(api, job):
    return api.list_cluster_custom_object(GROUP, VERSION, "pods", label_selector="rlark.io/task-name=%s-actor" % job)[
        "items"
    ]


HOSTPATH = ([{"name": "data", "hostPath": {"path": "/data/rlinf"}}], [{"name": "data", "mountPath": "/data/rlinf"}])


def embodied(exp, save_interval=2):
    return (
        "cd /workspace && python examples/embodiment/train_embodied_agent.py --config-name maniskill "
        "runner.logger.log_path=/data/rlinf/logs runner.logger.experiment_name=%s "
        "runner.save_interval=%d runner.max_steps=200" % (exp, save_interval)
    )


def sim_env(save_seconds, **extra):
    env = {"SIM_STEP_SECONDS": "0.3", "SIM_SAVE_SECONDS": str(save_seconds), "SIM_RLINF_WORLD_SIZE": "2"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def test_during_a_save_then_after_it(sandbox, api, make_job):
    exp = "gate-" + secrets.token_hex(3)
    job = make_job("gatesave", "a100-02", embodied(exp), sim_env(4), *HOSTPATH)
    root = os.path.join(sandbox.nodes_dir, "a100-02", "data/rlinf/logs", exp, "checkpoints")
    dcp = os.path.join(root, "global_step_2", "actor", "dcp_checkpoint")
    wait_for(lambda: os.path.exists(os.path.join(dcp, "__0_0.distcp")), what="the first shard of step 2")

    during = run_gate(LocalSource(root), {"step": 2, "quiet_seconds": 30})
    ids = {p["id"] for p in during["findings"]}
    assert not during["complete"] and during["step"] == 2
    assert "write-too-recent" in ids
    assert "actor/model_state_dict/full_weights.pt" in during["missing"]
    # even with no quiet period the missing commit marker keeps it incomplete
    no_quiet = run_gate(LocalSource(root), {"step": 2, "quiet_seconds": 0, "actor_world_size": 2})
    assert not no_quiet["complete"] and no_quiet["missing"]

    wait_for(lambda: "Global Step: 2/200" in log_of(sandbox, job), timeout=30, what="save 2 finished")
    wait_quiet(os.path.join(root, "global_step_2"), 1)
    after = run_gate(LocalSource(root), {"step": 2, "quiet_seconds": 1, "actor_world_size": 2})
    assert after["complete"], (after["missing"], after["findings"])
    assert after["runner"] == "embodied" and after["backend"] == "fsdp" and after["missing"] == []
    latest = run_gate(LocalSource(root), {"quiet_seconds": 1})
    assert latest["complete"] and latest["step"] >= 2 and latest["latest_complete_step"] == latest["step"]


def test_save_killed_by_stop_is_incomplete_for_good(sandbox, api, make_job):
    exp = "gatekill-" + secrets.token_hex(3)
    job = make_job("gatekill", "a100-03", embodied(exp), sim_env(8), *HOSTPATH)
    root = os.path.join(sandbox.nodes_dir, "a100-03", "data/rlinf/logs", exp, "checkpoints")
    dcp = os.path.join(root, "global_step_2", "actor", "dcp_checkpoint")
    wait_for(lambda: os.path.exists(os.path.join(dcp, "__0_0.distcp")), what="the first shard of step 2")
    api.patch_cluster_custom_object(GROUP, VERSION, "jobs", job, {"spec": {"stopped": True}})
    wait_for(lambda: not pods_of(api, job), timeout=30, interval=0.3, what="pods gone")
    sim_support.wait_trainer_gone(sandbox, job + "-actor-0", "killed")
    wait_quiet(root, 1)

    result = run_gate(LocalSource(root), {"quiet_seconds": 1, "actor_world_size": 2})
    assert not result["complete"] and result["step"] == 2 and result["latest_complete_step"] is None
    assert "actor/dcp_checkpoint/.metadata" in result["missing"]
    assert "actor/model_state_dict/full_weights.pt" in result["missing"]
    assert not [p for p in result["findings"] if p["id"] == "write-too-recent"]

    # through ansible: the task fails with one paragraph, and keeps failing (nothing writes any more); the
    # gate runs in the worker on localhost and as a module with a task environment, with the same verdict
    for keywords in (None, {"environment": {"RLARK_TEST_VIA": "module"}}):
        out = run_ansible_module(
            "rlark_ckpt_gate", {"path": root, "quiet_seconds": 1}, env=sandbox.env(), keywords=keywords
        )
        assert ("invocation" in out) is bool(keywords), "a module run reports its invocation, the worker run not"
        assert out.get("failed") and out["complete"] is False
        assert "\n" not in out["msg"] and "global_step_2" in out["msg"] and ".metadata" in out["msg"]
        assert out["changed"] is False


def test_megatron_reasoning_in_object_storage(sandbox, api, make_job):
    exp = "gatemeg-" + secrets.token_hex(3)
    claim = "ckpt-" + exp
    env = sim_env(
        2, SIM_RLINF_RUNNER="reasoning", SIM_RLINF_BACKEND="megatron", SIM_RLINF_TP=2, SIM_RLINF_CRITIC="true"
    )
    script = (
        "python main_grpo.py runner.output_dir=/ckpt/out runner.experiment_name=%s "
        "runner.save_interval=2 runner.max_steps=3" % exp
    )
    make_job(
        "gatemeg",
        "a100-01",
        script,
        env,
        [{"name": "ckpt", "persistentVolumeClaim": {"claimName": claim}}],
        [{"name": "ckpt", "mountPath": "/ckpt"}],
        storage_map={claim: "rlark-s3"},
    )
    prefix = "out/%s/checkpoints" % exp
    src_args = dict(
        endpoint_url=sandbox.s3_endpoint, access_key=sandbox.s3_access_key, secret_key=sandbox.s3_secret_key
    )

    def gate(**opts):
        return run_gate(S3Source(sandbox.s3_bucket, prefix, **src_args), opts)

    def step3_done():
        try:
            r = gate(step=3, quiet_seconds=0)
        except Exception:
            return None
        return r if r["complete"] else None

    # max_steps=3 saves at 2 and at 3 (step == max_steps); wait for the last one to finish
    wait_for(step3_done, timeout=60, interval=0.5, what="global_step_3 complete in S3")
    result = gate(quiet_seconds=0)
    assert result["complete"] and result["step"] == 3
    assert result["runner"] == "reasoning" and result["backend"] == "megatron"
    assert result["checkpoint"] == "s3://%s/%s/global_step_3/" % (sandbox.s3_bucket, prefix)
    assert [s["verdict"] for s in result["steps"]] == ["complete"] and result["steps_found"] == 2  # newest first
    full = gate(quiet_seconds=0, full_report=True)
    assert [s["verdict"] for s in full["steps"]] == ["unverified", "complete"]
    assert (full["complete"], full["step"], full["missing"]) == (True, 3, [])

    via_ansible = run_ansible_module(
        "rlark_ckpt_gate",
        {"s3": {"bucket": sandbox.s3_bucket, "prefix": prefix}, "quiet_seconds": 0, "step": "2", "tensor_parallel": 2},
        env=sandbox.env(),
    )
    assert not via_ansible.get("failed"), via_ansible.get("msg")
    assert via_ansible["complete"] and via_ansible["step"] == 2 and via_ansible["files"] > 10
