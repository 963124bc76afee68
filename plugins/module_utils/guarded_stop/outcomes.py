# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-Job outcome a guarded stop reports to its summary (one row each)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def outcome(job, what, reason="", verdict=None, record="", identity="", findings=None, **extra):
    """``{job, outcome, reason, step, checkpoint, record, identity, findings}`` plus ``extra``."""
    verdict = verdict or {}
    out = {
        "job": job,
        "outcome": what,
        "reason": reason,
        "step": verdict.get("step"),
        "checkpoint": verdict.get("checkpoint"),
        "record": record or "",
        "identity": identity or "",
        "findings": list(findings or []),
    }
    out.update(extra)
    return out


def refusal_outcome(job, reason, stopped_before=False, stopped_now=False, check_mode=False, step=None, findings=None):
    """A refusal from the role's own checks: refused, or already stopped when someone stopped the Job meanwhile."""
    meanwhile = bool(stopped_now) and not stopped_before
    if meanwhile:
        reason = "stopped meanwhile by someone else; this run found: %s" % reason
    elif check_mode:
        reason = "would refuse: %s" % reason
    return outcome(job, "already stopped" if meanwhile else "refused", reason, {"step": step}, findings=findings)


__all__ = ["outcome", "refusal_outcome"]
