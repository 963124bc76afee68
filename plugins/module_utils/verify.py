# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verification of a submitted Job: "submitted" and "running" apart, log signals, resume continuity.

A StatefulSet Task never reports Succeeded or Failed, so "no failure" proves nothing: a Job counts as
running only when its Pod CRs match the design *and* the workload's own start-up signals appear in
the head's log. Signals are log regexes or JMESPath conditions over the live objects
``{job, tasks, pods}``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rlark.ops.plugins.module_utils import continuity, jobspec
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.location import parts
from ansible_collections.rlark.ops.plugins.module_utils.findings import errors, finding
from ansible_collections.rlark.ops.plugins.module_utils.placement import matched_nodes_by_task
from ansible_collections.rlark.ops.plugins.module_utils.query import QueryError, holds
from ansible_collections.rlark.ops.plugins.module_utils.task_identity import placement_findings, pods_of, task_key

# RLinf's own lines (docs: rlinf-checkpoints.md, "Resume verification signals").
SCRATCH = (r"Training from scratch", r"No checkpoints found, starting from scratch", r"No complete checkpoints found")
RESUME_FAILURES = (
    r"Could not find a valid DCP checkpoint",
    r"FSDP version mismatch",
    r"resume_dir .* does not exist",
    r"exit-on-missing-checkpoint",
    r"No dataloader state found",
)
RESUME_LINES = (
    r"Resuming training from checkpoint directory (?P<dir>\S+?)\.?\s*$",
    r"Load from checkpoint folder: (?P<dir>\S+?)\s*$",
    r"Auto resume from checkpoint: (?P<dir>\S+?)\s*$",
    r"successfully loaded checkpoint from (?P<dir>\S+?)/(?:actor|critic)\b",
)
# RLinf pads the step (``Global Step:    5/100``); the sandbox also prints it unpadded.
GLOBAL_STEP = re.compile(r"Global Step:\s*(\d+)/")
SET_STEP = re.compile(r"Setting global step to (\d+)")


def normalize_signals(items):
    """``[{name, regex|query}]`` from strings (regexes) or dicts (``regex``/``pattern`` or ``query``)."""
    out = []
    for index, item in enumerate(items or []):
        if isinstance(item, str):
            # A string is a log regex, or a JMESPath condition when prefixed "jmespath:" / "query:".
            prefix, _sep, rest = item.partition(":")
            if prefix.strip() in ("jmespath", "query") and rest.strip():
                out.append({"name": item, "query": rest.strip()})
            else:
                out.append({"name": item, "regex": item})
            continue
        if not isinstance(item, dict):
            continue
        regex = item.get("regex") or item.get("pattern") or item.get("log")
        query = item.get("query") or item.get("jmespath")
        name = item.get("name") or item.get("description") or regex or query or "signal %d" % index
        entry = {"name": name}
        if regex:
            entry["regex"] = regex
        if query:
            entry["query"] = query
        out.append(entry)
    return out


def _search(pattern, text):
    try:
        return re.search(pattern, text or "", re.MULTILINE)
    except re.error as exc:
        raise ValueError("invalid log regex %r: %s" % (pattern, exc)) from exc


def signal_hit(signal, text, live=None):
    """Whether one signal is seen: every given part (regex in the log, query over ``live``) holds."""
    ok = True
    if signal.get("regex"):
        ok = ok and _search(signal["regex"], text) is not None
    if signal.get("query"):
        try:
            ok = ok and live is not None and holds(live, signal["query"])
        except QueryError as exc:
            raise ValueError(str(exc)) from exc
    return ok


