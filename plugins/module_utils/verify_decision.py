# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify role's decisions, in one owner (the role only wires them, through ``rlark_verify_decision``).

- :func:`submitted`: was the Job submitted as designed, and which task is the head whose log is read;
- :func:`signals`: what the head-log wait looks for and stops on (start-up and failure signals, and in resume mode
  the resume's own patterns);
- :func:`running`: the Job's state, the signal report, the resume report, and whether the next checkpoint is gated;
- :func:`report`: the verify record's report and, when it is not verified, the failure message.

The verdicts themselves are :mod:`verify` and :mod:`role_verdicts`; this module puts them in the runbook's order.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import findings as findings_core
from ansible_collections.rlark.ops.plugins.module_utils import jobspec, review, role_verdicts, verify
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import clusters_of

PHASES = ("submitted", "signals", "running", "report")
RESUME = "resume"


def _table(found):
    return findings_core.table(review.safe(found)) if found else ""


def submitted(resource, proof, name):
    """``{state, head_task, clusters, refusal}``: a missing Job, one not submitted as designed or one without a head
    task is refused before the logs are read."""
    resource = resource or {}
    state = verify.job_state(resource, proof or {}, name)
    head = jobspec.head_task(resource.get("job") or {}).get("name") or ""
    refusal = role_verdicts.verify_submitted_refusal(state, name)
    if refusal:
        # A missing Job is said in the message itself: the table shows only what else was found.
        other = [f for f in state.get("findings") or [] if f.get("id") != "verify-job-missing"]
        refusal = (refusal + " " + _table(other)).strip()
    elif not head:
        refusal = (
            "Job %s has no head task (no spec.tasks[] with head: true), so there is no Ray head log to verify: mark "
            "one task head: true in the launch manifest (rlark_launch_manifest) and submit it again." % name
        )
    return {"state": state, "head_task": head, "clusters": clusters_of(resource), "refusal": refusal}


def signals(manifest_signals, mode, resume_dir, old_run, step):
    """``{wait_for, stop_on}``: the regexes of the head-log wait."""
    manifest_signals = manifest_signals or {}
    wait_for = verify.signal_regexes(manifest_signals.get("startup") or [])
    stop_on = verify.signal_regexes(manifest_signals.get("failure") or [])
    if mode == RESUME:
        patterns = verify.resume_patterns(resume_dir, old_run, int(step or 0))
        wait_for += patterns["wait_for"]
        stop_on += patterns["stop_on"]
    return {"wait_for": wait_for, "stop_on": stop_on}


def running(resource, proof, name, head_log, manifest_signals, resume, next_checkpoint):
    """``{running, signals, resume, gated}`` once the Job was read again.

    ``resume`` is ``{mode, resume_dir, step, old_run, tolerance, ignore}``; ``gated`` says whether the first
    checkpoint after the resume is to be gated (resume mode, asked for, and the log confirmed the resume).
    """
    resource, manifest_signals, resume = resource or {}, manifest_signals or {}, resume or {}
    live = {k: resource.get(k) or ({} if k == "job" else []) for k in ("job", "tasks", "pods")}
    signal_report = verify.log_report(
        head_log or "",
        manifest_signals.get("startup") or [],
        manifest_signals.get("failure") or [],
        manifest_signals.get("normal") or [],
        live,
    )
    resume_report = {}
    if resume.get("mode") == RESUME:
        resume_report = verify.resume_report(
            head_log or "", resume.get("resume_dir"), resume.get("step"), resume.get("old_run"),
            resume.get("tolerance"), resume.get("ignore"),
        )  # fmt: skip
    gated = resume.get("mode") == RESUME and bool(next_checkpoint) and bool(resume_report.get("ok"))
    return {
        "running": verify.job_state(resource, proof or {}, name),
        "signals": signal_report,
        "resume": resume_report,
        "gated": gated,
    }


def report(name, mode, submitted_state, judged, logs, gate, checks):
    """``{report, refusal}``: the verify record's report and, when not verified, what does not hold.

    ``judged`` is :func:`running`'s result; ``gate`` the checkpoint gate's result (used only when ``judged.gated``);
    ``checks`` is ``{resume_step, next_checkpoint, timeout, wait_msg}``.
    """
    logs, checks = logs or {}, checks or {}
    made = role_verdicts.verify_report(
        name, mode, submitted_state, judged.get("running"), judged.get("signals"), logs,
        resume=judged.get("resume") or {}, next_gate=(gate or {}) if judged.get("gated") else {},
        resume_step=int(checks.get("resume_step") or 0), need_next_checkpoint=bool(checks.get("next_checkpoint")),
    )  # fmt: skip
    refusal = ""
    if not made["ok"]:
        waited = logs.get("waited_seconds") if logs.get("timed_out") else None
        refusal = role_verdicts.verify_failure(made, checks.get("timeout"), waited, checks.get("wait_msg") or "")
        refusal = (refusal + " " + _table(made["findings"])).strip()
    return {"report": made, "refusal": refusal}
