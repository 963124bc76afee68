"""The sandbox's data plane: pod logs through each cluster's real kube-apiserver, and RLark's gateway.

One Job for the module: its head Task on a100-01 prints > 20,000 lines (SIM_LOG_EXTRA_LINES), its
worker Task runs on h100-01, another cluster. Readers are independent of the collection: the
`kubernetes` package for objects, a plain HTTPS GET (kubeconfig token and CA) for raw log bytes, plain
file reads for the trainer's own output, urllib for the gateway.
"""

import base64
import http.client
import json
import os
import re
import secrets
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import urllib.request
from types import SimpleNamespace
from urllib.parse import urlencode, urlsplit

import pytest
import yaml
from helpers import ROOT
from independent import custom_objects
from job_test_support import wait_until
from kubernetes import client, config
from kubernetes.client.rest import ApiException

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"
NS = "rlark-system"
STEPS, EXTRA = 10, 2500
STAMP = re.compile(rb"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{9})Z (.*)$")


class LogReader:
    """GET .../pods/<pod>/log with the kubeconfig's token and CA: (status, raw bytes)."""

    def __init__(self, kubeconfig):
        with open(kubeconfig) as fh:
            doc = yaml.safe_load(fh)
        cluster = doc["clusters"][0]["cluster"]
        self.token = doc["users"][0]["user"]["token"]
        url = urlsplit(cluster["server"])
        with tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False) as ca:
            ca.write(base64.b64decode(cluster["certificate-authority-data"]))
        self.ctx = ssl.create_default_context(cafile=ca.name)
        os.unlink(ca.name)
        self.host, self.port = url.hostname, url.port

    def read(self, pod, **params):
        params.setdefault("container", "main")
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
        try:
            conn.request(
                "GET",
                "/api/v1/namespaces/%s/pods/%s/log?%s" % (NS, pod, urlencode(params)),
                headers={"Authorization": "Bearer " + self.token},
            )
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def text(self, pod, **params):
        status, body = self.read(pod, **params)
        assert status == 200, (status, body[:300])
        return body


def _task(name, node, head, env, script=""):
    env_list = [{"name": k, "value": v} for k, v in env.items()]
    container = {"name": "main", "image": "rlinf/rlinf:sandbox", "env": env_list}
    return {
        "name": name,
        "role": "Actor" if head else "Rollout",
        "agentType": "Kubernetes",
        "head": head,
        "nodeSelector": {"kubernetes.io/hostname": node},
        "runScript": script,
        "kubernetes": {
            "workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": {"containers": [container]}}}
        },
    }


@pytest.fixture(scope="module")
def crs(sandbox):
    return custom_objects(sandbox.kubeconfig)


@pytest.fixture(scope="module")
def job(sandbox, crs):
    """The Job's name and its head and worker log files; the head finished its 10 steps."""
    name = "dp-%s" % secrets.token_hex(3)
    head_env = {"SIM_STEP_SECONDS": "0.2", "SIM_RAY_CHECK_SECONDS": "1", "SIM_LOG_EXTRA_LINES": str(EXTRA)}
    script = "python train.py runner.max_steps=%d runner.save_interval=0" % STEPS
    body = {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"tasks": [_task("actor", "a100-01", True, head_env, script), _task("rollout", "h100-01", False, {})]},
    }
    crs.create_cluster_custom_object(GROUP, VERSION, "jobs", body)
    head = os.path.join(sandbox.logs_dir, name, "%s-actor-0.log" % name)
    worker = os.path.join(sandbox.logs_dir, name, "%s-rollout-0.log" % name)
    done = ("Global Step: %d/%d\n" % (STEPS, STEPS)).encode()
    wait_until(lambda: os.path.exists(head) and read(head).endswith(done), timeout=180)
    wait_until(lambda: os.path.exists(worker) and read(worker).count(b"\n") >= 2)
    yield SimpleNamespace(name=name, head=head, worker=worker)
    try:
        crs.delete_cluster_custom_object(GROUP, VERSION, "jobs", name)
    except ApiException as exc:
        assert exc.status == 404


def read(path):
    with open(path, "rb") as fh:
        return fh.read()


def core(sandbox, cluster):
    return client.CoreV1Api(config.new_client_from_config(config_file=sandbox.data_plane_kubeconfigs[cluster]))


