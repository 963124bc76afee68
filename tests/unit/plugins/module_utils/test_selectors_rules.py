# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Selector rules pinned where a careless change slips through (the mutants of issue 26 named in each test)."""

import json

from ansible_collections.rlark.ops.plugins.module_utils import selectors


def cr(name, ns, **labels):
    return {"metadata": {"name": name, "namespace": ns, "labels": dict(labels, **{"kubernetes.io/hostname": name})}}


# ------------------------------------------------------------------ namespace resolution (RLark's controller)
def test_resolve_namespace_takes_the_first_matching_node_and_defaults_otherwise():
    nodes = [cr("a100-01", "rlark-a100"), cr("h100-01", "rlark-h100")]
    assert selectors.resolve_namespace({"kubernetes.io/hostname": "h100-01"}, nodes) == "rlark-h100"
    # Only the first comma value resolves; a value that sorts before or after a label matches nothing.
    assert selectors.resolve_namespace({"kubernetes.io/hostname": "h100-01,a100-01"}, nodes) == "rlark-h100"
    assert selectors.resolve_namespace({"kubernetes.io/hostname": "a100-00"}, nodes) == "default"
    assert selectors.resolve_namespace({"kubernetes.io/hostname": "h100-02"}, nodes) == "default"
    assert selectors.resolve_namespace({}, nodes) == "default"
    assert selectors.resolve_namespace(None, nodes) == "default"
    # A matching Node without a namespace resolves to default too.
    assert selectors.resolve_namespace({"kubernetes.io/hostname": "x"}, [{"metadata": {"labels": {}}}]) == "default"


def test_equality_match_is_exact_not_ordered():
    assert selectors.matches({"k": "b"}, {"k": "b"}) is True
    assert selectors.matches({"k": "a"}, {"k": "b"}) is False
    assert selectors.matches({"k": "c"}, {"k": "b"}) is False
    assert selectors.matches(None, {"k": "b"}) is False
    assert selectors.matches(None, {}) is True


# ------------------------------------------------------------------ static findings and their messages
def test_empty_value_is_its_own_finding():
    found = selectors.static_selector_findings({"rlinf.io/pool": ""}, "spec.tasks[0].nodeSelector")
    assert [(f["id"], f["path"], f["message"]) for f in found] == [
        (
            "selector-empty-value",
            "spec.tasks[0].nodeSelector[rlinf.io/pool]",
            "Selector key rlinf.io/pool has an empty value.",
        )
    ]
    assert [f["id"] for f in selectors.static_selector_findings({"rlinf.io/pool": None}, "p")] == [
        "selector-empty-value"
    ]


def test_cr_only_key_message_names_the_key():
    found = selectors.static_selector_findings({"rlark.io/cluster-id": "rlark-a100"}, "p")
    assert [f["message"] for f in found] == [
        "Selector key rlark.io/cluster-id exists only on RLark's Node CR, not on the data-plane node: "
        "the pod would stay unschedulable."
    ]


def test_whitespace_message_quotes_the_first_value_as_written():
    found = selectors.whitespace_findings({"kubernetes.io/hostname": " a100-01,a100-02"}, "p")
    assert [(f["id"], f["path"]) for f in found] == [("selector-whitespace", "p[kubernetes.io/hostname]")]
    assert "resolves the cluster from ' a100-01' as written" in found[0]["message"]
    assert selectors.whitespace_findings({"k": "a,b"}, "p") == []
    assert [f["id"] for f in selectors.whitespace_findings({"k": "a, b"}, "p")] == ["selector-whitespace"]


# ------------------------------------------------------------------ drift and per-node capacity
def test_drift_when_the_recorded_list_has_a_node_that_no_longer_matches():
    task = {"name": "t", "selector": {"rlinf.io/pool": "p"}, "replicas": 1}
    nodes = [dict(cr("a", "rlark-x", **{"rlinf.io/pool": "p"}), status={"phase": "Online"})]
    _entry, found = selectors.prove_task(task, nodes, 0, expected_nodes=["a", "b"])
    assert [f["id"] for f in found] == ["selector-drift"]
    _entry, found = selectors.prove_task(task, nodes, 0, expected_nodes=["a"])
    assert found == []


