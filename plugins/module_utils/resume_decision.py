# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resume's decisions, in one owner (the ``resume`` role only wires them, through ``rlark_resume_decision``).

- :func:`plan`: is the original resumable, which step, is this run an earlier resume (idempotence), where the
  original's checkpoints are, and the integrity manifest its stop records keep for the step;
- :func:`backup`: may a resume from the backup start (a hostPath checkpoint, another node, the step's integrity
  manifest, a backup the new node can read);
- :func:`checkpoint`: may the gated checkpoint be used, and the directory the new Job resumes from and its name;
- :func:`copy`: the copy's review (as a new submission, apart from the two intended overrides) and the output
  location the new Job writes to (its own directory);
- :func:`tree`: the original-tree proof (the new Job left the original run's checkpoints alone);
- :func:`outcome`: what the role reports.

Every refusal is a sentence naming what to set; the finding ids (``resume-override``, ``integrity-*``,
``resume-original-changed``, the review's) are the ones the rules that made them give. Plain Python.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.rlark.ops.plugins.module_utils import findings as findings_core
from ansible_collections.rlark.ops.plugins.module_utils import resume, review
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dir_guard, gate_summary, location
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_restore import resume_problem
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, finding
from ansible_collections.rlark.ops.plugins.module_utils.manifest import parse_text

PHASES = ("plan", "backup", "checkpoint", "copy", "tree", "outcome")
STOP_RECORD = "stop.yml"


def source_refusal(name, resource):
    """Why the original cannot be resumed ('' when it exists and is stopped: two runs would write the same steps)."""
    job = (resource or {}).get("job")
    if not job:
        return "Job %s does not exist." % name
    if not (job.get("spec") or {}).get("stopped"):
        return "Job %s is not stopped: stop it with a guarded stop first." % name
    return ""


def stop_records(records_dir, job):
    """The stop records of ``job`` (``<records_dir>/<job>/<run>/stop.yml``), oldest run first, as data."""
    base = os.path.join(os.path.expanduser(records_dir), job)
    paths = []
    for run in os.listdir(base) if os.path.isdir(base) else []:
        path = os.path.join(base, run, STOP_RECORD)
        if os.path.isfile(path):
            paths.append(path)
    records = []
    for path in sorted(paths):
        with open(path) as handle:
            records.append(parse_text(handle.read(), path))
    return records


def reference_manifest(records, step):
    """The integrity manifest a stop record keeps for ``step`` (the newest kept one for ``latest``), else ``{}``.

    It is the reference of integrity verify and of a resume from the backup (object storage, or
    rlark_checkpoint_integrity_store=record); without one the manifest file next to the checkpoint is.
    """
    kept = []
    for record in records or []:
        manifest = (((record or {}).get("data") or {}).get("integrity") or {}).get("manifest")
        if manifest:
            kept.append(manifest)
    wanted = "global_step_%s" % step
    chosen = next((m for m in kept if m.get("step_dir") == wanted), None)
    if chosen is None:
        chosen = kept[-1] if kept and step == "latest" else {}
    return chosen


def already_outcome(source_name, already):
    """The outcome of a run that finds its resume made already (nothing is created)."""
    return {
        "original_job": source_name,
        "new_job": already["name"],
        "step": already["step"],
        "resume_dir": already["resume_dir"],
        "created": False,
        "already": True,
        "verified": "not run (already resumed)",
        "message": "%s is already resumed as %s from step %s; nothing was created"
        % (source_name, already["name"], already["step"]),
    }


def plan(source_name, resource, earlier_jobs, step, new_name, where, records=None):
    """``{refusal, step, already, outcome, location, reference_manifest}`` before anything is gated.

    ``where`` is ``{manifest, root, object_storage}`` for locating the checkpoints; ``records`` the original's stop
    records (read only when a reference manifest is needed). ``outcome`` is set when this run is an earlier resume.
    """
    refusal = source_refusal(source_name, resource)
    decided = {"step": None, "already": None, "refusal": refusal}
    if not refusal:
        decided = resume.resume_plan(source_name, step, new_name, earlier_jobs)
    already = decided["already"]
    decided["outcome"] = already_outcome(source_name, already) if already else None
    decided["location"] = {}
    decided["reference_manifest"] = {}
    if not decided["refusal"] and not already:
        where = where or {}
        decided["location"] = location.locate(
            resource, where.get("manifest") or None, where.get("root") or None, where.get("object_storage") or None
        )
        decided["reference_manifest"] = reference_manifest(records, decided["step"])
    return decided


def backup(original_location, node, reference_manifest, source_name, backup_source, host_known=False, node_host=None):
    """``{refusal, host}``: why a resume from the backup cannot start, nothing created ('' when it can), and the
    inventory host of ``node`` where the step is staged.

    ``backup_source`` is the role's ``resume_backup`` ({path, s3, host, mount}); ``host_known`` whether its ``host``
    is an inventory host (backup_restore.resume_problem judges); ``node_host`` the inventory host of ``node`` (None
    when it has none)."""
    backup_source = backup_source or {}
    on_host = bool(backup_source.get("host")) and bool(host_known)
    problem = resume_problem(original_location or {}, node, reference_manifest, source_name, backup_source, on_host)
    if not problem and not node_host:
        problem = (
            "node %s (rlark_resume_node) has no inventory host; set rlark_node_name on a host, or add it to group "
            "rlark_nodes" % node
        )
    return {
        "refusal": "Resume from the backup refused, nothing was created: %s" % problem if problem else "",
        "host": None if problem else node_host,
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


def resume_gate_refusal(result, step, source):
    """Why a resume may not use the gated checkpoint ('' when it is complete), naming rlark_resume_step.

    A step the gate could not judge (it does not exist, nothing was saved) is not called incomplete.
    """
    verdict = gate_summary.summarize(result or {})
    if verdict["complete"] and verdict["step"] is not None:
        return ""
    asked = "the newest complete step" if step in (None, "", "latest") else "step %s" % step
    todo = (
        "Set rlark_resume_step to a complete step (N or global_step_N), or leave it unset for the newest complete one."
    )
    if not verdict["ran"]:
        return "Cannot resume %s from %s, nothing was created: %s. %s" % (source, asked, verdict["reason"], todo)
    newest = verdict.get("latest_complete_step")
    known = " (the newest complete step is %s)" % newest if newest is not None and newest != verdict["step"] else ""
    return "Checkpoint %s of %s is not complete, nothing was created: %s%s. %s" % (
        verdict["step"] if verdict["step"] is not None else step,
        source,
        (result or {}).get("msg") or verdict["reason"],
        known,
        todo,
    )


def checkpoint(gate_result, step, source_name, container_root, new_name):
    """``{refusal, gate, step, resume_dir, name}``: may the gated checkpoint be used, and what the copy is.

    A partial or missing checkpoint is refused before anything is created; the integrity findings (if any) follow
    the sentence as a table.
    """
    gate = gate_summary.summarize(gate_result or {})
    refusal = resume_gate_refusal(gate_result, step, source_name)
    if refusal:
        found = [f for f in (gate_result or {}).get("findings") or [] if str(f.get("id", "")).startswith("integrity-")]
        if found:
            refusal += " " + findings_core.table(review.safe(found), "checkpoint integrity")
        return {"refusal": refusal, "gate": gate, "step": None, "resume_dir": None, "name": None}
    return {
        "refusal": "",
        "gate": gate,
        "step": gate["step"],
        "resume_dir": location.step_dir(container_root, gate["step"]),
        "name": new_name or "%s-r%s" % (source_name, gate["step"]),
    }


def copy(preview, source_job, records, resume_dir, name, object_storage, node):
    """``{findings, refusal, new_location}``: the copy reviewed like a new submission, and where it writes.

    ``records`` is ``{manifest, profile}`` (either may be empty). With them, a copy of a Job that is itself a resume
    is judged against the runScript they render.
    """
    manifest = (records or {}).get("manifest") or None
    profile = (records or {}).get("profile") or None
    view = resume.review_view(preview, source_job, manifest, profile)
    found = review.review_job(view["job"], manifest, profile)
    found += resume_override_findings(view, resume_dir, name)
    new_location = dir_guard.planned_location(preview, {}, {}, object_storage or {}, node)
    refusal = ""
    if findings_core.has_errors(found):
        refusal = findings_core.table(review.safe(found), "review of the copy")
    elif not new_location.get("ok"):
        refusal = "The new Job's checkpoint directory cannot be checked, nothing was created: %s" % new_location.get(
            "reason"
        )
    return {"findings": found, "refusal": refusal, "new_location": new_location}


def tree(diff, original_location):
    """``{findings, refusal}``: the original-tree proof (``resume-original-changed`` when anything of it changed)."""
    found = dir_guard.tree_findings(diff or {}, original_location or {})
    refusal = findings_core.table(review.safe(found), "original checkpoints") if found else ""
    return {"findings": found, "refusal": refusal}


def outcome(source_name, created, check_mode, verify, verify_report=None):
    """The resume's report. ``created`` is ``{name, step, resume_dir, root, changed}``; ``verify_report`` the verify
    role's (absent when verify did not run)."""
    report = verify_report or {}
    if check_mode:
        verified = "not run (check mode)"
        message = "would create %s from step %s (checks passed)" % (created["name"], created["step"])
    else:
        verified = bool(report.get("ok")) if verify else "skipped"
        message = "%s resumes %s from %s (step %s), writing to its own directory %s" % (
            created["name"], source_name, created["resume_dir"], created["step"], created["root"],
        )  # fmt: skip
    return {
        "original_job": source_name,
        "new_job": created["name"],
        "step": created["step"],
        "resume_dir": created["resume_dir"],
        "checkpoint_root": created["root"],
        "created": bool(created.get("changed")),
        "already": False,
        "verified": verified,
        "continuity": ((report.get("resume") or {}).get("continuity") or {}).get("verdict") or "not judged",
        "message": message,
    }