def test_kubeconfig_per_cluster_of_the_fleet(sandbox):
    assert sorted(sandbox.data_plane_kubeconfigs) == ["a100", "edge", "h100"]
    for cluster, path in sandbox.data_plane_kubeconfigs.items():
        assert path == os.path.join(sandbox.dir, "data-plane", cluster + ".kubeconfig")
        assert sandbox.state["data_plane"][cluster]["namespace"] == "rlark-" + cluster
    with open(os.path.join(sandbox.dir, "env")) as fh:
        env = fh.read()
    assert "RLARK_GATEWAY_URL=%s\n" % sandbox.gateway_url in env
    assert "RLARK_DATA_PLANE_DIR=%s\n" % sandbox.data_plane_dir in env


def test_long_head_log_through_the_apiserver_equals_the_trainer_file(sandbox, job):
    name, head = job.name, job.head
    body = LogReader(sandbox.data_plane_kubeconfigs["a100"]).text(name + "-actor-0")
    assert body.count(b"\n") >= 20000
    assert body == read(head)


def test_pods_and_nodes_are_core_objects_of_their_own_cluster(sandbox, job):
    name = job.name
    a100, h100 = core(sandbox, "a100"), core(sandbox, "h100")
    pod = a100.read_namespaced_pod(name + "-actor-0", NS)
    assert pod.spec.node_name == "a100-01" and pod.status.phase == "Running"
    main = next(s for s in pod.status.container_statuses if s.name == "main")
    assert main.state.running is not None
    node = a100.read_node("a100-01")
    assert [a.address for a in node.status.addresses if a.type == "InternalIP"] == ["127.0.0.1"]
    assert node.status.daemon_endpoints.kubelet_endpoint.port == sandbox.state["data_plane"]["a100"]["kubelet_port"]
    assert h100.read_namespaced_pod(name + "-rollout-0", NS).spec.node_name == "h100-01"


def test_a_pod_is_not_found_through_another_clusters_kubeconfig(sandbox, job):
    name, worker = job.name, job.worker
    for cluster in ("h100", "edge"):
        assert LogReader(sandbox.data_plane_kubeconfigs[cluster]).read(name + "-actor-0")[0] == 404, cluster
        with pytest.raises(ApiException) as err:
            core(sandbox, cluster).read_namespaced_pod(name + "-actor-0", NS)
        assert err.value.status == 404
    assert LogReader(sandbox.data_plane_kubeconfigs["a100"]).read(name + "-rollout-0")[0] == 404
    assert LogReader(sandbox.data_plane_kubeconfigs["h100"]).text(name + "-rollout-0") == read(worker)


def test_tail_lines_and_limit_bytes_like_the_kubelet(sandbox, job):
    name, head = job.name, job.head
    reader, pod, whole = LogReader(sandbox.data_plane_kubeconfigs["a100"]), name + "-actor-0", read(head)
    lines = whole.splitlines(keepends=True)
    assert reader.text(pod, tailLines=5) == b"".join(lines[-5:])
    assert reader.text(pod, tailLines=0) == b""
    assert reader.text(pod, limitBytes=100) == whole[:100]  # cut mid-line, as the kubelet does
    stamped = reader.text(pod, tailLines=3, timestamps="true")
    assert reader.text(pod, tailLines=3, timestamps="true", limitBytes=40) == stamped[:40]  # prefixes count


def test_timestamps_are_fixed_and_since_time_keeps_lines_at_or_after_it(sandbox, job):
    name, head = job.name, job.head
    reader, pod = LogReader(sandbox.data_plane_kubeconfigs["a100"]), name + "-actor-0"
    first = reader.text(pod, timestamps="true")
    assert reader.text(pod, timestamps="true") == first  # a second read: the same times
    parsed = [STAMP.match(line) for line in first.split(b"\n")[:-1]]
    assert all(parsed)
    assert b"".join(m.group(3) + b"\n" for m in parsed) == read(head)
    seconds = [m.group(1) for m in parsed]
    later = next((s for s in seconds if s != seconds[0]), None)
    assert later is not None, "the 10 steps of 0.2 s span more than one second"
    since = later.decode() + "Z"
    expected = b"".join(m.group(3) + b"\n" for m in parsed if m.group(1) >= later)
    assert reader.text(pod, sinceTime=since) == expected
    assert 0 < len(expected) < len(read(head))
    both = reader.text(pod, sinceTime=since, tailLines=7)
    assert both == b"".join(expected.splitlines(keepends=True)[-7:])


