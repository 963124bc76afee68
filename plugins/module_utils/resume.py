# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build a new Job from an existing one: the full stored spec, a new name, an explicit ``stopped``
and optionally an RLinf ``runner.resume_dir`` override in the head task's ``runScript``.

Unlike RLark's console copy, nothing of the pod template is rebuilt: every field is kept. The
override is written as ``++runner.resume_dir=<dir>`` (Hydra: add or override), so it works whether
or not the training config declares the key, and it replaces any earlier ``runner.resume_dir``,
``+runner.resume_dir`` or ``++runner.resume_dir`` override so only one value is ever passed.
A resume copy also writes to a directory of its own: the experiment key that forms its checkpoint
root is set to the new Job's name (all through :mod:`hydra`, the one override parser).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.rlark.ops.plugins.module_utils import hydra, jobspec, render, step_names
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.location import checkpoint_root
from ansible_collections.rlark.ops.plugins.module_utils.findings import WARNING, finding
from ansible_collections.rlark.ops.plugins.module_utils.jobs import job_name, pvc_claims
from ansible_collections.rlark.ops.plugins.module_utils.labels import STOPPED_BY_RUN
from ansible_collections.rlark.ops.plugins.module_utils.naming import name_findings

WORKFLOW_LABEL = "rlinf.io/workflow"
# Metadata a new object must not carry over from the source.
SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "ownerReferences",
    "finalizers",
    "selfLink",
    "generateName",
    "namespace",
)
RESUME_KEY = "runner.resume_dir"
# What a resume Job says about itself: the label selects every resume of a source, the annotations
# name the step and directory it started from.
RESUMED_FROM = "rlark.ops/resumed-from"
RESUME_STEP = "rlark.ops/resume-step"
RESUME_DIR = "rlark.ops/resume-dir"
# The Hydra key that names the run's own output directory, by where the checkpoint root comes from
# (RLinf: embodied/SFT runners write to runner.logger.log_path/runner.logger.experiment_name,
# reasoning/agent runners to runner.output_dir/runner.experiment_name).
EXPERIMENT_KEYS = (
    ("runner.logger.log_path", "runner.logger.experiment_name"),
    ("runner.output_dir", "runner.experiment_name"),
)


def resume_dir_findings(resume_dir, path="resume_dir"):
    """A resume_dir must name one checkpoint step directory, without a trailing slash."""
    found = []
    if resume_dir.endswith("/"):
        found.append(
            finding(
                "resume-dir-trailing-slash",
                "resume_dir %r ends with '/'; RLinf derives the step from the last path component." % resume_dir,
                path=path,
                hint="Drop the trailing slash.",
            )
        )
    elif hydra.step_number(resume_dir) is None:
        found.append(
            finding(
                "resume-dir-not-step",
                "resume_dir %r does not end in global_step_<N>." % resume_dir,
                path=path,
                hint="Point at the checkpoints/global_step_N directory itself (not actor/ or the checkpoints root).",
            )
        )
    return found


def set_resume_override(run_script, resume_dir):
    """The runScript with exactly one ``++runner.resume_dir=<dir>`` override, or None if no place fits."""
    return hydra.set_override(run_script, RESUME_KEY, resume_dir)


def experiment_key(job):
    """The Hydra key whose value names the run's output directory, or None when the run script does not say.

    The key that already forms the checkpoint root wins; a root given only as a log/output dir gets
    its experiment key added next to it.
    """
    root, source, found = checkpoint_root(job)
    if root:
        return EXPERIMENT_KEYS[0][1] if source.startswith("runner.logger") else EXPERIMENT_KEYS[1][1]
    for dir_key, exp_key in EXPERIMENT_KEYS:
        if dir_key in found:
            return exp_key
    return None


def _own_output(job, head, index, new_name):
    """Point the copy's checkpoints and logs at a directory of its own (named after the new Job)."""
    key = experiment_key(job)
    if key is None:
        return [
            finding(
                "resume-output-unknown",
                "The head runScript does not say where RLinf writes checkpoints (no runner.logger.log_path or "
                "runner.output_dir override), so the new Job could write into the original run's directory.",
                path="spec.tasks[%d].runScript" % index,
                hint="Add runner.logger.log_path and runner.logger.experiment_name (embodied/SFT) or "
                "runner.output_dir and runner.experiment_name (reasoning) overrides to the original's runScript.",
            )
        ]
    head["runScript"] = hydra.set_override(head["runScript"], key, new_name)
    return []


