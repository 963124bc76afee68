# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resume continuity: the old run's per-step metrics are the oracle for the resumed run.

RLinf prints one metrics table per training step (``rlinf/utils/metric_utils.py`` ``print_metrics_table``)::

    ╭──────────────────────────────╮
    ├──────── Metric Table ────────┤
    │ Global Step:    5/100 │ Progress: ██░░ │   5.0% │
    │ Elapsed: 00:05 │ ETA: 01:35 │ Step Time: 1.000s │
    ├─────────── Rollout ──────────┤
    │                              │
    │advantages_max=0.123 │rewards=0.456 │       │
    │                              │
    ╰──────────────────────────────╯

This module is the one parser of those tables (verify, the sentinel and the stop record's lost work all
use it) and the one judge of continuity: the steps the old run logged after checkpoint N must be logged
again, with the same metrics, by a Job resumed from N.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import os
import re

from ansible_collections.rlark.ops.plugins.module_utils.findings import WARNING, finding

TABLE_STEP = re.compile(r"│\s*Global Step:\s*(\d+)/(\d+)")
STEP_TIME = re.compile(r"Step Time:\s*([0-9.]+)s")
SECTION = re.compile(r"├─+ (.+?) ─+┤")
# Timing metrics differ between any two runs; they are never part of the verdict unless a user asks.
DEFAULT_IGNORE = ("Time/*",)
# A value printed with 3 decimals (RLinf's format for 0.01..100) differs by its last digit at most.
DEFAULT_TOLERANCE = {"rel": 0.01, "abs": 0.001}
VERDICTS = ("continuity-exact", "continuity-within-tolerance", "continuity-broken", "continuity-unverifiable")


def _cells(line):
    start = line.find("│")
    return [c.strip() for c in line[start:].strip().strip("│").split("│")]


def parse_metrics(text):
    """``{step: {"metrics": {"Section/name": "printed value"}, "step_time": seconds|None}}`` of every table.

    A step logged twice (a restarted container appends to the same log) keeps its last table.
    """
    steps = {}
    current = None
    section = None
    for line in (text or "").splitlines():
        if "│" not in line and "├" not in line and "╰" not in line:
            continue
        found = TABLE_STEP.search(line)
        if found:
            current = {"metrics": {}, "step_time": None, "max_steps": int(found.group(2))}
            steps[int(found.group(1))] = current
            section = None
            continue
        if current is None:
            continue
        if "╰" in line:
            current = None
            continue
        title = SECTION.search(line)
        if title:
            section = title.group(1).strip()
            continue
        timed = STEP_TIME.search(line)
        if timed and section is None:
            current["step_time"] = float(timed.group(1))
            continue
        for cell in _cells(line):
            name, sep, value = cell.partition("=")
            if sep and section:
                current["metrics"]["%s/%s" % (section, name.strip())] = value.strip()
    return steps


def as_list(steps):
    """The parsed steps as a list (Ansible keeps it as it is: no integer dict keys)."""
    return [dict(info, step=step) for step, info in sorted(steps.items())]


def from_list(items):
    """Inverse of as_list; a parsed dict passes through."""
    if isinstance(items, dict):
        return {int(k): v for k, v in items.items()}
    return {int(i["step"]): i for i in items or []}


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _tolerance_for(metric, tolerance):
    """``{rel, abs}`` for one metric: the first glob in ``tolerance`` that matches it, else ``default``."""
    tolerance = tolerance or {}
    chosen = tolerance.get("default", DEFAULT_TOLERANCE)
    for pattern, value in tolerance.items():
        if pattern != "default" and fnmatch.fnmatchcase(metric, pattern):
            chosen = value
            break
    if isinstance(chosen, (int, float)):
        return {"rel": float(chosen), "abs": 0.0}
    return {"rel": float((chosen or {}).get("rel", 0.0)), "abs": float((chosen or {}).get("abs", 0.0))}


def _close(old, new, tol):
    a, b = _number(old), _number(new)
    if a is None or b is None:
        return old == new
    return abs(a - b) <= tol["abs"] + tol["rel"] * max(abs(a), abs(b))


def _ignored(metric, ignore):
    return any(fnmatch.fnmatchcase(metric, p) for p in ignore)


def _step_difference(step, old, new, tolerance, ignore):
    """``(first difference beyond tolerance or None, metrics equal only within tolerance)``."""
    loose = []
    for metric in sorted(old):
        if _ignored(metric, ignore):
            continue
        if metric not in new:
            return {"step": step, "metric": metric, "old": old[metric], "new": None}, loose
        if old[metric] == new[metric]:
            continue
        if not _close(old[metric], new[metric], _tolerance_for(metric, tolerance)):
            return {"step": step, "metric": metric, "old": old[metric], "new": new[metric]}, loose
        loose.append({"step": step, "metric": metric, "old": old[metric], "new": new[metric]})
    return None, loose


def _unverifiable(step, old_after, new_after):
    if not old_after:
        why = (
            "the old run logged no step after checkpoint %d (it stopped exactly at the checkpoint), so there is "
            "nothing to compare the resumed run with" % step
        )
    else:
        why = "the resumed run has not logged step %d yet (the old run logged steps %d to %d)" % (
            old_after[0],
            old_after[0],
            old_after[-1],
        )
    return finding(
        "continuity-unverifiable",
        "Continuity is unverifiable: %s." % why,
        severity=WARNING,
        path="logs",
        hint="This is not a pass: compare the resumed run's first steps with the old run by hand, or stop the old "
        "run after it logged a step past its checkpoint next time.",
    )