def test_gateway_returns_at_most_the_last_1000_lines_of_each_pod(sandbox, job):
    name, head, worker = job.name, job.head, job.worker
    url = "%s/api/v1/rlinf.io/v1alpha1/jobs/%s/logs" % (sandbox.gateway_url, name)
    with urllib.request.urlopen(url, timeout=60) as resp:
        body = json.load(resp)
    pods = {p["podName"]: p for p in body["pods"]}
    assert set(pods) == {name + "-actor-0", name + "-rollout-0"}
    actor = pods[name + "-actor-0"]
    assert (actor["taskName"], actor["phase"], actor["node"]) == (name + "-actor", "Running", "a100-01")
    lines = read(head).decode().splitlines(keepends=True)
    assert len(lines) > 20000
    assert actor["logs"] == "".join(lines[-1000:])
    assert pods[name + "-rollout-0"]["logs"] == read(worker).decode()
    with urllib.request.urlopen("%s/api/v1/rlinf.io/v1alpha1/jobs/no-such-job/logs" % sandbox.gateway_url) as resp:
        assert json.load(resp) == {"pods": None}
    with urllib.request.urlopen("%s/api/v1/rlinf.io/v1alpha1/jobs/%s" % (sandbox.gateway_url, name)) as resp:
        assert json.load(resp)["metadata"]["name"] == name


def _restart_sim(sandbox):
    """The simulator's restart is a container restart for every pod (the trainer reruns and appends)."""
    with open(os.path.join(sandbox.dir, "state.json")) as fh:
        pid = json.load(fh)["pids"]["rlark-sim"]["pid"]
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not os.path.exists("/proc/%d" % pid) or _zombie(pid))
    ctl = [sys.executable, os.path.join(ROOT, "sandbox", "sandboxctl.py"), "--dir", sandbox.dir, "up"]
    up = subprocess.run([*ctl, "--crds", sandbox.crds], capture_output=True, text=True, timeout=300, check=False)
    assert up.returncode == 0, up.stdout + up.stderr


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_previous_is_the_container_before_the_restart(sandbox, job):
    name, head = job.name, job.head
    reader, pod = LogReader(sandbox.data_plane_kubeconfigs["a100"]), name + "-actor-0"
    status, body = reader.read(pod, previous="true")
    assert status == 400 and b'previous terminated container \\"main\\"' in body, body
    before = read(head)
    _restart_sim(sandbox)
    a100 = core(sandbox, "a100")

    def restarted():
        main = next(s for s in a100.read_namespaced_pod(pod, NS).status.container_statuses if s.name == "main")
        return main.restart_count == 1 and main.last_state.terminated is not None

    wait_until(restarted)
    done = ("Global Step: %d/%d\n" % (STEPS, STEPS)).encode()
    wait_until(lambda: read(head).count(done) == 2, timeout=180)
    assert reader.text(pod, previous="true") == before
    assert reader.text(pod) == read(head)[len(before) :]
    assert reader.text(pod).startswith(b"Starting Ray head node")


def test_a_stopped_job_ends_follow_and_leaves_the_data_plane(sandbox, crs, job):
    name = job.name
    reader, pod = LogReader(sandbox.data_plane_kubeconfigs["a100"]), name + "-actor-0"
    current = reader.text(pod)
    followed = {}
    follower = threading.Thread(target=lambda: followed.update(result=reader.read(pod, follow="true")), daemon=True)
    follower.start()
    crs.patch_cluster_custom_object(GROUP, VERSION, "jobs", name, {"spec": {"stopped": True}})
    a100, h100 = core(sandbox, "a100"), core(sandbox, "h100")
    follower.join(timeout=120)
    assert not follower.is_alive(), "follow=true did not end when the container stopped"
    assert followed["result"] == (200, current)

    def gone(api, pod):
        try:
            api.read_namespaced_pod(pod, NS)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_until(lambda: gone(a100, name + "-actor-0") and gone(h100, name + "-rollout-0"))
