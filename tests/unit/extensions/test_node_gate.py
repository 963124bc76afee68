# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NodeGate: the event source finds a Node's inventory host and gates hostPath checkpoints there.

The run on the host itself is exercised by tests/integration/test_eda_rulebook.py (ansible-rulebook).
"""

import os

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.job_events import CheckpointPoller
from ansible_collections.rlark.ops.plugins.module_utils.node_gate import NodeGate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
INVENTORY = os.path.join(ROOT, "examples", "sandbox", "inventory.yml")


def test_a_node_maps_to_its_inventory_host_and_the_path_to_its_root():
    gate = NodeGate(INVENTORY)
    assert gate.host_for("a100-01") == "node-a100-01"
    assert gate.host_for("no-such-node") is None
    args = gate.module_args("/data/ckpt/", {"quiet_seconds": 1, "runner": "embodied", "step": "latest"})
    assert args == {
        "path": "{{ rlark_node_root | default('') }}/data/ckpt",
        "quiet_seconds": 1,
        "runner": "embodied",
        "step": "latest",
        "fail_when_incomplete": False,
    }
    with pytest.raises(GateError, match="node no-such-node has no host in inventory"):
        gate.gate("no-such-node", "/data/ckpt", {})


def test_without_inventory_or_template_the_source_says_what_to_set():
    poller = CheckpointPoller(client=None)
    location = {"kind": "hostPath", "node": "a100-01", "host_path": "/data/ckpt"}
    with pytest.raises(GateError) as err:
        poller.judge({"metadata": {"name": "demo"}}, location)
    assert "set the source's inventory" in str(err.value) and "or host_path_template" in str(err.value)
