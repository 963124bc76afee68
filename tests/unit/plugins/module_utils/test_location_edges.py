# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint/location.py at its edges: where a Job's checkpoints live, and why a stop refuses (issue 26)."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import location

SCRIPT = "python train.py runner.logger.log_path=/data/rlinf/logs runner.logger.experiment_name=demo"
ROOT = "/data/rlinf/logs/demo/checkpoints"


def job(script=SCRIPT, mounts=(), volumes=(), storage_map=None):
    workload = {"template": {"spec": {"containers": [{"name": "main", "volumeMounts": list(mounts)}]}}}
    workload["template"]["spec"]["volumes"] = list(volumes)
    if storage_map is not None:
        workload["pvcStorageMap"] = storage_map
    task = {"name": "actor", "head": True, "runScript": script, "kubernetes": {"workload": workload}}
    return {"metadata": {"name": "demo"}, "spec": {"tasks": [task]}}


def pod(task, local, node):
    labels = {"rlark.io/task-name": task}
    if local is not None:
        labels["rlark.io/local-pod-name"] = local
    return {"metadata": {"labels": labels}, "status": {"node": node}}


def task(name, observed):
    return {"metadata": {"name": name}, "status": {"observedNodes": observed}}


HOST = ({"name": "data", "mountPath": "/data"},), ({"name": "data", "hostPath": {"path": "/srv/data"}},)


# ---------------------------------------------------------------- where the root comes from
@pytest.mark.parametrize("half", ["runner.logger.log_path=/data/logs", "runner.logger.experiment_name=e1"])
def test_half_of_the_logger_pair_is_no_root(half):
    assert location.checkpoint_root(job("python t.py " + half))[0] is None
    script = "python t.py %s runner.output_dir=/data/out runner.experiment_name=e2" % half
    assert location.checkpoint_root(job(script))[:2] == ("/data/out/e2/checkpoints", "runner.output_dir overrides")


def test_output_dir_without_its_experiment_name_is_no_root():
    script = "python t.py runner.output_dir=/data/out"
    assert location.checkpoint_root(job(script))[:2] == (
        None,
        "no checkpoint location in the run script or the launch manifest",
    )
    manifest = {"checkpoint": {"root": "/data/m/"}}
    assert location.checkpoint_root(job(script), manifest)[:2] == ("/data/m", "launch manifest checkpoint.root")
    script = "python t.py runner.experiment_name=e1"
    assert location.checkpoint_root(job(script), manifest)[:2] == ("/data/m", "launch manifest checkpoint.root")


# ---------------------------------------------------------------- the head pod's node
@pytest.mark.parametrize("other", ["demo-a", "demo-rollout"])  # sorts before and after "demo-actor"
def test_a_pod_of_another_task_is_not_the_head(other):
    assert location.head_pod_node(job(), [], [pod(other, other + "-0", "n9")]) is None
    pods = [pod(other, other + "-0", "n9"), pod("demo-actor", "demo-actor-0", "n1")]
    assert location.head_pod_node(job(), [], pods) == "n1"


def test_pod_0_wins_over_later_pods_and_a_pod_without_its_local_name_is_read():
    pods = [pod("demo-actor", "demo-actor-1", "a-node"), pod("demo-actor", "demo-actor-0", "b-node")]
    assert location.head_pod_node(job(), [], pods) == "b-node"
    assert location.head_pod_node(job(), [], [pod("demo-actor", None, "n3")]) == "n3"


def test_without_pods_the_head_tasks_first_observed_node():
    tasks = [task("demo-rollout", ["x"]), task("demo-a", ["y"]), task("demo-actor", ["n1", "n2"])]
    assert location.head_pod_node(job(), tasks, []) == "n1"
    assert location.head_pod_node(job(), [task("demo-rollout", ["x"]), task("demo-a", ["y"])], []) is None
    assert location.head_pod_node(job(), [task("demo-actor", [])], []) is None


# ---------------------------------------------------------------- which mount holds the root
def test_a_root_that_is_the_mount_path_itself():
    script = "python t.py runner.logger.log_path=/ runner.logger.experiment_name=data"
    mounts = ({"name": "data", "mountPath": "/data/checkpoints"},)
    loc = location.locate({"job": job(script, mounts, HOST[1]), "pods": [pod("demo-actor", "demo-actor-0", "n1")]})
    assert (loc["ok"], loc["kind"], loc["host_path"]) == (True, "hostPath", "/srv/data")


@pytest.mark.parametrize("mount_path", ["/data/zz", "/data/a", "/data/rlinf/logs/demo/checkpoints2"])
def test_a_mount_beside_the_root_does_not_hold_it(mount_path):
    # "/data/zz" sorts after the root, "/data/a" before it, the last one starts with it: none holds it.
    loc = location.locate({"job": job(SCRIPT, [{"name": "data", "mountPath": mount_path}], HOST[1])})
    assert (loc["ok"], loc["kind"], loc["volume"]) == (False, "container", None)
    assert loc["reason"] == (
        "Checkpoint root %s is on the container filesystem (no volume mount covers it): it disappears with the pod."
        % ROOT
    )


