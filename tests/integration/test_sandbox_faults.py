"""The sandbox survives its own faults (issue 24 item 6): a SIGKILLed component comes back on the kept data.

`sandbox.kill(component)` and `sandbox.restart()` (tests/integration/sandbox_faults.py) are what other
fault tests use; here they are checked: the same Job (same uid), Tasks, Pod CRs, Nodes and S3 objects
after the restart, and rlark-sim going on with its reconciling (`status`, `up --fresh` and `down` on a
second sandbox: test_sandbox_lifecycle.py). Objects are read with the `kubernetes` package and boto3, not
with the collection.
"""

import json
import os

import job_test_support as support
import pytest
import sandbox_faults
from independent import custom_objects
from job_test_support import demo_job, unique, wait_until
from kubernetes import client, config
from s3_support import s3_client
from sandbox_nodes import FLEET_SIZE

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"
cleanup = support.cleanup
# Which components die together; rlark-sim outlives every kill it is not part of.
KILLS = {
    "apiserver": ["apiserver"],
    "etcd": ["etcd"],
    "everything": ["sim", "apiserver", "data-plane-a100", "s3", "etcd"],
}


def uids(items):
    return {(o["metadata"].get("namespace"), o["metadata"]["name"]): o["metadata"]["uid"] for o in items}


def listed(kube, plural, selector=None):
    return kube.list_cluster_custom_object(GROUP, VERSION, plural, label_selector=selector)["items"]


def job_pod_crs(kube, name):
    pods = listed(kube, "pods")
    return [p for p in pods if (p["metadata"].get("labels") or {}).get("rlark.io/task-name", "").startswith(name + "-")]


def running(kube, name):
    """The Job's Tasks and Pod CRs once its three Tasks are Running with their four pods, else None."""
    tasks = listed(kube, "tasks", "rlinf.io/job=" + name)
    pods = job_pod_crs(kube, name)
    phases = [(t.get("status") or {}).get("phase") for t in tasks]
    return (tasks, pods) if phases == ["Running"] * 3 and len(pods) == 4 else None


def data_plane_pod(sandbox, pod):
    """The a100 data-plane apiserver's core/v1 pod ``pod`` of namespace rlark-system, or None."""
    core = client.CoreV1Api(config.new_client_from_config(config_file=sandbox.data_plane_kubeconfigs["a100"]))
    try:
        return core.read_namespaced_pod(pod, "rlark-system")
    except client.ApiException as exc:
        assert exc.status == 404, exc
        return None


def recorded_pid(sandbox, component):
    with open(os.path.join(sandbox.dir, "state.json")) as fh:
        return json.load(fh)["pids"][component]["pid"]


def stop_is_processed(kube, name):
    """rlark-sim acts on a stop: Tasks scaled to 0 and every Pod CR gone (after its grace period)."""
    kube.patch_cluster_custom_object(GROUP, VERSION, "jobs", name, {"spec": {"stopped": True}})
    wait_until(lambda: not job_pod_crs(kube, name), timeout=120)


@pytest.mark.parametrize("killed", list(KILLS))
def test_a_job_survives_killed_components_and_rlark_sim_goes_on(sandbox, cleanup, killed):
    kube = custom_objects(sandbox.kubeconfig)
    name = unique("fault")
    cleanup.append(name)
    job_uid = kube.create_cluster_custom_object(GROUP, VERSION, "jobs", demo_job(name))["metadata"]["uid"]
    tasks, pods = wait_until(lambda: running(kube, name), timeout=180)
    head_pod = wait_until(lambda: data_plane_pod(sandbox, name + "-actor-0"), timeout=60)
    nodes = uids(listed(kube, "nodes"))
    sim_pid = recorded_pid(sandbox, "rlark-sim")

    for component in KILLS[killed]:
        sandbox.kill(component)
    dead = {n for n, ok in sandbox.alive().items() if not ok}
    assert dead == {sandbox_faults.ALIASES.get(c, c) for c in KILLS[killed]}
    out = sandbox.restart()
    assert "restarted " in out and "starting a fresh one" not in out, out

    assert all(sandbox.alive().values()), sandbox.alive()
    kube = custom_objects(sandbox.kubeconfig)  # a new connection; the old one died with the apiserver
    assert kube.get_cluster_custom_object(GROUP, VERSION, "jobs", name)["metadata"]["uid"] == job_uid
    assert uids(listed(kube, "tasks", "rlinf.io/job=" + name)) == uids(tasks)
    assert uids(job_pod_crs(kube, name)) == uids(pods)
    assert uids(listed(kube, "nodes")) == nodes and len(nodes) == FLEET_SIZE
    assert data_plane_pod(sandbox, name + "-actor-0").metadata.uid == head_pod.metadata.uid
    if "sim" not in KILLS[killed]:
        assert recorded_pid(sandbox, "rlark-sim") == sim_pid, "rlark-sim was restarted"
    stop_is_processed(kube, name)


def test_a_stop_sent_just_before_an_apiserver_kill_is_carried_out(sandbox, cleanup):
    """The shape fault tests of the stop path use: stop patch, SIGKILL, restart; rlark-sim finishes the stop."""
    kube = custom_objects(sandbox.kubeconfig)
    name = unique("fault")
    cleanup.append(name)
    kube.create_cluster_custom_object(GROUP, VERSION, "jobs", demo_job(name))
    wait_until(lambda: running(kube, name), timeout=180)
    kube.patch_cluster_custom_object(GROUP, VERSION, "jobs", name, {"spec": {"stopped": True}})
    sandbox.kill("apiserver")
    sandbox.restart()
    kube = custom_objects(sandbox.kubeconfig)
    assert kube.get_cluster_custom_object(GROUP, VERSION, "jobs", name)["spec"]["stopped"] is True
    wait_until(lambda: not job_pod_crs(kube, name), timeout=120)
    tasks = listed(kube, "tasks", "rlinf.io/job=" + name)
    assert [t["spec"]["kubernetes"]["workload"]["replicas"] for t in tasks] == [0, 0, 0]


def test_s3_objects_survive_a_killed_s3_server(sandbox):
    s3 = s3_client(sandbox)
    key = "faults/%s/object.bin" % unique("s3")
    body = os.urandom(4096)
    etag = s3.put_object(Bucket=sandbox.s3_bucket, Key=key, Body=body)["ETag"]
    try:
        sandbox.kill("s3")
        assert sandbox.alive()["s3"] is False
        sandbox.restart()
        got = s3.get_object(Bucket=sandbox.s3_bucket, Key=key)  # same client: same endpoint and keys
        assert got["Body"].read() == body and got["ETag"] == etag
    finally:
        s3.delete_object(Bucket=sandbox.s3_bucket, Key=key)