def _mark_resume(meta, source_name, resume_dir):
    step = hydra.step_number(resume_dir)
    meta.setdefault("labels", {})[RESUMED_FROM] = source_name
    meta.setdefault("annotations", {}).update(
        {RESUMED_FROM: source_name, RESUME_STEP: "" if step is None else str(step), RESUME_DIR: resume_dir}
    )


def copy_job(source, new_name, stopped=False, resume_dir=None, head_node_selector=None):
    """``(new_job, findings)``; a new Job is returned only when no finding is an error.

    With ``resume_dir`` the copy also gets its own output directory (the Hydra experiment key set to
    the new Job's name, so it never writes into the original's checkpoints) and says what it resumes:
    label and annotation ``rlark.ops/resumed-from``, annotations ``rlark.ops/resume-step`` and
    ``rlark.ops/resume-dir``. ``head_node_selector`` replaces the head task's ``nodeSelector`` (a resume from
    the backup runs on another approved node; the review then judges it against the deployment profile).
    """
    found = []
    job = {
        "apiVersion": source.get("apiVersion", jobspec.API_VERSION),
        "kind": source.get("kind", "Job"),
        "metadata": copy.deepcopy(source.get("metadata") or {}),
        "spec": copy.deepcopy(source.get("spec") or {}),
    }
    meta = job["metadata"]
    for key in SERVER_METADATA:
        meta.pop(key, None)
    # A copy is no resume of whatever its source resumed from, nor stopped by the source's guarded stop:
    # it gets its own marks or none.
    for field, keys in (
        ("labels", (WORKFLOW_LABEL, RESUMED_FROM)),
        ("annotations", (RESUMED_FROM, RESUME_STEP, RESUME_DIR, STOPPED_BY_RUN)),
    ):
        values = meta.get(field) or {}
        for key in keys:
            values.pop(key, None)
        if field in meta and not values:
            meta.pop(field)
    meta["name"] = new_name
    job["spec"]["stopped"] = bool(stopped)
    found.extend(name_findings(new_name, [t.get("name") for t in jobspec.tasks(job)]))
    if new_name == job_name(source):
        found.append(finding("copy-same-name", "The copy needs a name other than the source's.", path="name"))
    if resume_dir is not None:
        found.extend(resume_dir_findings(resume_dir))
        index = jobspec.head_index(job)
        if index is None:
            found.append(
                finding(
                    "resume-no-head",
                    "The source Job has no head task, so there is no runScript to resume in.",
                    path="spec.tasks",
                )
            )
        else:
            head = job["spec"]["tasks"][index]
            if head_node_selector:
                head["nodeSelector"] = dict(head_node_selector)
            script = set_resume_override(head.get("runScript"), resume_dir)
            if script is None:
                found.append(
                    finding(
                        "resume-no-override-site",
                        "The head runScript has no Hydra override or *.py argument to add %s to." % RESUME_KEY,
                        path="spec.tasks[%d].runScript" % index,
                        hint="Add runner.resume_dir to the runScript yourself, or launch with python <script>.py.",
                    )
                )
            else:
                head["runScript"] = script
                found.extend(_own_output(job, head, index, new_name))
        _mark_resume(meta, job_name(source), resume_dir)
    found.extend(_shared_claim_findings(source))
    return job, found


def _shared_claim_findings(source):
    """``copy-agent-pvc`` warnings: a copy gets new agent-created claims or shares the source's."""
    found = []
    for claim in pvc_claims(source):
        if claim["generated_name"]:
            message = (
                "Volume %r of task %r is an agent-created PVC of the source (%s): the copy gets a new, empty claim."
                % (claim["volume"], claim["task"], claim["claim"])
            )
        else:
            message = (
                "Volume %r of task %r uses claim %r, which the agent may have created for the source: the copy "
                "shares it only while it exists in the same cluster, and deleting the source deletes it."
                % (claim["volume"], claim["task"], claim["claim"])
            )
        found.append(
            finding(
                "copy-agent-pvc",
                message,
                severity=WARNING,
                path=claim["path"],
                hint="Keep checkpoints on hostPath or an object-storage class with reclaimPolicy Retain.",
            )
        )
    return found


def _records_head_script(manifest, profile, name):
    """The head runScript the records render for Job ``name`` (None without both records or when they do not render)."""
    if not (isinstance(manifest, dict) and isinstance(profile, dict)):
        return None
    try:
        rendered = render.render_job(manifest, profile, name)
    except Exception:  # bad records are the review's to report, not this view's
        return None
    index = jobspec.head_index(rendered)
    return None if index is None else rendered["spec"]["tasks"][index].get("runScript") or ""


