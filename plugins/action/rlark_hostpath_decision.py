# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_hostpath_decision: the hostPath check's plan and verdict, made by
module_utils/placement (``hostpath_plan``, ``hostpath_results``).

Wiring only, on the controller (no module is sent, nothing is read or written): the Job, its proof and the
inventory's node keys (``hostvars``, ``groups``) become the plan; the ``raw`` loop's results over the plan's hosts
become the per-check results and findings.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import placement
from ansible_collections.rlark.ops.plugins.module_utils.query import plain
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload
from ansible_collections.rlark.ops.plugins.plugin_utils.decision_action import DecisionAction
from ansible_collections.rlark.ops.plugins.plugin_utils.inventory_hosts import inventory_hosts

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()

PHASES = ("plan", "results")

SPEC = dict(
    phase=dict(type="str", required=True, choices=list(PHASES)),
    job=dict(type="dict", default={}),
    proof=dict(type="dict", default={}),
    plan=dict(type="dict", default={}),
    outputs=dict(type="list", elements="dict", default=[]),
)


def raw_outputs(loop_results):
    """host -> ``{stdout, rc, msg}`` from the ``results`` of a ``raw`` task looped over the plan's hosts."""
    outputs = {}
    for r in loop_results or []:
        item = r.get("item") or {}
        outputs[item.get("host")] = {
            "stdout": r.get("stdout") or "",
            "rc": r.get("rc"),
            "msg": r.get("msg") or (r.get("stderr") or "").strip(),
        }
    return outputs


def decide(p, hostvars=None, groups=None):
    """The owner's decision for ``p["phase"]`` (``p`` are the validated options, as plain data)."""
    if p["phase"] == "plan":
        return placement.hostpath_plan(p["job"], p["proof"], inventory_hosts(hostvars), plain(dict(groups or {})))
    return placement.hostpath_results(p["plan"], raw_outputs(p["outputs"]))


class ActionModule(DecisionAction):
    SPEC = SPEC

    def decide(self, options, check_mode):
        return decide(options, self.task_vars.get("hostvars"), self.task_vars.get("groups"))
