# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate: is ``global_step_N`` complete by the rules of its runner and backend, and quiet?

``run_gate(source, options)`` lists the step names once and walks the newest step (then older ones
only until one is complete, or only the named step), judges its structure (``structure.py``), what
sibling steps reveal about it (``siblings.py``), then opens its payloads (``payloads.py``). The
result calls what the rules found ``findings``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gc

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.dcp_prefetch import close_all
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.identify import identify
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.options import normalize_options
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.payloads import verify_payloads
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.siblings import (
    apply_root_consistency,
    apply_root_rules,
    root_evidence,
)
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.step_listing import StepFacts
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.structure import judge_structure
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.verdict import StepVerdict, order_key, step_summary
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, WARNING, finding

__all__ = ["incomplete_message", "normalize_options", "run_gate"]


def _confirm(v, source, opts):
    """Structure ok and, when asked, payloads ok."""
    if not v.structure_ok:
        return False
    if opts["verify_payloads"] and not v.verified:
        verify_payloads(v, source, opts)
    return v.structure_ok


def run_gate(source, options):
    """Judge the steps of ``source``; return the module result (without ``changed``/``msg``).

    By default newest first: list the step names once, walk the newest step, then older ones only
    until one is complete (a named step: only that one); siblings are looked at shallowly for the
    cross-step rules. ``full_report`` walks and reports every step.
    """
    opts = normalize_options(options)
    # The walk and the .metadata pickle create ~10^5 small containers and no cycles: the cyclic GC
    # would only rescan them again and again (it doubles the cost of unpickling a large .metadata).
    collecting = gc.isenabled()
    gc.disable()
    try:
        if opts["full_report"]:
            return _run_full(source, opts)
        return _run_newest_first(source, opts)
    finally:
        if collecting:
            gc.enable()


def _no_steps(source):
    return L.GateError(
        "no global_step_* directory under %s: nothing has been saved there (check runner.logger.log_path / "
        "runner.output_dir and the experiment name)%s"
        % (source.describe(), "; found: " + ", ".join(sorted(source.others)[:10]) if source.others else "")
    )


def _only_odd_names(source, names):
    return L.GateError(
        "no global_step_N directory under %s, only names RLinf cannot resume from: %s"
        % (source.describe(), ", ".join(sorted(names)))
    )


def _step_not_found(source, opts, steps):
    """``steps``: the step numbers present, newest first."""
    return L.GateError(
        "no step %s under %s (newest %s); steps present: %s"
        % (opts["step"], source.describe(), steps[0], ", ".join(str(s) for s in steps[:20]))
    )


def _run_full(source, opts):
    now = None
    verdicts = []
    for facts in source.scan():
        if now is None:
            now = source.now()
        verdicts.append(judge_structure(facts, opts, now))
    if not verdicts:
        raise _no_steps(source)
    apply_root_consistency(verdicts, opts)
    numbered = sorted((v for v in verdicts if v.step is not None), key=lambda v: v.step, reverse=True)
    if not numbered:
        raise _only_odd_names(source, [v.name for v in verdicts])
    latest_complete = next((v for v in numbered if _confirm(v, source, opts)), None)
    if opts["step"] == "latest":
        chosen = latest_complete or numbered[0]
    else:
        chosen = next((v for v in numbered if v.step == opts["step"]), None)
        if chosen is None:
            raise _step_not_found(source, opts, [v.step for v in numbered])
        _confirm(chosen, source, opts)
    return _result(source, opts, chosen, latest_complete, numbered[0], verdicts, len(verdicts))


def _run_newest_first(source, opts):
    names = source.step_names()
    if not names:
        raise _no_steps(source)
    numbered = sorted(((L.step_number(n), n) for n in names if L.step_number(n) is not None), reverse=True)
    if not numbered:
        raise _only_odd_names(source, names)
    walked = {}
    evidence = []
    now = []

    def judge(name):
        if opts["verify_payloads"]:
            source.head_start(name)  # its DCP markers are unpickled in a child while the step is walked and judged
        facts = source.walk(name)
        try:
            if not now:
                now.append(source.now())
            v = walked[name] = judge_structure(facts, opts, now[0])
            if not evidence:  # siblings are identified from a shallow look, once
                others = [identify(source.probe(n), opts) for _s, n in numbered if n != name]
                evidence.append(root_evidence([v, *others], opts))
            apply_root_rules(v, evidence[0], opts)
            return _confirm(v, source, opts), v
        finally:
            close_all(facts.prefetched)  # reap the readers; one the payload check did not need is stopped

    newest_step, newest_name = numbered[0]
    latest_complete = None
    try:
        if opts["step"] == "latest":
            for _s, name in numbered:
                complete, v = judge(name)
                if complete:
                    latest_complete = v
                    break
            chosen = latest_complete or walked[newest_name]
        else:
            name = next((n for s, n in numbered if s == opts["step"]), None)
            if name is None:
                raise _step_not_found(source, opts, [s for s, _n in numbered])
            complete, chosen = judge(name)
            if complete and chosen.step == newest_step:
                latest_complete = chosen  # older complete steps are not looked for: only the named one is walked
    finally:
        source.end_head_start()
    odd = []
    for n in names:
        if L.step_number(n) is None:
            v = StepVerdict(StepFacts(n))
            v.files = v.bytes = None  # not walked
            odd.append(v)
    newest = walked.get(newest_name)
    if newest is None:  # a named older step: the newest was not walked
        newest = StepVerdict(StepFacts(newest_name))
    return _result(source, opts, chosen, latest_complete, newest, list(walked.values()) + odd, len(names))


