# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verdicts the roles act on, computed here instead of in multi-line Jinja (the filters only wrap these)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import gate_summary


def verify_report(
    job,
    mode,
    submitted,
    running,
    signals,
    logs,
    resume=None,
    next_gate=None,
    resume_step=0,
    need_next_checkpoint=False,
):
    """The verify record's report and its verdict ``ok``.

    ``running`` is the job_state result, ``signals`` the log report, ``logs`` the job_logs lookup result;
    in resume mode ``resume`` is the resume report and ``next_gate`` the gate result of the first checkpoint
    after the resume, which must be complete and newer than ``resume_step`` when ``need_next_checkpoint``.
    """
    running, signals, resume = running or {}, signals or {}, resume or {}
    nxt = gate_summary.summarize(next_gate or {})
    errors = [f for f in running.get("findings") or [] if f.get("severity") == "error"]
    ok = bool(running.get("running")) and bool(signals.get("ok")) and not errors
    if mode == "resume":
        newest = nxt.get("latest_complete_step")
        moved_on = (-1 if newest is None else int(newest)) > int(resume_step or 0)
        ok = ok and bool(resume.get("ok")) and (not need_next_checkpoint or moved_on)
    return {
        "job": job,
        "mode": mode,
        "submitted": bool((submitted or {}).get("submitted")),
        "running": bool(running.get("running")),
        "observed": running.get("observed") or {},
        "findings": list(running.get("findings") or []) + list(resume.get("findings") or []),
        "signals": signals,
        "log_timed_out": bool((logs or {}).get("timed_out")),
        "log_waited_seconds": (logs or {}).get("waited_seconds"),
        "resume": resume,
        "next_checkpoint": nxt,
        "ok": ok,
    }


def verify_submitted_refusal(state, name):
    """Why verify stops before the logs ('' when the Job is submitted as designed); a missing Job is called missing."""
    state = state or {}
    if state.get("submitted"):
        return ""
    findings = list(state.get("findings") or [])
    if any(f.get("id") == "verify-job-missing" for f in findings):
        return (
            "Job %s does not exist, so there is nothing to verify: check the name (rlark_job_name for verify.yml), "
            "or submit the Job first with migrate.yml (rlark_launch_manifest, rlark_deployment_profile)." % name
        )
    return "Job %s exists but is not submitted as designed: %s" % (
        name,
        "; ".join("%s (%s)" % (f.get("message"), f.get("path")) for f in findings) or "see the findings",
    )


def _pods_line(observed):
    """``actor 1/1 Running on a100-01; rollout 0/2 (Pending)`` from job_state's ``observed``."""
    parts = []
    for task, info in sorted((observed or {}).items()):
        phases = info.get("pod_phases") or []
        running = sum(1 for p in phases if p == "Running")
        other = sorted({p or "no phase" for p in phases if p != "Running"})
        nodes = [n for n in info.get("nodes") or [] if n]
        parts.append(
            "%s %d/%d Running%s%s"
            % (
                task,
                running,
                info.get("replicas", 0),
                " (%s)" % ", ".join(other) if other else "",
                " on %s" % ", ".join(nodes) if nodes else "",
            )
        )
    return "; ".join(parts) or "no task observed"


def verify_failure(report, timeout, waited=None, wait_msg=""):
    """The verify failure message ('' when ``report.ok``): what does not hold, and what to do about it.

    Pods and start-up signals are told apart: a Job whose pods run as designed is not called "not running".
    """
    report = report or {}
    if report.get("ok"):
        return ""
    name, signals = report.get("job"), report.get("signals") or {}
    within = "within %s s" % (waited if waited is not None else timeout)
    if report.get("running"):
        head = "Job %s is submitted and its pods run as designed (%s), but it is not verified" % (
            name,
            _pods_line(report.get("observed")),
        )
    else:
        head = "Job %s is submitted but its pods do not run as designed %s: %s" % (
            name,
            within,
            _pods_line(report.get("observed")),
        )
    parts = [head + "."]
    if signals.get("missing"):
        parts.append(
            "Start-up signals not seen in the head's log %s: %s%s."
            % (
                within,
                "; ".join(signals["missing"]),
                " (seen: %s)" % "; ".join(signals["seen"]) if signals.get("seen") else "",
            )
        )
    if signals.get("failures"):
        parts.append(
            "Failure lines in the head's log: %s." % " | ".join(f.get("line", "") for f in signals["failures"])
        )
    if signals.get("errors"):
        parts.append("Signal patterns that cannot be used: %s." % "; ".join(signals["errors"]))
    if report.get("mode") == "resume" and not (report.get("resume") or {}).get("ok", True):
        parts.append("The resume is not confirmed by the head's log (see the findings).")
    if len(parts) == 1:
        parts.append("What does not hold is in the findings below.")
    if wait_msg:
        parts.append(wait_msg.rstrip(".") + ".")
    parts.append(
        "Raise rlark_verify_wait_timeout (now %s s) when the start-up is only slow; otherwise fix what the findings "
        "and failure lines name and submit again." % timeout
    )
    return " ".join(parts)
