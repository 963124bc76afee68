# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hostPath placement pinned where a careless change slipped through the unit suite (issue 26's mutants)."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import placement
from test_playbook_core import HOST_MOUNT, HOST_VOL, job

MARK = placement.MARKER


def as_ansible_gives_it(value):
    """Hostvars and proofs reach the plugins decoded from JSON: equal strings, never the same objects."""
    return json.loads(json.dumps(value))


# ------------------------------------------------------------------ which host holds a Node
def test_a_cluster_given_by_id_matches_a_host_pinned_to_its_namespace():
    hostvars = {"h": {"rlark_node_name": "dual-01", "rlark_node_cluster": "rlark-h100"}}
    assert placement.host_for_node({"name": "dual-01", "cluster": "h100"}, hostvars, {}) == "h"
    assert placement.host_for_node({"name": "dual-01", "cluster": "a100"}, hostvars, {}) is None


def test_node_names_are_compared_by_value():
    hostvars = as_ansible_gives_it({"h": {"rlark_node_name": "a100-01"}})
    node = as_ansible_gives_it({"name": "a100-01"})
    assert placement.host_for_node(node, hostvars, {}) == "h"


def test_matches_or_nodes_name_a_tasks_nodes():
    proof = {"tasks": [{"name": "a", "nodes": ["n1"]}, {"task": "b", "matches": [{"name": "n2"}]}, {"name": "c"}]}
    assert placement.matched_nodes_by_task(proof) == {"a": ["n1"], "b": [{"name": "n2"}], "c": []}


# ------------------------------------------------------------------ the plan
def two_volumes():
    mounts = [{"name": "cfg", "mountPath": "/cfg"}, dict(HOST_MOUNT[0])]
    volumes = [{"name": "cfg", "configMap": {"name": "c"}}, dict(HOST_VOL[0])]
    return job(mounts=mounts, volumes=volumes)


def test_a_volume_without_hostpath_does_not_end_the_list():
    assert [(v["volume"], v["path"]) for v in placement.hostpath_volumes(two_volumes())] == [("data", "/data/rlinf")]


def test_an_unmapped_node_does_not_stop_the_plan_for_the_next_and_names_the_fix():
    proof = {"tasks": [{"name": "actor", "matches": ["ghost", "a100-01"]}]}
    plan = placement.hostpath_plan(
        job(mounts=HOST_MOUNT, volumes=HOST_VOL), proof, {"n1": {"rlark_node_name": "a100-01"}}, {}
    )
    assert [h["host"] for h in plan["hosts"]] == ["n1"]
    assert [f["hint"] for f in plan["findings"]] == [
        "Add a host with rlark_node_name: ghost (or put it in group rlark_nodes)."
    ]


# ------------------------------------------------------------------ reading the stat script's output
def test_a_check_without_a_result_does_not_stop_the_next_on_that_host():
    mounts = [dict(HOST_MOUNT[0]), {"name": "ckpt", "mountPath": "/ckpt"}]
    volumes = [dict(HOST_VOL[0]), {"name": "ckpt", "hostPath": {"path": "/ckpt"}}]
    plan = placement.hostpath_plan(
        job(mounts=mounts, volumes=volumes),
        {"tasks": [{"name": "actor", "matches": ["a100-01"]}]},
        {"n1": {"rlark_node_name": "a100-01"}},
        {},
    )
    assert [c["path"] for c in plan["hosts"][0]["checks"]] == ["/data/rlinf", "/ckpt"]
    res = placement.hostpath_results(plan, {"n1": {"stdout": "%s 1 0 0 0\n" % MARK}})
    assert [(f["id"], f["path"]) for f in res["findings"]] == [
        ("hostpath-node-unreachable", "spec.tasks[actor].volumes[data]"),
        ("hostpath-missing", "spec.tasks[actor].volumes[ckpt]"),
    ]


def one_line(stdout):
    plan = placement.hostpath_plan(
        job(mounts=HOST_MOUNT, volumes=HOST_VOL),
        {"tasks": [{"name": "actor", "matches": ["a100-01"]}]},
        {"n1": {"rlark_node_name": "a100-01"}},
        {},
    )
    res = placement.hostpath_results(plan, {"n1": {"stdout": stdout}})
    return [f["id"] for f in res["findings"]], res["results"][0]["exists"]


def test_only_the_markers_five_word_line_counts():
    # Another line of five words (a login banner, a shell warning) is not a result, before or after it.
    assert one_line("%s 0 0 0 0\nbanner 0 1 1 1\n" % MARK) == (["hostpath-missing"], False)
    assert one_line("banner 0 1 1 1\n") == (["hostpath-node-unreachable"], None)
    # A cut-off or run-on marker line is no result either.
    assert one_line("%s 0 1 1\n" % MARK) == (["hostpath-node-unreachable"], None)
    assert one_line("%s 0 1 1 1 1\n" % MARK) == (["hostpath-node-unreachable"], None)
    assert one_line("%s 0 1 1 1\n" % MARK) == ([], True)


def test_only_1_means_yes():
    # Fail closed: whatever else stands in a field (a garbled line) is no, never yes.
    assert one_line("%s 0 2 1 1\n" % MARK) == (["hostpath-missing"], False)
    assert one_line("%s 0 1 2 1\n" % MARK) == (["hostpath-not-directory"], True)


def test_a_five_word_line_sorting_before_the_marker_is_not_a_result_either():
    assert one_line("%s 0 0 0 0\nALERT 0 1 1 1\n" % MARK) == (["hostpath-missing"], False)


def test_a_read_write_mount_in_an_init_container_makes_the_path_writable():
    task_job = job(volumes=HOST_VOL)
    spec = task_job["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]
    spec["initContainers"] = [{"name": "prep", "volumeMounts": [dict(HOST_MOUNT[0])]}]
    spec["containers"][0]["volumeMounts"] = [dict(HOST_MOUNT[0], readOnly=True)]
    assert [v["writable"] for v in placement.hostpath_volumes(task_job)] == [True]


def test_the_plans_unmapped_nodes_stay_among_the_results_findings():
    proof = {"tasks": [{"name": "actor", "matches": ["ghost"]}]}
    plan = placement.hostpath_plan(job(mounts=HOST_MOUNT, volumes=HOST_VOL), proof, {}, {})
    res = placement.hostpath_results(plan, {})
    assert [f["id"] for f in res["findings"]] == ["hostpath-node-unmapped"]