def _result(source, opts, chosen, latest_complete, newest, verdicts, found):
    notes = []
    if opts["step"] == "latest" and latest_complete is not None and latest_complete is not newest:
        notes.append(
            finding(
                "newest-step-incomplete",
                "the newest step %s is incomplete (%s); using the newest complete step %s"
                % (newest.name, "; ".join(newest.reasons()[:3]), latest_complete.name),
                severity=WARNING,
                path=newest.name,
            )
        )
    for v in verdicts:
        if v.step is None:
            notes.append(
                finding(
                    "unrecognized-step-name",
                    "%s is not a global_step_N directory; it is reported but never chosen" % v.name,
                    severity=WARNING,
                    path=v.name,
                )
            )
    complete = chosen.structure_ok and (chosen.verified or not opts["verify_payloads"])
    steps = [step_summary(v, source, opts) for v in sorted(verdicts, key=order_key)]
    return {
        "complete": complete,
        "step": chosen.step,
        "checkpoint": source.location(chosen.name),
        "runner": chosen.runner,
        "backend": chosen.backend,
        "world_size": chosen.world_size,
        "rule": chosen.rule,
        "missing": list(chosen.missing),
        "findings": _missing_finding(chosen) + list(chosen.findings) + notes,
        "files": chosen.files,
        "bytes": chosen.bytes,
        "newest_mtime": chosen.newest,
        "latest_complete_step": latest_complete.step if latest_complete else None,
        "newest_step": newest.step,
        "steps": steps,
        "steps_found": found,
        "integrity_lists": list(chosen.integrity_lists),
    }


def _missing_finding(v):
    """``missing`` as one error finding too, so ``findings`` alone tell the whole story."""
    if not v.missing:
        return []
    shown = ", ".join(v.missing[:6]) + (", ..." if len(v.missing) > 6 else "")
    return [
        finding(
            "missing-entries",
            "%d required entr%s of %s missing: %s"
            % (len(v.missing), "y" if len(v.missing) == 1 else "ies", v.name, shown),
            path=v.missing[0],
            hint="the save did not finish; do not resume from this step",
        )
    ]


def incomplete_message(result):
    """One paragraph: which rule failed and what to do."""
    where = result["checkpoint"]
    head = "Checkpoint %s (step %s, runner %s, backend %s) is incomplete" % (
        where,
        result["step"],
        result["runner"] or "unknown",
        result["backend"] or "unknown",
    )
    errors = [p for p in result["findings"] if p["severity"] == ERROR and p["id"] != "missing-entries"]
    parts = []
    if result["missing"]:
        miss = result["missing"]
        parts.append(
            "%d required entr%s missing (%s%s)"
            % (
                len(miss),
                "y is" if len(miss) == 1 else "ies are",
                ", ".join(miss[:4]),
                ", ..." if len(miss) > 4 else "",
            )
        )
    parts.extend(p["message"] for p in errors[:4])
    rule = (" The rule is: %s." % result["rule"]) if result.get("rule") else ""
    ids = {p["id"] for p in errors}
    if ids and all(i.startswith("backup-") for i in ids) and not result["missing"]:
        head = head.replace("is incomplete", "is complete, but its required backup does not hold it")
        todo = (
            "The checkpoint itself is complete: copy the step to the backup again (or set "
            "rlark_checkpoint_backup_make=true), or set rlark_checkpoint_backup_required=false to go on without it."
        )
    elif ids & {"integrity-mismatch", "integrity-manifest-unreadable"}:
        todo = (
            "The checkpoint no longer matches the integrity manifest written at guarded stop (or that manifest "
            "cannot be read): do not resume from it."
        )
    elif "write-too-recent" in ids:
        todo = (
            "A save may still be running: do not stop the Job now; wait until nothing has been written for "
            "quiet_seconds and run the gate again."
        )
    elif ids & {"world-size-ambiguous", "parallel-layout-ambiguous", "runner-ambiguous", "no-layout"}:
        todo = "Pass the parameter named above (actor_world_size, the parallel sizes, runner or backend) and run again."
    else:
        todo = (
            "The save did not finish (or a stop cut it off): do not resume from this step and do not stop the Job "
            "until the trainer has written a complete checkpoint"
        )
        if result.get("latest_complete_step") is not None and result["latest_complete_step"] != result["step"]:
            todo += "; the newest complete step is %s" % result["latest_complete_step"]
        todo += "."
    return "%s: %s.%s %s" % (head, "; ".join(parts) or "see findings", rule, todo)


# (finding id, severity, function) of what the result itself says about the choice it made
RULES = (
    ("missing-entries", ERROR, _missing_finding),
    ("newest-step-incomplete", WARNING, _result),
    ("unrecognized-step-name", WARNING, _result),
)
