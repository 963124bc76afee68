# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The selector uniqueness proof on a copy of the sandbox fleet, one test per finding id."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import selectors
from rlark_fake_api import selector_matches


def node(name, ns, pool, phase="Online", cordoned=False, gpus=8, used=0, extra=None, disk=False):
    labels = {
        "kubernetes.io/hostname": name,
        "rlark.io/cluster-id": ns,
        "rlark.io/agent-type": "Kubernetes",
        "rlinf.io/pool": pool,
    }
    labels.update(extra or {})
    res = {"nvidia.com/gpu": str(gpus)} if gpus else {"cpu": "8"}
    return {
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"unschedulable": cordoned},
        "status": {
            "phase": phase,
            "allocatable": res,
            "capacity": res,
            "used": {"nvidia.com/gpu": str(used)},
            "diskPressure": disk,
        },
    }


FLEET = [
    node("a100-01", "rlark-a100", "head"),
    node("a100-02", "rlark-a100", "rollout"),
    node("a100-03", "rlark-a100", "rollout", used=6),
    node("dual-01", "rlark-a100", "spare"),
    node("dual-01", "rlark-h100", "spare", cordoned=True),
    node("h100-01", "rlark-h100", "h100"),
    node("h100-02", "rlark-h100", "h100", phase="Offline"),
    node("robot-01", "rlark-edge", "edge", gpus=0, extra={"rlark.io/node-category": "robot"}, disk=True),
]


def prove(tasks, **kw):
    inventory = {}
    for t in tasks:
        key = selectors.placement_label_selector(t.get("selector"))
        inventory[key] = [n for n in FLEET if selector_matches(n["metadata"]["labels"], key)]
    return selectors.prove_selectors(tasks, inventory, **kw)


def ids(found):
    return sorted({f["id"] for f in found})


def test_a_good_job_proves_clean():
    tasks = [
        {
            "name": "actor",
            "selector": {"kubernetes.io/hostname": "a100-01"},
            "replicas": 1,
            "head": True,
            "requests": {"nvidia.com/gpu": 8},
        },
        {"name": "rollout", "selector": {"rlinf.io/pool": "rollout"}, "replicas": 2, "requests": {"nvidia.com/gpu": 2}},
    ]
    entries, found = prove(
        tasks, cluster_id="a100", expected_nodes={"actor": ["a100-01"], "rollout": ["a100-02", "a100-03"]}
    )
    assert found == []
    assert [e["ok"] for e in entries] == [True, True]
    assert entries[1]["cluster"] == "rlark-a100" and entries[1]["count"] == 2
    assert entries[0]["matches"][0]["allocatable"] == {"nvidia.com/gpu": "8"}


@pytest.mark.parametrize(
    "task,expected",
    [
        ({"name": "t", "selector": {}}, ["selector-empty"]),
        ({"name": "t", "selector": {"rlinf.io/pool": "rollout,head"}, "replicas": 3}, ["selector-multivalue"]),
        (
            {
                "name": "t",
                "selector": {"rlark.io/cluster-id": "rlark-edge", "kubernetes.io/hostname": "robot-01"},
                "requests": {},
            },
            ["node-disk-pressure", "selector-cr-only-key"],
        ),
        ({"name": "t", "selector": {"rlark.io/gpu-model": "A100"}}, ["selector-annotation-key", "selector-no-match"]),
        ({"name": "t", "selector": {"kubernetes.io/hostname": "dual-01"}}, ["selector-multi-cluster"]),
        ({"name": "t", "selector": {"kubernetes.io/hostname": "nope"}}, ["selector-no-match"]),
        ({"name": "t", "selector": {"rlinf.io/pool": "rollout"}, "head": True, "replicas": 1}, ["head-match-count"]),
        (
            {"name": "t", "selector": {"kubernetes.io/hostname": "a100-01"}, "head": True, "replicas": 2},
            ["head-replicas"],
        ),
        ({"name": "t", "selector": {"rlinf.io/pool": "rollout"}, "replicas": 3}, ["replicas-match-mismatch"]),
        ({"name": "t", "selector": {"kubernetes.io/hostname": "h100-02"}}, ["node-offline"]),
        ({"name": "t", "selector": {"rlinf.io/pool": "spare"}, "replicas": 1}, ["selector-multi-cluster"]),
        (
            {"name": "t", "selector": {"rlinf.io/pool": "rollout"}, "replicas": 2, "requests": {"nvidia.com/gpu": 4}},
            ["node-insufficient-resources"],
        ),
    ],
)
def test_each_finding(task, expected):
    _entries, found = prove([task])
    assert ids(found) == expected


