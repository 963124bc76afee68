# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-Job outcome a guarded stop reports to its summary (one row each)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.query import plain
from ansible_collections.rlark.ops.plugins.module_utils.stop_summary import stop_summary

# The reason of a Job whose host never reported an outcome (its checks failed before the role's rescue).
UNFINISHED = "the checks did not finish (see the failed task above)"


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


def refusal(job, reason):
    """The summary row of a Job refused before its checks: ``{job, outcome: refused, reason}``."""
    return {"job": job, "outcome": "refused", "reason": reason}


def rescued(failed_result, job, live=None, reread=None, check_mode=False):
    """The outcome of a refusal by the role's own checks (``failed_result`` is the failed task's result), told
    apart from a stop someone made meanwhile by the Job as read before (``live``, an rlark_job_info resource) and
    after (``reread``, an rlark_job_info result)."""
    failed_result, live, reread = plain(failed_result) or {}, plain(live) or {}, plain(reread) or {}
    after = ((reread.get("resources") or [{}])[0] or {}).get("job") or {}
    return refusal_outcome(
        job, failed_result.get("msg") or "failed",
        stopped_before=bool(((live.get("job") or {}).get("spec") or {}).get("stopped")),
        stopped_now=bool((after.get("spec") or {}).get("stopped")), check_mode=bool(check_mode),
        findings=failed_result.get("findings") or [],
    )  # fmt: skip


def reported(outcomes, jobs):
    """Per-Job outcomes, ``outcomes[i]`` for ``jobs[i]``; a Job that never reported one counts as refused."""
    outcomes, jobs = plain(outcomes) or [], plain(jobs) or []
    if len(outcomes) != len(jobs):
        raise ValueError("%d outcomes for %d Jobs" % (len(outcomes), len(jobs)))
    return [o if (o or {}).get("outcome") else refusal(job, UNFINISHED) for o, job in zip(outcomes, jobs)]


def summary(outcomes, jobs, unknown=()):
    """The run's summary (``stop_summary``) over the reported outcomes and a "no such Job" row per unknown name."""
    return stop_summary(reported(outcomes, jobs) + [refusal(name, "no such Job") for name in plain(unknown) or []])


__all__ = ["UNFINISHED", "outcome", "refusal", "refusal_outcome", "reported", "rescued", "summary"]