def compare(old_steps, new_text, step, tolerance=None, ignore=None):
    """The continuity verdict of a run resumed from checkpoint ``step`` (see VERDICTS) with what it is based on."""
    step = int(step)
    old = from_list(old_steps)
    new = parse_metrics(new_text) if isinstance(new_text, str) else from_list(new_text)
    ignore = list(DEFAULT_IGNORE if ignore is None else ignore)
    old_after = sorted(s for s in old if s > step)
    overlap = [s for s in old_after if s in new]
    report = {"verdict": None, "compared_steps": overlap, "old_steps_after_checkpoint": old_after, "findings": []}
    report["first_difference"] = None
    report["within_tolerance"] = []
    if not overlap:
        report["verdict"] = "continuity-unverifiable"
        report["findings"].append(_unverifiable(step, old_after, overlap))
        return report
    for s in overlap:
        diff, loose = _step_difference(s, old[s]["metrics"], new[s]["metrics"], tolerance, ignore)
        report["within_tolerance"].extend(loose)
        if diff:
            report["first_difference"] = diff
            report["verdict"] = "continuity-broken"
            report["findings"].append(
                finding(
                    "continuity-broken",
                    "The resumed run differs from the old run at step %d: %s was %s, now %s."
                    % (diff["step"], diff["metric"], diff["old"], "not logged" if diff["new"] is None else diff["new"]),
                    path="logs",
                    hint="The Job did not continue the old run (another checkpoint, lost optimizer or data position): "
                    "stop it and resume again; a metric that legitimately varies takes a tolerance in "
                    "rlark_continuity_tolerance or a glob in rlark_continuity_ignore.",
                    step=diff["step"],
                    metric=diff["metric"],
                )
            )
            return report
    report["verdict"] = "continuity-within-tolerance" if report["within_tolerance"] else "continuity-exact"
    return report


def wait_pattern(old_steps, step):
    """A regex for the last step of the continuity window in the new log (None when the old run has none)."""
    after = [s for s in from_list(old_steps) if s > int(step)]
    return (r"│\s*Global Step:\s*%d/" % max(after)) if after else None


def restart_verdict(old_steps, first_step, new_text, step, ignore=None):
    """The sentinel's judgement of a resumed run's first logged step: ``{decided, finding}``.

    ``first_step`` is the first step counter the new log shows (verify.resume_report's); a counter below N+1, or
    metrics at N+1 equal to the old run's step 1 (a fresh start under the right number) and not its step N+1, is
    a restart from scratch. Undecided while no step is logged.
    """
    step = int(step)
    if first_step is None:
        return {"decided": False, "finding": None}
    why = None
    if int(first_step) < step + 1:
        why = "its first logged step is %d, not %d" % (int(first_step), step + 1)
    else:
        old = from_list(old_steps)
        new = parse_metrics(new_text)
        if int(first_step) not in new:
            return {"decided": False, "finding": None}  # the counter is right; wait for that step's metrics
        first = new[int(first_step)]["metrics"]
        ignore = list(DEFAULT_IGNORE if ignore is None else ignore)
        fresh = old.get(int(first_step) - step)
        same_as_fresh = (
            fresh is not None and _step_difference(0, fresh["metrics"], first, {"default": 0}, ignore)[0] is None
        )
        own = old.get(int(first_step))
        same_as_own = own is not None and _step_difference(0, own["metrics"], first, {"default": 0}, ignore)[0] is None
        if same_as_fresh and not same_as_own:
            why = "its step %d logs the metrics of the old run's step %d (a fresh start under the right number)" % (
                int(first_step),
                int(first_step) - step,
            )
    if why is None:
        return {"decided": True, "finding": None}
    return {
        "decided": True,
        "finding": finding(
            "resume-restarted-from-scratch",
            "The resumed Job did not continue from checkpoint %d: %s." % (step, why),
            path="logs",
            hint="The new Job was stopped before its first checkpoint save; the original Job and its checkpoints "
            "were not touched. Check that the trainer reads runner.resume_dir (rlark_resume_step) and resume again.",
            first_step=int(first_step),
        ),
    }


def old_run_log(records_dir, job, head_pod):
    """The old run's head log as the newest stop record of ``job`` exported it: ``{record, file, text}`` or None.

    Controller side only (the records are written there), hence the late import of PyYAML.
    """
    import yaml

    base = os.path.join(records_dir or "", job or "")
    runs = sorted(os.listdir(base)) if os.path.isdir(base) else []
    for run in reversed(runs):
        path = os.path.join(base, run, "stop.yml")
        if not os.path.isfile(path):
            continue
        with open(path) as fh:
            record = yaml.safe_load(fh) or {}
        for export in ((record.get("data") or {}).get("logs") or {}).get("exports") or []:
            log_file = os.path.join(base, run, export.get("file") or "")
            if export.get("pod") == head_pod and os.path.isfile(log_file):
                with open(log_file, errors="replace") as fh:
                    return {"record": path, "file": log_file, "text": fh.read()}
    return None
