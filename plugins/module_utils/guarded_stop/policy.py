# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""When a guarded stop may happen: one policy, one judge.

The runbook's boundary rule: stop only when the newest checkpoint is complete by its runner's rules
(or, at ``next_checkpoint``, right after the next one is), and the "uploads finished" markers hold in
the head log read right before the patch. Every other piece (the role, the action, check mode) asks
``judge`` and never decides itself.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate_summary import summarize
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.waiting import not_ready_reason
from ansible_collections.rlark.ops.plugins.module_utils.verify import log_report

WHEN = ("now", "next_checkpoint")


class StopPolicy:
    """What a stop waits for: ``when`` (now / next_checkpoint), the save window, the next checkpoint's wait
    and the markers. ``gate_waits(latest)`` is the list of gate waits that lead to a verdict."""

    def __init__(
        self,
        when="now",
        save_window_seconds=0,
        next_checkpoint_timeout=3600,
        next_checkpoint_poll=0.25,
        done_markers=None,
        accept_truncated_logs=False,
    ):
        if when not in WHEN:
            raise ValueError("rlark_stop_when must be one of %s, not %r" % (", ".join(WHEN), when))
        self.when = when
        self.save_window_seconds = max(0.0, float(save_window_seconds or 0))
        self.next_checkpoint_timeout = max(0.0, float(next_checkpoint_timeout or 0))
        self.next_checkpoint_poll = float(next_checkpoint_poll or 0.25)
        self.done_markers = list(done_markers or [])
        self.accept_truncated_logs = bool(accept_truncated_logs)

    def first_wait(self):
        """The first gate call: at "now" the verdict itself (re-judged within the save window); at the next
        checkpoint one look at what is complete already (no wait, no integrity, no backup)."""
        if self.when == "now":
            return {"after_step": -1, "newest_complete": True, "wait_timeout": self.save_window_seconds,
                    "wait_sleep": 1.0}  # fmt: skip
        return {"after_step": -1, "newest_complete": True, "wait_timeout": 0.0, "wait_sleep": 1.0, "integrity": "off",
                "backup": None}  # fmt: skip

    def next_wait(self, first_result):
        """At the next checkpoint: the wait for a complete step newer than what ``first_result`` found."""
        latest = summarize(first_result).get("latest_complete_step")
        return {
            "after_step": -1 if latest is None else int(latest),
            "newest_complete": True,
            "wait_timeout": self.next_checkpoint_timeout,
            "wait_sleep": self.next_checkpoint_poll,
        }


def gate_verdict(result, wait):
    """``(ok, reason)`` of a gate result for the wait it answered (``after_step``, ``newest_complete``); the
    reason is the gate wait's own (``waiting.not_ready_reason``)."""
    result = result or {}
    if result.get("failed") and "complete" not in result:
        return False, result.get("msg") or "the checkpoint gate failed"
    reason = not_ready_reason(result, int(wait.get("after_step", -1)), bool(wait.get("newest_complete", True)))
    return not reason, reason


def markers_reason(markers, head_log, live=None):
    """Why the "uploads finished" markers do not allow a stop yet ('' when they all hold, or none is set)."""
    if not markers:
        return ""
    report = log_report(head_log or "", startup=markers, live=live or {})
    if report["ok"]:
        return ""
    return "Not finished yet: " + "; ".join(list(report["missing"]) + list(report["errors"]))


def judge(result, wait):
    """The verdict ``{ok, reason, step, checkpoint, gate}`` on a gate result for the wait it answered."""
    ok, reason = gate_verdict(result, wait)
    view = summarize(result or {})
    return {"ok": ok, "reason": reason, "step": view.get("step"), "checkpoint": view.get("checkpoint"), "gate": view}


__all__ = ["WHEN", "StopPolicy", "gate_verdict", "judge", "markers_reason"]
