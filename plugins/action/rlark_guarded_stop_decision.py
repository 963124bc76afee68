# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_guarded_stop_decision: the guarded-stop run's decisions around the stops,
made by module_utils/guarded_stop (``selection.select``, ``outcomes.rescued``, ``outcomes.summary``).

Wiring only, on the controller (no module is sent, nothing is read or written): the options become the owner's
arguments and the finished decision is returned. A selection that must stop the run fails this task, its ``msg``
the one sentence that says why.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop import outcomes, selection
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload
from ansible_collections.rlark.ops.plugins.plugin_utils.decision_action import DecisionAction

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()

PHASES = ("select", "refused", "summary")

SPEC = dict(
    phase=dict(type="str", required=True, choices=list(PHASES)),
    candidates=dict(type="list", elements="dict", default=[]),
    jobs=dict(type="list", elements="str", default=[]),
    selectors=dict(type="list", elements="str", default=[]),
    query=dict(type="str", default=""),
    allow_empty=dict(type="bool", default=False),
    name=dict(type="str", default=""),
    failed=dict(type="dict", default={}),
    live=dict(type="dict", default={}),
    reread=dict(type="dict", default={}),
    outcomes=dict(type="list", elements="dict", default=[]),
    unknown=dict(type="list", elements="str", default=[]),
)


def decide(p, check_mode=False):
    """The owner's decision for ``p["phase"]`` (``p`` are the validated options, as plain data)."""
    if p["phase"] == "select":
        return selection.select(p["candidates"], p["jobs"], p["selectors"], p["query"], p["allow_empty"])
    if p["phase"] == "refused":
        return outcomes.rescued(p["failed"], p["name"], p["live"], p["reread"], check_mode)
    return outcomes.summary(p["outcomes"], p["jobs"], p["unknown"])


class ActionModule(DecisionAction):
    SPEC = SPEC
    FAILING_PHASES = ("select",)

    def decide(self, options, check_mode):
        return decide(options, check_mode)
