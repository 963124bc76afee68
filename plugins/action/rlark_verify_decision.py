# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_verify_decision: one decision of verify, made by module_utils/verify_decision.

Wiring only, on the controller (no module is sent, nothing is read or written): the options become the owner's
arguments and the finished decision is returned with its ``refusal`` ('' when none).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import verify_decision as owner
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload
from ansible_collections.rlark.ops.plugins.plugin_utils.decision_action import DecisionAction

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()

SPEC = dict(
    phase=dict(type="str", required=True, choices=list(owner.PHASES)),
    name=dict(type="str", required=True),
    resource=dict(type="dict", default={}),
    proof=dict(type="dict", default={}),
    signals=dict(type="dict", default={}),
    mode=dict(type="str", default="normal", choices=["normal", "resume"]),
    resume_dir=dict(type="str", default=""),
    resume_step=dict(type="int", default=0),
    continuity=dict(type="dict", default={}),
    next_checkpoint=dict(type="bool", default=True),
    logs=dict(type="dict", default={}),
    submitted=dict(type="dict", default={}),
    judged=dict(type="dict", default={}),
    gate=dict(type="dict", default={}),
    verify_timeout=dict(type="raw", default=180),
    wait_msg=dict(type="str", default=""),
)


def decide(p, check_mode=False):
    """The owner's decision for ``p["phase"]`` (``p`` are the validated options, as plain data)."""
    phase, name, continuity = p["phase"], p["name"], p["continuity"] or {}
    if phase == "submitted":
        return owner.submitted(p["resource"], p["proof"], name)
    if phase == "signals":
        return owner.signals(p["signals"], p["mode"], p["resume_dir"], continuity.get("old_run"), p["resume_step"])
    if phase == "running":
        resume = dict(continuity, mode=p["mode"], resume_dir=p["resume_dir"], step=p["resume_step"])
        head_log = (p["logs"] or {}).get("head_log") or ""
        return owner.running(p["resource"], p["proof"], name, head_log, p["signals"], resume, p["next_checkpoint"])
    checks = {
        "resume_step": p["resume_step"], "next_checkpoint": p["next_checkpoint"], "timeout": p["verify_timeout"],
        "wait_msg": p["wait_msg"],
    }  # fmt: skip
    return owner.report(name, p["mode"], p["submitted"], p["judged"], p["logs"], p["gate"], checks)


class ActionModule(DecisionAction):
    SPEC = SPEC

    def decide(self, options, check_mode):
        return decide(options, check_mode)