@pytest.mark.parametrize("order", [1, -1])
def test_the_deepest_mount_holds_the_root_whatever_the_order(order):
    mounts = [{"name": "shallow", "mountPath": "/data"}, {"name": "deep", "mountPath": "/data/rlinf/"}][::order]
    volumes = [{"name": "shallow", "hostPath": {"path": "/a"}}, {"name": "deep", "hostPath": {"path": "/b"}}]
    loc = location.locate({"job": job(SCRIPT, mounts, volumes), "pods": [pod("demo-actor", "demo-actor-0", "n1")]})
    assert (loc["volume"], loc["host_path"]) == ("deep", "/b/logs/demo/checkpoints")


def test_the_same_mount_point_twice_is_the_last_one():
    mounts = [{"name": "first", "mountPath": "/data"}, {"name": "second", "mountPath": "/data/"}]
    volumes = [{"name": "first", "hostPath": {"path": "/a"}}, {"name": "second", "hostPath": {"path": "/b"}}]
    loc = location.locate({"job": job(SCRIPT, mounts, volumes), "pods": [pod("demo-actor", "demo-actor-0", "n1")]})
    assert (loc["volume"], loc["host_path"]) == ("second", "/b/rlinf/logs/demo/checkpoints")


def test_sub_path_of_the_mount_is_part_of_the_host_path():
    mounts = ({"name": "data", "mountPath": "/data", "subPath": "team"},)
    pods = [pod("demo-actor", "demo-actor-0", "n1")]
    loc = location.locate({"job": job(SCRIPT, mounts, HOST[1]), "pods": pods})
    assert loc["host_path"] == "/srv/data/team/rlinf/logs/demo/checkpoints"
    mounts = ({"name": "data", "mountPath": ROOT, "subPath": "team"},)
    loc = location.locate({"job": job(SCRIPT, mounts, HOST[1]), "pods": pods})
    assert loc["host_path"] == "/srv/data/team"


def test_host_path_without_a_head_pod_names_the_root():
    loc = location.locate({"job": job(SCRIPT, *HOST)})
    assert (loc["ok"], loc["kind"], loc["node"], loc["host_path"]) == (
        False,
        "hostPath",
        None,
        "/srv/data/rlinf/logs/demo/checkpoints",
    )
    assert loc["reason"] == "Checkpoint root %s is a hostPath, but no head pod shows which node holds it." % ROOT


def test_a_volume_that_is_neither_host_path_nor_claim_is_the_pods():
    loc = location.locate({"job": job(SCRIPT, HOST[0], [{"name": "data", "emptyDir": {}}])})
    assert (loc["ok"], loc["kind"], loc["volume"]) == (False, "container", "data")
    assert loc["reason"] == "Checkpoint root %s is on volume data, which does not survive the pod." % ROOT


# ---------------------------------------------------------------- claims
S3 = {"rlark-s3": {"bucket": "checkpoints", "prefix": "/team/"}}
CLAIM_MOUNT = ({"name": "ckpt", "mountPath": "/data"},)


def test_a_claim_without_its_name_is_the_agents_claim():
    volumes = [{"name": "ckpt", "persistentVolumeClaim": {}}]
    loc = location.locate(
        {"job": job(SCRIPT, CLAIM_MOUNT, volumes, {"pvc-demo-actor-ckpt": "rlark-s3"})}, None, None, S3
    )
    assert (loc["ok"], loc["kind"]) == (True, "s3")
    assert loc["s3"] == {
        "bucket": "checkpoints",
        "prefix": "team/rlinf/logs/demo/checkpoints",
        "storage_class": "rlark-s3",
    }
    # A "" key is no claim's class.
    loc = location.locate({"job": job(SCRIPT, CLAIM_MOUNT, volumes, {"": "rlark-s3"})}, None, None, S3)
    assert (loc["ok"], loc["kind"]) == (False, "pvc")


def test_a_claim_of_another_class_names_its_class_or_the_default():
    volumes = [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "c1"}}]
    loc = location.locate({"job": job(SCRIPT, CLAIM_MOUNT, volumes, {"c1": "local-path"})}, None, None, S3)
    assert (loc["ok"], loc["kind"], loc["volume"]) == (False, "pvc", "ckpt")
    assert loc["reason"] == (
        "Checkpoint root %s is on claim c1 (StorageClass local-path), which is not a configured object storage "
        "class: it cannot be inspected from here and is deleted with the Job." % ROOT
    )
    loc = location.locate({"job": job(SCRIPT, CLAIM_MOUNT, volumes)}, None, None, S3)
    assert "on claim c1 (StorageClass default)," in loc["reason"]


def test_no_root_is_an_unknown_location_that_says_why():
    loc = location.locate({"job": job("python t.py", *HOST)})
    assert (loc["ok"], loc["kind"], loc["container_root"]) == (False, "unknown", None)
    assert loc["reason"] == (
        "The checkpoint directory is unknown: no checkpoint location in the run script or the launch manifest."
    )
