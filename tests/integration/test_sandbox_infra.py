"""The sandbox itself: real API server, RBAC tokens, fleet, S3, CRD pruning/validation (down/up:
test_sandbox_lifecycle.py)."""

import copy
import json
import os
import random
import shutil
import string
import subprocess

import pytest
from helpers import ROOT
from kubeapi_for_tests import Api
from sandbox_nodes import EXPECTED_FLEET

pytestmark = pytest.mark.sandbox

JOBS = "/apis/rlinf.io/v1alpha1/jobs"


def suffix():
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=6))


def k8s_version():
    """The kube-apiserver version pinned in sandbox/tools/go.mod."""
    with open(os.path.join(ROOT, "sandbox", "tools", "go.mod")) as fh:
        for line in fh:
            parts = line.split()
            if parts[:1] == ["k8s.io/kubernetes"] and parts[1].startswith("v"):
                return parts[1]
    raise AssertionError("k8s.io/kubernetes not pinned in sandbox/tools/go.mod")


def job_doc(name, **main_extra):
    main = {"name": "main", "image": "rlinf/rlinf:sandbox"}
    main.update(main_extra)
    return {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "stopped": True,  # keeps rlark-sim from scheduling anything for these API-level tests
            "tasks": [
                {
                    "name": "actor",
                    "head": True,
                    "role": "Actor",
                    "agentType": "Kubernetes",
                    "nodeSelector": {"kubernetes.io/hostname": "a100-01"},
                    "kubernetes": {
                        "workload": {
                            "kind": "StatefulSet",
                            "replicas": 1,
                            "template": {"metadata": {}, "spec": {"containers": [main]}},
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture
def admin(sandbox):
    api = Api(sandbox.server, sandbox.admin_token, sandbox.ca_cert)
    yield api
    api.close()


@pytest.fixture
def job_cleanup(admin):
    names = []
    yield names
    for name in names:
        admin.request("DELETE", "%s/%s" % (JOBS, name))


def test_apiserver_reports_real_version(sandbox, admin):
    want = k8s_version()
    version = admin.call("GET", "/version")
    assert version["gitVersion"] == want
    assert (version["major"], version["minor"]) == tuple(want[1:].split(".")[:2])
    kubectl = shutil.which("kubectl")
    if kubectl:  # the acceptance check, when kubectl exists on the machine
        out = subprocess.run(
            [kubectl, "--kubeconfig", sandbox.kubeconfig, "version", "-o", "json"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert json.loads(out.stdout)["serverVersion"]["gitVersion"] == want, out.stderr


def _socket_inodes(pid):
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def test_every_sandbox_process_listens_on_loopback_only(sandbox):
    assert sandbox.server.startswith("https://127.0.0.1:")
    assert sandbox.s3_endpoint.startswith("http://127.0.0.1:")
    loopback = {"0100007F", "00000000000000000000000001000000"}  # 127.0.0.1 in /proc/net/tcp, ::1 in tcp6
    listeners = {}  # socket inode -> local address
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for row in fh.readlines()[1:]:
                cols = row.split()
                if cols[3] == "0A":  # LISTEN
                    listeners[cols[9]] = cols[1]
    checked = 0
    # Read the state now, not the session's copy: a test may have restarted a process (new pid) meanwhile.
    with open(os.path.join(sandbox.dir, "state.json")) as fh:
        pids = json.load(fh)["pids"]
    for name, proc in pids.items():
        for inode in _socket_inodes(proc["pid"]):
            if inode in listeners:
                checked += 1
                address = listeners[inode].rsplit(":", 1)[0]
                assert address in loopback, "%s listens on %s" % (name, listeners[inode])
    assert checked >= 4  # etcd client + peer, kube-apiserver, S3 at least


def test_fleet_is_seeded(sandbox, admin):
    nodes = admin.call("GET", "/apis/rlinf.io/v1alpha1/nodes")["items"]
    seen = {(n["metadata"]["namespace"], n["metadata"]["name"]): n for n in nodes}
    assert set(EXPECTED_FLEET) <= set(seen)
    for key, (phase, cordoned, pool) in EXPECTED_FLEET.items():
        node = seen[key]
        labels = node["metadata"]["labels"]
        assert node["status"]["phase"] == phase, key
        assert bool(node["spec"].get("unschedulable")) is cordoned, key
        assert labels["rlinf.io/pool"] == pool
        assert labels["kubernetes.io/hostname"] == key[1]
        assert labels["rlark.io/cluster-id"] == key[0]
        assert labels["rlark.io/agent-type"] == "Kubernetes"
        assert node["status"]["diskPressure"] is False
        if key[0] != "rlark-edge":
            assert labels["nvidia.com/gpu.product"].startswith("NVIDIA-")
            for field in ("capacity", "allocatable"):
                assert str(node["status"][field]["nvidia.com/gpu"]) == "8"
            # `used` is live: rlark-sim's agent sums the GPU requests of pods placed on the node.
            assert 0 <= int(node["status"]["used"]["nvidia.com/gpu"]) <= 8
    robot = seen[("rlark-edge", "robot-01")]
    assert robot["metadata"]["labels"]["rlark.io/node-category"] == "robot"
    assert str(robot["status"]["allocatable"]["rlinf.io/device-arm"]) == "1"
    assert "nvidia.com/gpu" not in robot["status"]["allocatable"]
    namespaces = {n["metadata"]["name"] for n in admin.call("GET", "/api/v1/namespaces")["items"]}
    assert {"rlark-system", "rlark-a100", "rlark-h100", "rlark-edge", "default"} <= namespaces


def test_kubectl_lists_jobs_and_nodes(sandbox):
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.fail("kubectl is not on PATH: install it, the sandbox docs promise that kubectl works against it.")
    out = subprocess.run(
        [kubectl, "--kubeconfig", sandbox.kubeconfig, "get", "rljob,nodes.rlinf.io", "-A", "-o", "name"],
        capture_output=True,
        text=True,
        check=True,
    )
    names = out.stdout.split()
    assert names.count("node.rlinf.io/dual-01") == 2
    assert "node.rlinf.io/robot-01" in names


def test_viewer_reads_but_gets_403_on_patch(sandbox, admin, job_cleanup):
    name = "h1-viewer-" + suffix()
    admin.call("POST", JOBS, job_doc(name))
    job_cleanup.append(name)
    viewer = Api(sandbox.server, sandbox.viewer_token, sandbox.ca_cert)
    assert viewer.request("GET", "%s/%s" % (JOBS, name))[0] == 200
    assert viewer.request("GET", "/apis/rlinf.io/v1alpha1/namespaces/rlark-a100/nodes")[0] == 200
    status, body = viewer.request(
        "PATCH", "%s/%s" % (JOBS, name), {"spec": {"stopped": False}}, "application/merge-patch+json"
    )
    assert status == 403, body
    assert viewer.request("DELETE", "%s/%s" % (JOBS, name))[0] == 403
    assert viewer.request("POST", JOBS, job_doc("h1-viewer-denied-" + suffix()))[0] == 403
    viewer.close()


def test_operator_manages_jobs_only(sandbox, admin, job_cleanup):
    operator = Api(sandbox.server, sandbox.operator_token, sandbox.ca_cert)
    name = "h1-operator-" + suffix()
    status, body = operator.request("POST", JOBS, job_doc(name))
    assert status == 201, body
    job_cleanup.append(name)
    status, body = operator.request(
        "PATCH", "%s/%s" % (JOBS, name), {"metadata": {"labels": {"h1": "yes"}}}, "application/merge-patch+json"
    )
    assert status == 200, body
    assert body["metadata"]["labels"]["h1"] == "yes"
    for path in ("/apis/rlinf.io/v1alpha1/tasks", "/apis/rlinf.io/v1alpha1/pods", "/api/v1/namespaces"):
        assert operator.request("GET", path)[0] == 200, path
    assert operator.request("DELETE", "/api/v1/namespaces/rlark-edge")[0] == 403
    node = "/apis/rlinf.io/v1alpha1/namespaces/rlark-a100/nodes/a100-01"
    assert operator.request("PATCH", node, {"spec": {"unschedulable": True}}, "application/merge-patch+json")[0] == 403
    assert operator.request("GET", "/api/v1/namespaces/rlark-system/secrets")[0] == 403
    assert operator.request("DELETE", "%s/%s" % (JOBS, name))[0] == 200
    operator.close()


def test_s3_bucket_reachable_with_boto3(sandbox):
    import boto3
    from botocore.exceptions import ClientError

    s3 = boto3.client(
        "s3",
        endpoint_url=sandbox.s3_endpoint,
        aws_access_key_id=sandbox.s3_access_key,
        aws_secret_access_key=sandbox.s3_secret_key,
        region_name="us-east-1",
    )
    assert sandbox.s3_bucket in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    key = "h1-infra-%s/probe/global_step_1/.metadata" % suffix()
    s3.put_object(Bucket=sandbox.s3_bucket, Key=key, Body=b"probe")
    try:
        assert s3.get_object(Bucket=sandbox.s3_bucket, Key=key)["Body"].read() == b"probe"
        listed = s3.list_objects_v2(Bucket=sandbox.s3_bucket, Prefix=key.split("/", maxsplit=1)[0] + "/")
        assert [o["Key"] for o in listed["Contents"]] == [key]
    finally:
        s3.delete_object(Bucket=sandbox.s3_bucket, Key=key)  # the test's own probe object only
    wrong = boto3.client(
        "s3", endpoint_url=sandbox.s3_endpoint, aws_access_key_id="WRONG", aws_secret_access_key="wrong"
    )
    with pytest.raises(ClientError) as denied:
        wrong.list_objects_v2(Bucket=sandbox.s3_bucket)
    # versitygw answers an unknown access key with 404 XAdminUserNotFound: refused either way.
    assert denied.value.response["ResponseMetadata"]["HTTPStatusCode"] in (403, 404)
    assert denied.value.response["Error"]["Code"] != "NoSuchBucket"


def test_unknown_fields_rejected_under_strict_and_pruned_otherwise(admin, job_cleanup):
    name = "h1-strict-" + suffix()
    bad_pod = job_doc(name, bogusContainerField=True)
    status, body = admin.request("POST", JOBS + "?fieldValidation=Strict&dryRun=All", bad_pod)
    assert status == 400, body  # strict decoding error: unknown field
    assert (
        'unknown field "spec.tasks[0].kubernetes.workload.template.spec.containers[0].bogusContainerField"'
        in (body["message"])
    )
    bad_spec = job_doc(name)
    bad_spec["spec"]["tasks"][0]["replicas"] = 2  # a common mistake: replicas belongs to the workload
    status, body = admin.request("POST", JOBS + "?fieldValidation=Strict&dryRun=All", bad_spec)
    assert status == 400 and 'unknown field "spec.tasks[0].replicas"' in body["message"], body
    # Default validation (Warn) accepts and silently prunes, like RLark.
    status, body = admin.request("POST", JOBS, bad_spec)
    assert status == 201, body
    job_cleanup.append(name)
    stored = admin.call("GET", "%s/%s" % (JOBS, name))
    assert "replicas" not in stored["spec"]["tasks"][0]
    assert stored["spec"]["tasks"][0]["kubernetes"]["workload"]["replicas"] == 1


def test_template_metadata_labels_are_pruned(admin, job_cleanup):
    name = "h1-prune-" + suffix()
    doc = job_doc(name)
    doc["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["metadata"] = {
        "labels": {"team": "rl"},
        "annotations": {"note": "gone"},
    }
    admin.call("POST", JOBS, doc)
    job_cleanup.append(name)
    stored = admin.call("GET", "%s/%s" % (JOBS, name))
    template = stored["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]
    assert not template.get("metadata"), template.get("metadata")
    assert template["spec"]["containers"][0]["name"] == "main"


def test_schema_requires_role_and_container_name(admin):
    no_role = job_doc("h1-norole-" + suffix())
    del no_role["spec"]["tasks"][0]["role"]
    status, body = admin.request("POST", JOBS + "?dryRun=All", no_role)
    assert status == 422 and "role" in body["message"], body
    no_name = job_doc("h1-noname-" + suffix())
    del no_name["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["name"]
    status, body = admin.request("POST", JOBS + "?dryRun=All", no_name)
    assert status == 422 and "name" in body["message"], body
    # No enums: any role/kind/agentType is accepted (validation is the client's job).
    odd = job_doc("h1-odd-" + suffix())
    odd["spec"]["tasks"][0].update(role="Whatever", agentType="Docker")
    odd["spec"]["tasks"][0]["kubernetes"]["workload"]["kind"] = "CloneSet"
    assert admin.request("POST", JOBS + "?dryRun=All", odd)[0] == 201


def test_status_subresource_isolates_status(admin, job_cleanup):
    name = "h1-status-" + suffix()
    doc = copy.deepcopy(job_doc(name))
    doc["status"] = {"phase": "Succeeded"}
    created = admin.call("POST", JOBS, doc)
    job_cleanup.append(name)
    assert (created.get("status") or {}).get("phase") != "Succeeded"  # status is ignored on create


def test_live_crd_set_matches_option(sandbox, admin):
    crds = admin.call("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    ours = [c for c in crds if c["spec"]["group"] == "rlinf.io"]
    core = {"jobs", "tasks", "nodes", "pods", "workflows", "domains"}
    # RLark's DomainPeer and Addon come with the upstream set only (the collection never uses them)
    extra = {"domainpeers", "addons"} if sandbox.crds == "upstream" else set()
    assert {c["spec"]["names"]["plural"] for c in ours} == core | extra
    assert {c["metadata"]["annotations"]["rlark.ops/crd-set"] for c in ours} == {sandbox.crds}


def test_ansible_helpers_run_modules_and_playbooks_against_the_sandbox(sandbox, tmp_path):
    from helpers import run_ansible_module, run_playbook

    env = run_ansible_module("ansible.builtin.command", {"cmd": "printenv K8S_AUTH_KUBECONFIG"}, env=sandbox.env())
    assert env.get("stdout") == sandbox.kubeconfig, env
    as_viewer = run_ansible_module(
        "ansible.builtin.command", {"cmd": "printenv K8S_AUTH_KUBECONFIG"}, kubeconfig=sandbox.kubeconfig_viewer
    )
    assert as_viewer.get("stdout") == sandbox.kubeconfig_viewer, as_viewer
    uri = {
        "url": sandbox.server + JOBS,
        "headers": {"Authorization": "Bearer " + sandbox.viewer_token},
        "ca_path": sandbox.ca_cert,
    }
    listed = run_ansible_module("ansible.builtin.uri", uri, env=sandbox.env())
    assert listed.get("status") == 200 and listed["json"]["kind"] == "JobList", listed
    denied = run_ansible_module(
        "ansible.builtin.uri", dict(uri, method="DELETE", url=uri["url"] + "/any"), env=sandbox.env()
    )
    assert denied.get("failed") is True and denied.get("status") == 403, denied
    playbook = tmp_path / "probe.yml"
    playbook.write_text(
        "- name: Probe\n  hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - name: Echo\n      ansible.builtin.debug:\n        msg: '{{ probe_value }}'\n"
        "    - name: Skip\n      ansible.builtin.debug:\n        msg: never\n      when: false\n"
    )
    run = run_playbook(str(playbook), {"probe_value": "h1"}, env=sandbox.env())
    assert run.rc == 0, run
    results = run.task_results()
    assert [result[0] for result in results] == ["Echo", "Skip"], run
    assert results[0][1]["msg"] == "h1" and results[1][1]["skipped"] is True, run
    assert run.stats["localhost"]["ok"] == 1, run