def log_report(text, startup=None, failure=None, normal=None, live=None):
    """What was and was not seen: ``{seen, missing, failures, normal_seen, ok, errors}``."""
    report = {"seen": [], "missing": [], "failures": [], "normal_seen": [], "normal_missing": [], "errors": []}
    for key_hit, key_miss, items in (("seen", "missing", startup), ("normal_seen", "normal_missing", normal)):
        for signal in normalize_signals(items):
            try:
                report[key_hit if signal_hit(signal, text, live) else key_miss].append(signal["name"])
            except ValueError as exc:
                report["errors"].append(str(exc))
    for signal in normalize_signals(failure):
        if not signal.get("regex"):
            continue
        try:
            match = _search(signal["regex"], text)
        except ValueError as exc:
            report["errors"].append(str(exc))
            continue
        if match:
            line = (text or "")[: match.end()].splitlines()[-1] if text else ""
            report["failures"].append({"signal": signal["name"], "line": line.strip()})
    report["ok"] = not report["missing"] and not report["failures"] and not report["errors"]
    return report


def resume_report(text, resume_dir, step, old_run=None, tolerance=None, ignore=None):
    """Resume continuity from the new head's log: the exact dir, step N+1, no scratch start.

    With ``old_run`` (the old run's parsed metric tables, continuity.as_list) it also judges whether the
    resumed run reproduces the old run's steps after N (``continuity``; a broken continuity is an error,
    an unverifiable one a warning).
    """
    step = int(step)
    text = text or ""
    dirs = []
    for pattern in RESUME_LINES:
        for m in re.finditer(pattern, text, re.MULTILINE):
            dirs.append(m.group("dir").rstrip("/"))
    wanted = (resume_dir or "").rstrip("/")
    scratch = [p for p in SCRATCH if re.search(p, text)]
    failures = [p for p in RESUME_FAILURES if re.search(p, text)]
    first = GLOBAL_STEP.search(text)
    set_step = SET_STEP.search(text)
    first_step = int(first.group(1)) if first else (int(set_step.group(1)) + 1 if set_step else None)
    found = []
    if wanted not in dirs:
        found.append(
            finding(
                "resume-line-missing" if not dirs else "resume-wrong-dir",
                "The log has no line loading %s%s."
                % (wanted, " (it loaded %s)" % ", ".join(sorted(set(dirs))) if dirs else ""),
                path="logs",
                hint="Check runner.resume_dir in the new Job's runScript.",
            )
        )
    elif len(set(dirs)) > 1:
        found.append(
            finding(
                "resume-wrong-dir", "The log loads several checkpoints: %s." % ", ".join(sorted(set(dirs))), path="logs"
            )
        )
    if scratch:
        found.append(
            finding("resume-from-scratch", "The log says %r: the resume did not happen." % scratch[0], path="logs")
        )
    for p in failures:
        found.append(finding("resume-load-failed", "The log shows a load failure matching %r." % p, path="logs"))
    if first_step is None:
        found.append(
            finding("resume-step-unseen", "No training step is logged yet (expected %d)." % (step + 1), path="logs")
        )
    elif first_step != step + 1:
        found.append(
            finding(
                "resume-step-mismatch",
                "The first step after the resume is %d, expected %d." % (first_step, step + 1),
                path="logs",
            )
        )
    judged = None
    if old_run is not None:
        judged = continuity.compare(old_run, text, step, tolerance, ignore)
        found.extend(judged["findings"])
    return {
        "resume_dirs": sorted(set(dirs)),
        "continuity": judged,
        "first_step": first_step,
        "expected_first_step": step + 1,
        "scratch": scratch,
        "failures": failures,
        "findings": found,
        "ok": not errors(found),
    }


def _task_cluster(proof, task_name):
    tasks = (proof or {}).get("tasks") or []
    if isinstance(tasks, dict):
        return (tasks.get(task_name) or {}).get("cluster")
    return next((t.get("cluster") for t in tasks if (t.get("name") or t.get("task")) == task_name), None)