def test_a_zero_request_does_not_hide_a_later_resource_that_does_not_fit():
    node = dict(
        cr("a", "rlark-x", **{"rlinf.io/pool": "p"}),
        status={"phase": "Online", "allocatable": {"nvidia.com/gpu": "8"}, "used": {}},
    )
    task = {"name": "t", "selector": {"rlinf.io/pool": "p"}, "replicas": 1}
    task["requests"] = {"amd.com/gpu": 0, "nvidia.com/gpu": 16}
    _entry, found = selectors.prove_task(task, [node], 0)
    assert [(f["id"], f["node"]) for f in found] == [("node-insufficient-resources", "a")]


def test_annotation_key_message_and_multivalue_message_name_key_and_first_value():
    found = selectors.static_selector_findings({"rlark.io/gpu-model": "A100"}, "p")
    assert [f["message"] for f in found] == [
        "Selector key rlark.io/gpu-model is an annotation on RLark Nodes, not a label: it matches nothing."
    ]
    found = selectors.static_selector_findings({"rlinf.io/pool": "rollout,head"}, "p")
    assert [f["id"] for f in found] == ["selector-multivalue"]
    assert "resolves the cluster from 'rollout' only" in found[0]["message"]


# ------------------------------------------------------------------ the placement rule (agent side)
def test_placement_matches_needs_every_key_with_one_of_its_values():
    assert selectors.placement_matches({"k": "b"}, {"k": "a, b"}) is True
    assert selectors.placement_matches({"k": "x"}, {"k": "a,b"}) is False
    assert selectors.placement_matches({"j": "a"}, {"k": "a"}) is False
    assert selectors.placement_matches(None, {"k": "a"}) is False
    assert selectors.placement_matches({"k": "a"}, {}) is True


def test_cluster_namespace_spellings():
    assert selectors.cluster_namespace("a100") == "rlark-a100"
    assert selectors.cluster_namespace("rlark-a100") == "rlark-a100"
    assert selectors.cluster_namespace("default") == "default"
    assert selectors.cluster_namespace("") is None and selectors.cluster_namespace(None) is None


def test_accelerators_are_nvidia_any_vendor_gpu_and_rlinf_devices_only():
    template = {
        "spec": {
            "containers": [
                {
                    "resources": {
                        "requests": {"amd.com/gpu": "2", "nvidia.com/gpu": "1", "rlinf.io/device-npu": 4},
                        "limits": {"pods": "1", "rlark.io/x": "3", "cpu": "8", "nvidia.com/gpu": "9"},
                    }
                },
                {"resources": {"limits": {"nvidia.com/gpu": "lots"}}},
            ]
        }
    }
    # requests win over limits; a quantity that is not a number counts as nothing.
    assert selectors.worker_requests(template) == {
        "amd.com/gpu": 2.0,
        "nvidia.com/gpu": 1.0,
        "rlinf.io/device-npu": 4.0,
    }


# ------------------------------------------------------------------ proof: verdicts and boundaries
def online(name, ns, pool="p", alloc=None, used=None, spec=None):
    node = cr(name, ns, **{"rlinf.io/pool": pool})
    node["status"] = {"phase": "Online", "allocatable": alloc or {}, "used": used or {}}
    if spec is not None:
        node["spec"] = spec
    return node


def prove1(task, nodes, **kw):
    task = dict({"name": "t", "selector": {"rlinf.io/pool": "p"}, "replicas": len(nodes)}, **task)
    entry, found = selectors.prove_task(task, nodes, 0, **kw)
    return entry, [(f["id"], f["severity"]) for f in found]


def test_ok_is_false_with_an_error_and_true_with_only_a_warning():
    nodes = [online("a", "rlark-x"), online("b", "rlark-x")]
    entry, found = prove1({"replicas": 1}, nodes)
    assert (entry["ok"], found) == (True, [("replicas-match-mismatch", "warning")])
    entry, found = prove1({"replicas": 3}, nodes)
    assert (entry["ok"], found) == (False, [("replicas-match-mismatch", "error")])


def test_more_replicas_than_nodes_is_an_error_that_says_pods_stay_pending():
    _entry, found = selectors.prove_task(
        {"name": "t", "selector": {"rlinf.io/pool": "p"}, "replicas": 2}, [online("a", "rlark-x")], 0
    )
    assert [(f["id"], f["severity"]) for f in found] == [("replicas-match-mismatch", "error")]
    assert "some pods stay Pending" in found[0]["message"]


def test_replica_count_is_compared_by_value_even_past_small_ints():
    nodes = [online("n%03d" % i, "rlark-x") for i in range(300)]
    entry, found = prove1({"replicas": 300}, nodes)
    assert (entry["count"], found) == (300, [])