def test_multivalue_counts_every_listed_value_in_the_resolved_cluster():
    entries, _found = prove([{"name": "t", "selector": {"rlinf.io/pool": "rollout,head"}, "replicas": 3}])
    assert entries[0]["label_selector"] == "rlinf.io/pool in (head,rollout)"
    assert entries[0]["resolution_selector"] == {"rlinf.io/pool": "rollout"}
    assert entries[0]["count"] == 3


def test_multi_cluster_lists_every_cluster_and_cordoned_node_in_the_first():
    entries, found = prove([{"name": "t", "selector": {"kubernetes.io/hostname": "dual-01"}}])
    assert entries[0]["clusters"] == ["rlark-a100", "rlark-h100"]
    assert entries[0]["cluster"] == "rlark-a100"
    # Reverse list order: RLark's cache order decides, so the cordoned one can win.
    inventory = {
        "kubernetes.io/hostname=dual-01": list(reversed([n for n in FLEET if n["metadata"]["name"] == "dual-01"]))
    }
    entries, found = selectors.prove_selectors(
        [{"name": "t", "selector": {"kubernetes.io/hostname": "dual-01"}}], inventory
    )
    assert entries[0]["cluster"] == "rlark-h100"
    assert ids(found) == ["node-cordoned", "selector-multi-cluster"]


def test_wrong_cluster_and_drift():
    task = {"name": "t", "selector": {"kubernetes.io/hostname": "h100-01"}}
    _entries, found = prove([task], cluster_id="rlark-a100", expected_nodes={"t": ["a100-01"]})
    assert ids(found) == ["selector-drift", "selector-wrong-cluster"]
    _entries, found = prove([task], cluster_id="h100", expected_nodes={"t": ["h100-01"]})
    assert found == []


def test_fewer_replicas_than_matches_is_a_warning():
    _entries, found = prove([{"name": "t", "selector": {"rlinf.io/pool": "rollout"}, "replicas": 1}])
    assert [(f["id"], f["severity"]) for f in found] == [("replicas-match-mismatch", "warning")]


def test_selectors_from_job_reads_requests_and_defaults():
    job = {
        "spec": {
            "tasks": [
                {
                    "name": "actor",
                    "head": True,
                    "nodeSelector": {"a": "b"},
                    "kubernetes": {
                        "workload": {
                            "template": {
                                "spec": {
                                    "containers": [
                                        {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "4"}}},
                                        {"name": "x", "resources": {"requests": {"rlinf.io/device-arm": 1}}},
                                    ]
                                }
                            }
                        }
                    },
                }
            ]
        }
    }
    assert selectors.selectors_from_job(job) == [
        {
            "name": "actor",
            "selector": {"a": "b"},
            "replicas": 1,
            "head": True,
            "requests": {"nvidia.com/gpu": 8.0, "rlinf.io/device-arm": 1.0},
        }
    ]


# ------------------------------------------------------------ node findings name the node; own pods do not compete
def test_node_findings_carry_node_and_namespace():
    task = {"name": "t", "selector": {"rlinf.io/pool": "rollout"}, "replicas": 2, "requests": {"nvidia.com/gpu": 4}}
    _entries, found = prove([task])
    assert [(f["id"], f["namespace"], f["node"]) for f in found] == [
        ("node-insufficient-resources", "rlark-a100", "a100-03")
    ]
    _entries, found = prove([{"name": "t", "selector": {"kubernetes.io/hostname": "h100-02"}}])
    assert [(f["id"], f["namespace"], f["node"]) for f in found] == [("node-offline", "rlark-h100", "h100-02")]


def test_own_pods_are_not_counted_as_used():
    task = {"name": "t", "selector": {"rlinf.io/pool": "rollout"}, "replicas": 2, "requests": {"nvidia.com/gpu": 4}}
    # a100-03 reports 6 GPUs used; 4 of them are this Job's own pod: 2 + 4 free would not do, 6 free does.
    own = {("rlark-a100", "a100-03"): {"nvidia.com/gpu": 4}}
    entries, found = prove([task], own_used=own)
    assert found == []
    assert [m.get("own_used") for m in entries[0]["matches"]] == [None, {"nvidia.com/gpu": 4}]
    # Own usage elsewhere (another cluster's node of the same name) does not help.
    _entries, found = prove([task], own_used={("rlark-h100", "a100-03"): {"nvidia.com/gpu": 4}})
    assert [f["id"] for f in found] == ["node-insufficient-resources"]
    # What the Job holds is subtracted once, never below zero used: still short when the request exceeds allocatable.
    big = dict(task, requests={"nvidia.com/gpu": 9})
    _entries, found = prove([big], own_used={("rlark-a100", "a100-03"): {"nvidia.com/gpu": 40}})
    assert sorted(f["node"] for f in found) == ["a100-02", "a100-03"]
    assert "not counting 40" in next(f for f in found if f["node"] == "a100-03")["message"]
