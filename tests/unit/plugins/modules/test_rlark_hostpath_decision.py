# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rlark_hostpath_decision action: the hostPath check's plan over the inventory and its verdict over the raw
stat loop's results (owner: module_utils/placement)."""

import os
import sys
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils"))

from ansible_collections.rlark.ops.plugins.action import rlark_hostpath_decision as action_mod
from ansible_collections.rlark.ops.plugins.module_utils import placement
from test_playbook_core import HOST_MOUNT, HOST_VOL, job

PROOF = {"tasks": [{"name": "actor", "matches": ["a100-01", "ghost"]}]}
# What an inventory gives: node keys, and variables the mapping must not carry along.
HOSTVARS = {
    "n1": {"rlark_node_name": "a100-01", "rlark_node_root": "/nodes/a100-01", "secret": "x", "ansible_host": "h1"},
    "other": {"unrelated": 1},
}


def run(args, task_vars):
    task = mock.MagicMock(async_val=0, check_mode=True, diff=False)
    task.args = args
    action = action_mod.ActionModule(task, mock.MagicMock(), mock.MagicMock(), None, mock.MagicMock(), None)
    return action.run(task_vars=task_vars)


def test_plan_maps_nodes_by_the_inventory_node_keys_and_names_an_unmapped_node():
    the_job = job(mounts=HOST_MOUNT, volumes=HOST_VOL)
    result = run({"phase": "plan", "job": the_job, "proof": PROOF}, {"hostvars": HOSTVARS, "groups": {"all": ["n1"]}})
    assert result["changed"] is False and not result.get("failed") and result["refusal"] == ""
    plan = result["decision"]
    expected_hosts = {"n1": {k: v for k, v in HOSTVARS["n1"].items() if k != "secret"}, "other": {}}
    assert plan == placement.hostpath_plan(the_job, PROOF, expected_hosts, {"all": ["n1"]})
    assert [(h["host"], h["root"]) for h in plan["hosts"]] == [("n1", "/nodes/a100-01")]
    assert [(f["id"], f["severity"]) for f in plan["findings"]] == [("hostpath-node-unmapped", "error")]


def test_a_node_in_group_rlark_nodes_is_found_by_its_host_name():
    the_job = job(mounts=HOST_MOUNT, volumes=HOST_VOL)
    proof = {"tasks": [{"name": "actor", "matches": ["a100-02"]}]}
    vars_ = {"hostvars": {"a100-02": {}}, "groups": {"rlark_nodes": ["a100-02"]}}
    plan = run({"phase": "plan", "job": the_job, "proof": proof}, vars_)["decision"]
    assert [h["host"] for h in plan["hosts"]] == ["a100-02"] and plan["findings"] == []


def test_results_judge_each_host_from_the_raw_loop_and_name_an_unreachable_one():
    the_job = job(mounts=HOST_MOUNT, volumes=HOST_VOL)
    proof = {"tasks": [{"name": "actor", "matches": ["a100-01", "a100-02"]}]}
    hostvars = {"n1": {"rlark_node_name": "a100-01"}, "n2": {"rlark_node_name": "a100-02"}}
    plan = run({"phase": "plan", "job": the_job, "proof": proof}, {"hostvars": hostvars})["decision"]
    loop = [
        {"item": plan["hosts"][0], "stdout": "%s 0 0 0 0\n" % placement.MARKER, "rc": 0},
        {"item": plan["hosts"][1], "stdout": "", "rc": None, "unreachable": True, "stderr": " ssh: no route \n"},
    ]
    judged = run({"phase": "results", "plan": plan, "outputs": loop}, {})["decision"]
    assert [(f["id"], f["severity"]) for f in judged["findings"]] == [
        ("hostpath-missing", "error"),
        ("hostpath-node-unreachable", "error"),
    ]
    assert judged["findings"][1]["message"].endswith("(host n2): ssh: no route")
    assert [r["exists"] for r in judged["results"]] == [False, None]
    with_msg = dict(loop[1], msg="Failed to connect")
    unreachable = run({"phase": "results", "plan": plan, "outputs": [loop[0], with_msg]}, {})["decision"]
    assert unreachable["findings"][1]["message"].endswith(": Failed to connect")