def job_state(resource, proof=None, job_name=None):
    """``{submitted, running, findings, observed}`` for one Job from an info result item."""
    job, tasks, pods = parts(resource)
    found = []
    name = (job.get("metadata") or {}).get("name") or job_name
    if not job or not job.get("spec"):
        found.append(finding("verify-job-missing", "Job %s does not exist." % name, path="metadata.name"))
        return {"submitted": False, "running": False, "findings": found, "observed": {}}
    expected = {}
    for task_name, matches in matched_nodes_by_task(proof).items():
        names = [m if isinstance(m, str) else m.get("name") for m in matches]
        expected[task_name] = {"nodes": names, "cluster": _task_cluster(proof, task_name)}
    found.extend(placement_findings(job, tasks))
    by_name = {}
    for task in tasks:
        by_name.setdefault(task_key(task)[1], []).append(task)
    observed = {}
    running = not found
    for index, tmpl in enumerate(job["spec"].get("tasks") or []):
        tname = "%s-%s" % (name, tmpl.get("name"))
        path = "spec.tasks[%d]" % index
        want = expected.get(tmpl.get("name")) or {}
        copies = by_name.get(tname) or []
        # Two copies (task-duplicate-namespaces): look at the one in the proven cluster, else the first.
        task = next((t for t in copies if task_key(t)[0] == want.get("cluster")), copies[0] if copies else None)
        replicas = int(jobspec.replicas(tmpl))
        if job["spec"].get("stopped"):
            replicas = 0
        task_pods = pods_of(task, pods) if task is not None else []
        nodes = sorted((p.get("status") or {}).get("node") or "" for p in task_pods)
        phases = sorted((p.get("status") or {}).get("phase") or "" for p in task_pods)
        info = {
            "namespace": (task or {}).get("metadata", {}).get("namespace"),
            "phase": ((task or {}).get("status") or {}).get("phase"),
            "replicas": replicas,
            "pods": len(task_pods),
            "pod_phases": phases,
            "nodes": nodes,
        }
        observed[tmpl.get("name")] = info
        if task is None:
            found.append(finding("verify-task-missing", "Task %s was not created." % tname, path=path))
            running = False
            continue
        if want.get("cluster") and info["namespace"] != want["cluster"]:
            found.append(
                finding(
                    "verify-task-namespace",
                    "Task %s is in namespace %s, expected %s." % (tname, info["namespace"], want["cluster"]),
                    path=path,
                )
            )
        if len(task_pods) != replicas:
            running = False
            found.append(
                finding(
                    "verify-pod-count",
                    "Task %s has %d Pod CR(s), expected %d." % (tname, len(task_pods), replicas),
                    path=path,
                    severity="warning",
                )
            )
        if any(ph != "Running" for ph in phases) or info["phase"] != "Running":
            running = False
        stray = [n for n in nodes if want.get("nodes") and n not in want["nodes"]]
        if stray:
            found.append(
                finding(
                    "verify-pod-off-node",
                    "Task %s runs on %s, outside the proven nodes %s."
                    % (tname, ", ".join(stray), ", ".join(want["nodes"])),
                    path=path,
                )
            )
    blocking = ("verify-task-missing", "verify-task-namespace", "task-duplicate-namespaces", "task-default-namespace")
    submitted = not any(f["id"] in blocking for f in found)
    return {"submitted": submitted, "running": running and submitted, "findings": found, "observed": observed}


__all__ = ["job_state", "log_report", "normalize_signals", "resume_report", "signal_hit"]


def signal_regexes(items):
    """The log-regex parts of signal items (what a log wait can look for)."""
    return [s["regex"] for s in normalize_signals(items) if s.get("regex")]


def resume_patterns(resume_dir, old_run=None, step=0):
    """Regexes a log wait needs in resume mode: ``wait_for`` (the dir, a step) and ``stop_on``.

    With ``old_run`` (continuity.as_list) it also waits for the last step the old run logged after ``step``
    (the end of the continuity window).
    """
    if not resume_dir:
        return {"wait_for": [], "stop_on": []}
    window = continuity.wait_pattern(old_run, step) if old_run else None
    return {
        "wait_for": [re.escape(resume_dir.rstrip("/")), r"Global Step:\s*\d+/|Setting global step to \d+"]
        + ([window] if window else []),
        "stop_on": list(SCRATCH) + list(RESUME_FAILURES),
    }
