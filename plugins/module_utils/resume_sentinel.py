# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The silent-restart sentinel: watch a resumed Job's first steps and stop it (only it) when it restarted.

A trainer that ignores ``runner.resume_dir`` starts at step 1 and, at its first save, writes checkpoints that
look like progress. The sentinel reads the NEW Job's head log from its creation on; the first logged step
decides (continuity.restart_verdict): a counter below N+1, or the old run's step-1 metrics under the number
N+1, stops the new Job with the guarded stop patch (jobs.set_stopped: ``spec.stopped`` alone) before its first
checkpoint save. The original Job is never read for writing, let alone patched.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.rlark.ops.plugins.module_utils import continuity, jobs, verify
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import current_container, wait_for_logs

SAVE_LINES = ("Saving checkpoint at step", "saving checkpoint at iteration")


def _decision(text, resume_dir, step, old_steps):
    report = verify.resume_report(text, resume_dir, step)
    if report["scratch"] or report["failures"]:
        return {"decided": True, "finding": None, "first_step": report["first_step"], "left_to_verify": True}
    judged = continuity.restart_verdict(old_steps, report["first_step"], text, step)
    return dict(judged, first_step=report["first_step"], left_to_verify=False)


def watch(client, name, original, step, resume_dir, old_steps, read, head_pod, timeout, **opts):
    """Watch, decide, and stop ``name`` on a restart: the sentinel's result (see the module's RETURN)."""
    if name == original:
        raise ValueError("the sentinel watches the new Job, never the original %s" % original)
    clock = opts.get("clock", time.monotonic)
    started = clock()
    seen = {}

    def decided(text):
        text = current_container(text)
        seen["decision"] = _decision(text, resume_dir, step, old_steps)
        seen["text"] = text
        if seen["decision"]["first_step"] is not None and "first_step_seen_after" not in seen:
            seen["first_step_seen_after"] = round(clock() - started, 3)
        return seen["decision"]["decided"]

    logs, timed_out = wait_for_logs(
        read, head_pod, decided, timeout, opts.get("interval", 0.25), clock, opts.get("sleep", time.sleep)
    )
    decision = seen.get("decision") or _decision(current_container(logs.get(head_pod, "")), resume_dir, step, [])
    text = seen.get("text", "")
    result = {
        "changed": False,
        "stopped": False,
        "decided": decision["decided"],
        "timed_out": timed_out,
        "first_step": decision["first_step"],
        "expected_first_step": int(step) + 1,
        "first_step_seen_after_seconds": seen.get("first_step_seen_after"),
        "findings": [decision["finding"]] if decision.get("finding") else [],
        "saved_before_decision": any(s in text for s in SAVE_LINES),
        "original_job": original,
    }
    if decision.get("finding"):
        stop = jobs.set_stopped(client, name, True, check_mode=opts.get("check_mode", False))
        result.update(changed=stop["changed"], stopped=True, stopped_after_seconds=round(clock() - started, 3))
    return result


__all__ = ["watch"]