def test_nodes_decoded_from_json_are_matched_by_value():
    # The API's JSON gives every node its own string objects: equal namespaces and phases, not identical.
    nodes = json.loads(json.dumps([online("a", "rlark-x"), online("b", "rlark-x")]))
    entry, found = prove1({}, nodes)
    assert (entry["count"], found) == (2, [])


def test_a_head_task_must_match_exactly_one_node_and_run_exactly_one_replica():
    _entry, found = prove1({"head": True, "replicas": 1}, [])
    assert found == [("selector-no-match", "error"), ("head-match-count", "error")]
    _entry, found = prove1({"head": True, "replicas": 0}, [online("a", "rlark-x")])
    assert found == [("head-replicas", "error")]


def test_any_phase_but_online_is_offline_and_a_node_without_spec_is_schedulable():
    for phase in ("Unknown", "Pending", "Offline"):
        node = online("a", "rlark-x")
        node["status"]["phase"] = phase
        assert prove1({}, [node])[1] == [("node-offline", "error")], phase
    node = online("a", "rlark-x")
    node.pop("spec", None)
    assert prove1({}, [node])[1] == []
    assert prove1({}, [online("a", "rlark-x", spec={"unschedulable": True})])[1] == [("node-cordoned", "error")]


def test_only_the_first_comma_value_resolves_the_cluster():
    nodes = [online("a", "rlark-x", pool="a"), online("b", "rlark-y", pool="b")]
    entry, found = selectors.prove_task({"name": "t", "selector": {"rlinf.io/pool": "a,b"}, "replicas": 1}, nodes, 0)
    assert (entry["clusters"], entry["cluster"]) == (["rlark-x"], "rlark-x")
    assert [f["id"] for f in found] == ["selector-multivalue"]


def test_wrong_cluster_is_judged_on_the_first_cluster_only():
    nodes = [online("a", "rlark-x"), online("a", "rlark-y")]
    _entry, found = prove1({"replicas": 1}, nodes, cluster_id="y")
    assert [i for i, _s in found] == ["selector-multi-cluster", "selector-wrong-cluster"]
    _entry, found = selectors.prove_task({"name": "t", "selector": {"rlinf.io/pool": "p"}}, nodes, 0, cluster_id="y")
    wrong = [f for f in found if f["id"] == "selector-wrong-cluster"]
    assert wrong[0]["hint"] == "Use the admin-approved selector for rlark-y."


# Capacity boundaries: a request of exactly what is free fits, one more does not; zero and negative
# requests are never checked, even on an over-committed node; a resource missing from used is 0 used,
# missing from allocatable is 0 allocatable.
def gpus(request, alloc=None, used=None):
    node = online("a", "rlark-x", alloc=alloc, used=used)
    return prove1({"requests": {"nvidia.com/gpu": request}}, [node])[1]


def test_request_equal_to_free_fits_and_one_more_does_not():
    assert gpus(7, alloc={"nvidia.com/gpu": "8"}, used={"nvidia.com/gpu": "1"}) == []
    assert gpus(8, alloc={"nvidia.com/gpu": "8"}, used={"nvidia.com/gpu": "1"}) == [
        ("node-insufficient-resources", "error")
    ]
    assert gpus(1, alloc={"nvidia.com/gpu": "8"}, used={"nvidia.com/gpu": "8"}) == [
        ("node-insufficient-resources", "error")
    ]


def test_zero_and_negative_requests_are_not_checked_even_when_over_committed():
    over = {"alloc": {"nvidia.com/gpu": "8"}, "used": {"nvidia.com/gpu": "10"}}
    assert gpus(0, **over) == []
    assert gpus(-1, **over) == []
    assert gpus(1, **over) == [("node-insufficient-resources", "error")]


def test_missing_used_is_zero_and_missing_allocatable_is_zero():
    assert gpus(8, alloc={"nvidia.com/gpu": "8"}) == []
    node = online("a", "rlark-x")
    _entry, found = selectors.prove_task(
        {"name": "t", "selector": {"rlinf.io/pool": "p"}, "replicas": 1, "requests": {"amd.com/gpu": 1}}, [node], 0
    )
    assert [f["id"] for f in found] == ["node-insufficient-resources"]
    assert found[0]["message"].startswith("Node rlark-x/a has 0 amd.com/gpu free")
