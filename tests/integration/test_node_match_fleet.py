# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_node_match on the sandbox fleet: every finding id reproduced against the real API server.

Fleet (seeded by the sandbox): rlark-a100 {a100-01 head, a100-02/03 rollout, dual-01 spare},
rlark-h100 {h100-01, h100-02 Offline, dual-01 cordoned}, rlark-edge {robot-01, edge-01}.
One extra Node CR with disk pressure is created in rlark-edge for the disk-pressure case.
"""

import contextlib
import json

import job_test_support as support
import pytest
from job_test_support import ApiError, admin_client, resource_path, run_module, unique

pytestmark = pytest.mark.sandbox
cleanup = support.cleanup

A100 = {"kubernetes.io/hostname": "a100-01"}
H100 = "NVIDIA-H100-80GB-HBM3"


@pytest.fixture
def disk_pressure_node(sandbox):
    """A Node CR in rlark-edge whose status reports disk pressure (admin writes the status subresource)."""
    name = unique("h3-disk")
    client = admin_client(sandbox)
    path = resource_path("nodes", namespace="rlark-edge")
    labels = {"kubernetes.io/hostname": name, "rlark.io/cluster-id": "rlark-edge", "rlinf.io/pool": name}
    node = {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Node",
        "metadata": {"name": name, "namespace": "rlark-edge", "labels": labels},
        "spec": {"agentType": "Kubernetes", "unschedulable": False},
    }
    client.create(path, node)
    status = {"phase": "Online", "diskPressure": True, "allocatable": {"cpu": "8"}, "capacity": {"cpu": "8"}}
    client.merge_patch(resource_path("nodes", name, "rlark-edge", "status"), {"status": status})
    yield name
    with contextlib.suppress(ApiError):
        client.delete(resource_path("nodes", name, "rlark-edge"))
    client.close()


CASES = [
    ("selector-empty", {"name": "t", "selector": {}}),
    ("selector-empty-value", {"name": "t", "selector": {"rlinf.io/pool": ""}}),
    ("selector-multivalue", {"name": "t", "selector": {"rlinf.io/pool": "rollout,head"}, "replicas": 3}),
    ("selector-cr-only-key", {"name": "t", "selector": {"rlark.io/cluster-id": "rlark-a100", **A100}}),
    ("selector-annotation-key", {"name": "t", "selector": {"rlark.io/gpu-model": "A100"}}),
    ("selector-multi-cluster", {"name": "t", "selector": {"kubernetes.io/hostname": "dual-01"}}),
    ("selector-no-match", {"name": "t", "selector": {"kubernetes.io/hostname": "no-such-node"}}),
    ("head-match-count", {"name": "t", "selector": {"rlinf.io/pool": "rollout"}, "head": True}),
    ("head-replicas", {"name": "t", "selector": A100, "head": True, "replicas": 2}),
    ("replicas-match-mismatch", {"name": "t", "selector": {"rlinf.io/pool": "rollout"}, "replicas": 3}),
    ("node-offline", {"name": "t", "selector": {"kubernetes.io/hostname": "h100-02"}}),
    (
        "node-cordoned",
        {"name": "t", "selector": {"rlinf.io/pool": "spare", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
    ),
    (
        "node-insufficient-resources",
        {"name": "t", "selector": {"rlinf.io/pool": "rollout"}, "replicas": 2, "requests": {"nvidia.com/gpu": 9}},
    ),
]


@pytest.fixture(scope="module")
def all_cases(sandbox):
    """One module call proves every case (one task per case, named after its finding id)."""
    tasks = [dict(task, name=finding_id) for finding_id, task in CASES]
    result = run_module(sandbox, "rlark_node_match", {"selectors": tasks, "fail_on_findings": False})
    assert not result.get("failed"), result.get("msg")
    assert not result["changed"] and not result["ok"]
    return result


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_each_finding_on_the_fleet(all_cases, index):
    finding_id = CASES[index][0]
    prefix = "selectors[%d]" % index
    mine = [f["id"] for f in all_cases["findings"] if f["path"].startswith(prefix)]
    assert finding_id in mine, (finding_id, mine)
    assert all_cases["proof"]["tasks"][index]["name"] == finding_id


def test_disk_pressure(sandbox, disk_pressure_node):
    task = {"name": "t", "selector": {"kubernetes.io/hostname": disk_pressure_node}}
    result = run_module(sandbox, "rlark_node_match", {"selectors": [task], "fail_on_findings": False})
    assert [f["id"] for f in result["findings"]] == ["node-disk-pressure"]
    assert result["proof"]["tasks"][0]["matches"][0]["disk_pressure"] is True


PROFILE = {"cluster": "a100", "roles": [{"name": "actor", "global_matches": [{"name": "a100-01"}]}]}


@pytest.mark.parametrize(
    "recorded, ids",
    [
        ({"expected_nodes": {"actor": ["a100-01"]}}, ["selector-drift", "selector-wrong-cluster"]),
        # The deployment profile's recorded match list, read by the module (the selector_proof role passes it).
        ({"profile": PROFILE}, ["selector-drift", "selector-wrong-cluster"]),
        # A list given outright wins over the profile's: the Node it names matches, so no drift.
        ({"expected_nodes": {"actor": ["h100-01"]}, "profile": PROFILE}, ["selector-wrong-cluster"]),
    ],
)
def test_wrong_cluster_and_drift(sandbox, recorded, ids):
    task = {"name": "actor", "selector": {"kubernetes.io/hostname": "h100-01"}, "head": True}
    args = {"selectors": [task], "cluster_id": "a100", **recorded}
    result = run_module(sandbox, "rlark_node_match", args)
    assert result["failed"]
    assert sorted(f["id"] for f in result["findings"]) == ids
    assert {f["severity"] for f in result["findings"]} == {"error"}
    assert "selector-wrong-cluster" in result["msg"]


def test_multi_cluster_proof_names_both_clusters(sandbox):
    task = {"name": "t", "selector": {"kubernetes.io/hostname": "dual-01"}}
    result = run_module(sandbox, "rlark_node_match", {"selectors": [task]})
    assert result["failed"]  # fail_on_findings defaults to true
    assert result["proof"]["tasks"][0]["clusters"] == ["rlark-a100", "rlark-h100"]


def test_one_call_proves_a_whole_job(sandbox):
    job = support.demo_job(unique())
    result = run_module(sandbox, "rlark_node_match", {"job": job, "cluster_id": "rlark-a100"}, kubeconfig="operator")
    assert not result.get("failed"), result.get("msg")
    proof = result["proof"]
    assert proof["api_server"] == sandbox.server
    assert proof["resource_version"] and proof["checked_at"].endswith("Z")
    tasks = {t["name"]: t for t in proof["tasks"]}
    assert [m["name"] for m in tasks["actor"]["matches"]] == ["a100-01"]
    assert sorted(m["name"] for m in tasks["rollout"]["matches"]) == ["a100-02", "a100-03"]
    assert all(t["cluster"] == "rlark-a100" and t["ok"] for t in proof["tasks"])
    assert result["api_calls"] - result["api_retries"] == 3  # one list per distinct selector


def test_remote_style_run_with_task_environment_uses_the_module(sandbox):
    """With a task ``environment`` the action plugin hands over to the module (K8S_AUTH_* honoured there)."""
    task = {"name": "t", "selector": {"kubernetes.io/hostname": "h100-01"}, "head": True}
    result = run_module(
        sandbox,
        "rlark_node_match",
        {"selectors": [task]},
        kubeconfig=None,
        env={"K8S_AUTH_KUBECONFIG": "/nonexistent"},
        task_env={"K8S_AUTH_KUBECONFIG": sandbox.kubeconfig_viewer},
    )
    assert not result.get("failed"), result.get("msg")
    assert result["proof"]["tasks"][0]["cluster"] == "rlark-h100"


def test_controller_side_run_reports_api_errors_as_one_sentence(sandbox):
    task = {"name": "t", "selector": {"kubernetes.io/hostname": "h100-01"}}
    args = {"selectors": [task], "host": sandbox.server, "api_key": "not-a-token", "ca_cert": sandbox.ca_cert}
    result = run_module(sandbox, "rlark_node_match", args, kubeconfig=None)
    assert result["failed"] and result["status"]["code"] == 401
    assert result["msg"].startswith("The API server rejected GET /apis/rlinf.io/v1alpha1/nodes with 401")
    assert "not-a-token" not in json.dumps(result)


def test_rerun_on_a_running_job_does_not_count_its_own_gpus(sandbox, cleanup):
    """A running Job holding all 8 GPUs of h100-01: short without own_job, proven with it."""
    name = unique()
    cleanup.append(name)
    job = support.demo_job(name)
    head = dict(job["spec"]["tasks"][0], nodeSelector={"kubernetes.io/hostname": "h100-01"})
    head.pop("runScript")  # no trainer: only the pod's placement matters here
    main = head["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    main["resources"] = {"requests": {"cpu": "1", "nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}}
    job["spec"]["tasks"] = [head]
    created = run_module(sandbox, "rlark_job", {"definition": job, "wait": True, "wait_timeout": 180})
    assert created["changed"] and not created.get("failed"), created.get("msg")

    plain = run_module(
        sandbox, "rlark_node_match", {"job": job, "fail_on_findings": False}, kubeconfig=sandbox.kubeconfig_viewer
    )
    short = [f for f in plain["findings"] if f["id"] == "node-insufficient-resources"]
    assert [(f["node"], f["namespace"], f["severity"]) for f in short] == [("h100-01", "rlark-h100", "error")]

    args = {"job": job, "own_job": name, "cluster_id": "h100"}
    proven = run_module(sandbox, "rlark_node_match", args, kubeconfig=sandbox.kubeconfig_viewer)
    assert not proven.get("failed"), proven.get("msg")
    assert proven["findings"] == [] and proven["proof"]["own_job"] == name
    assert proven["proof"]["tasks"][0]["matches"][0]["own_used"] == {"nvidia.com/gpu": 8}
    assert proven["api_calls"] - proven["api_retries"] == 3  # the Node list, the Job, its Pod CRs
