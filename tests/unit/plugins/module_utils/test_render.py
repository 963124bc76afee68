# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""render_job: the Job shape seed 001 prescribes, from the example records."""

import shlex

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import render
from migration_inputs import example, role


@pytest.mark.parametrize(
    "reference,expected",
    [("registry.example.com:5000/team/rlinf:v1", ("registry.example.com:5000/team/rlinf", "v1", None)),
     ("rlinf/rlinf", ("rlinf/rlinf", None, None)),
     ("host:5000/r@sha256:" + "a" * 64, ("host:5000/r", None, "sha256:" + "a" * 64)),
     ("r:tag@sha256:" + "b" * 64, ("r", "tag", "sha256:" + "b" * 64))],
)  # fmt: skip
def test_split_reference(reference, expected):
    assert render.split_reference(reference) == expected


def test_pinned_image_needs_a_well_formed_digest():
    assert render.pinned_image({"reference": "r:1", "digest": "sha256:" + "c" * 64}) == "r@sha256:" + "c" * 64
    assert render.pinned_image({"reference": "r:1"}) is None
    assert render.pinned_image({"reference": "r:1", "digest": "sha256:zz"}) is None


def test_sandbox_job_shape():
    manifest, profile = example("sandbox")
    role(manifest, "rollout")["head"] = False
    manifest["roles"].reverse()  # head listed last in the manifest still renders first
    job = render.render_job(manifest, profile)
    head, worker = job["spec"]["tasks"]
    assert (head["name"], head["head"], worker["head"]) == ("actor", True, False)
    assert "runScript" not in worker
    for task in (head, worker):
        assert task["agentType"] == "Kubernetes"
        workload = task["kubernetes"]["workload"]
        assert workload["kind"] == "StatefulSet" and list(workload["template"]) == ["spec"]
        main = workload["template"]["spec"]["containers"][0]
        assert main["name"] == "main" and "@sha256:" in main["image"]
        assert main["resources"]["requests"] == main["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert head["kubernetes"]["workload"]["replicas"] == 1 and worker["kubernetes"]["workload"]["replicas"] == 2
    lines = head["runScript"].splitlines()
    assert lines[0] == "cd /workspace/RLinf"
    words = shlex.split(lines[-1])
    assert words[:2] == ["python", "examples/embodiment/train_embodied_agent.py"]
    assert "runner.logger.log_path=/data/rlinf/logs" in words and "runner.save_interval=3" in words
    volume = head["kubernetes"]["workload"]["template"]["spec"]["volumes"][0]
    assert volume == {"name": "rlinf-data", "hostPath": {"path": "/data/rlinf", "type": "Directory"}}
    env = {e["name"]: e["value"] for e in head["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"]}
    assert env["RLARK_TASK_ROLE"] == "Actor" and env["SIM_RLINF_WORLD_SIZE"] == "2"
    assert "domain" not in job["spec"] and "sshPublicKey" not in job["spec"]


def test_multi_role_object_storage_domain_and_devices():
    job = render.render_job(*example("multi-role"))
    assert job["spec"]["domain"] == "rlark-mesh"
    actor, _rollout, env_task = job["spec"]["tasks"]
    workload = actor["kubernetes"]["workload"]
    assert workload["pvcStorageMap"] == {"pvc-arm-ppo-actor-ckpt": "rlark-s3"}
    assert workload["template"]["spec"]["volumes"][0]["persistentVolumeClaim"] == {
        "claimName": "pvc-arm-ppo-actor-ckpt"
    }
    assert actor["tensorBoardDir"] == "/mnt/ckpt/logs/arm-ppo/tensorboard"
    resources = env_task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"rlinf.io/device-arm": "1"}, "limits": {"rlinf.io/device-arm": "1"}}
    assert env_task["nodeSelector"] == {"kubernetes.io/hostname": "robot-01"}


def test_cpu_memory_only_with_approved_path_and_secret_refs():
    manifest, profile = example("sandbox")
    role(manifest, "actor")["resources"].update({"cpu": "16", "memory": "64Gi"})
    role(manifest, "actor")["env"].append({"name": "WANDB_API_KEY", "secret": {"name": "wandb", "key": "api-key"}})
    main = render.render_job(manifest, profile)["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]
    main = main["containers"][0]
    assert "cpu" not in main["resources"]["requests"]
    ref = next(e for e in main["env"] if e["name"] == "WANDB_API_KEY")
    assert ref == {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}}
    profile["compute_requests"] = {"approved": True, "path": "rlark.ops rlark_job"}
    main = render.render_job(manifest, profile)["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]
    resources = main["containers"][0]["resources"]
    assert resources["requests"] == {"nvidia.com/gpu": "8", "cpu": "16", "memory": "64Gi"}
    assert resources["limits"] == {"nvidia.com/gpu": "8"}


def test_volume_names_derived_and_unique():
    used = set()
    assert render.volume_name({"target": "/data/RLinf_ckpt"}, used) == "data-rlinf-ckpt"
    assert render.volume_name({"target": "/data/rlinf-ckpt"}, used) == "data-rlinf-ckpt-2"
    assert render.volume_name({"target": "/" + "x" * 80}, used) == "x" * 63