def review_view(copy_job_, source, manifest=None, profile=None):
    """The copy as the review must see it, and what it overrides on top of the source.

    ``{job, resume_dirs, experiment_key, experiment}``: ``job`` is the copy under the source's name with
    the source's head runScript when the copy's differs from it only by the two intended overrides (so the review
    judges exactly what the records describe), else with ``runner.resume_dir`` stripped (the review
    then reports the difference); the other keys are what the copy passes.
    A source that is itself a resume carries the two overrides of its own resume: with the records (launch
    manifest and deployment profile) the copy is also judged against the runScript they render, so a resume of a
    resumed Job is reviewed like the first one.
    """
    out = copy.deepcopy(copy_job_ or {})
    index = jobspec.head_index(out)
    if index is None:
        return {"job": out, "resume_dirs": [], "experiment_key": None, "experiment": None}
    head = out["spec"]["tasks"][index]
    key = experiment_key(out)
    script = head.get("runScript") or ""
    resume_dirs = [i["value"] for i in hydra.parse(script) if i["key"] == RESUME_KEY]
    experiment = hydra.get(script, key) if key else None
    source_index = jobspec.head_index(source or {})
    before = "" if source_index is None else source["spec"]["tasks"][source_index].get("runScript") or ""
    bases = [before]
    if resume_marks(source):  # the source's own resume overrides are no difference from the records
        records = _records_head_script(manifest, profile, job_name(source or {}))
        bases = ([records] if records is not None else []) + bases
    head["runScript"] = hydra.strip_override(script, RESUME_KEY)[0]
    for base in bases:
        intended = hydra.set_override(base, RESUME_KEY, resume_dirs[-1]) if resume_dirs else None
        if intended is not None and key:
            intended = hydra.set_override(intended, key, experiment)
        if script == intended:
            head["runScript"] = base
            break
    # Rendered names (agent PVC claims) derive from the Job name: the records describe the source's.
    out.setdefault("metadata", {})["name"] = job_name(source or {}) or job_name(out)
    return {"job": out, "resume_dirs": resume_dirs, "experiment_key": key, "experiment": experiment}


def resume_marks(job):
    """``{source, step, resume_dir}`` a resume Job carries, or None for any other Job."""
    meta = (job or {}).get("metadata") or {}
    ann = meta.get("annotations") or {}
    source = ((meta.get("labels") or {}).get(RESUMED_FROM)) or ann.get(RESUMED_FROM)
    if not source:
        return None
    step = ann.get(RESUME_STEP)
    return {
        "name": meta.get("name"),
        "source": source,
        "step": int(step) if str(step or "").isdigit() else None,
        "resume_dir": ann.get(RESUME_DIR),
    }


def resume_plan(source_name, requested_step, new_name, earlier_jobs):
    """What a resume run does, given the resumes of ``source_name`` that exist already.

    ``{step, already, refusal}``: ``step`` is ``latest`` or the step number asked for (``36`` and
    ``global_step_36`` both mean 36); ``already`` the marks of the existing resume that is this run (nothing is
    created then), else None; ``refusal`` non-empty when the run must fail because what exists is not what was asked.
    A resume of a step that has none yet is created (under ``<source>-r<step>`` unless named); a name that
    already resumes another step is refused.
    """
    step = step_names.parse_step("latest" if requested_step in (None, "") else requested_step)
    if step is None:
        return {
            "step": None,
            "already": None,
            "refusal": "rlark_resume_step=%s is not a step: give a number (-e rlark_resume_step=36), RLinf's "
            "directory name (-e rlark_resume_step=global_step_36) or latest (the default, the newest complete "
            "step); nothing was created." % (requested_step,),
        }
    marks = [m for m in (resume_marks(j) for j in earlier_jobs or []) if m and m["source"] == source_name]
    if new_name:
        already = next((m for m in marks if m["name"] == new_name), None)
    elif step == step_names.LATEST:
        already = marks[0] if marks else None
    else:
        already = next((m for m in marks if m["step"] == step), None)
    refusal = ""
    if already and step != step_names.LATEST and already["step"] != step:
        refusal = (
            "%s is already resumed as %s from step %s; step %s was asked, nothing was created. To resume from step "
            "%s as well, pass another rlark_resume_name (or none: the new Job is then %s-r%s); to keep %s, leave "
            "rlark_resume_step unset."
            % (source_name, new_name, already["step"], step, step, source_name, step, new_name)
        )
    return {"step": step, "already": already, "refusal": refusal}
