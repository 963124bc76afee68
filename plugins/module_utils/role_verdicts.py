# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verdicts the roles act on, computed here instead of in multi-line Jinja (the filters only wrap these)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import gate_summary
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, finding


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


def resume_override_findings(view, resume_dir, name):
    """The resume-override finding when a resume copy does not carry exactly the two intended overrides."""
    view = view or {}
    if view.get("resume_dirs") == [resume_dir] and view.get("experiment") == name:
        return []
    message = "The copy must carry exactly one runner.resume_dir=%s and %s=%s, it has %s and %s" % (
        resume_dir,
        view.get("experiment_key"),
        name,
        json.dumps(view.get("resume_dirs")),
        json.dumps(view.get("experiment")),
    )
    return [finding("resume-override", message, ERROR, path="spec.tasks[0].runScript")]
