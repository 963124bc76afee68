# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build a new Job from an existing one: the full stored spec, a new name, an explicit ``stopped``
and optionally an RLinf ``runner.resume_dir`` override in the head task's ``runScript``.

Unlike RLark's console copy, nothing of the pod template is rebuilt: every field is kept. The
override is written as ``++runner.resume_dir=<dir>`` (Hydra: add or override), so it works whether
or not the training config declares the key, and it replaces any earlier ``runner.resume_dir``,
``+runner.resume_dir`` or ``++runner.resume_dir`` override so only one value is ever passed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

try:
    from shlex import quote as shell_quote
except ImportError:  # pragma: no cover
    from shlex import quote as shell_quote

from ansible_collections.rlark.ops.plugins.module_utils.findings import WARNING, finding
from ansible_collections.rlark.ops.plugins.module_utils.jobs import job_name, pvc_claims, templates
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
STEP_DIR = re.compile(r"(^|/)global_step_\d+$")
# An earlier override in any Hydra form, optionally quoted as a whole or in its value.
OVERRIDE = re.compile(r"""(?P<q>['"]?)\+{0,2}runner\.resume_dir=(?:"[^"]*"|'[^']*'|[^\s'";|&)]*)(?P=q)""")
HYDRA_TOKEN = re.compile(
    r"""(?:^|(?<=\s))['"]?[+~]{0,2}[A-Za-z_][\w-]*(?:\.[\w-]+)+=(?:"[^"]*"|'[^']*'|[^\s;|&]*)['"]?"""
)
PY_SCRIPT = re.compile(r"""(?:^|(?<=\s))\S+\.py(?=\s|$)""")


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
    elif not STEP_DIR.search(resume_dir):
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
    """The runScript with exactly one ``++runner.resume_dir=<dir>`` override, or None if no place fits.

    An earlier override is replaced in place; otherwise the override goes after the last Hydra
    override of the script, else after the first ``*.py`` argument.
    """
    token = shell_quote("++%s=%s" % (RESUME_KEY, resume_dir))
    script = run_script or ""
    found = list(OVERRIDE.finditer(script))
    if found:
        first = found[0]
        out = script[: first.start()] + token
        pos = first.end()
        for later in found[1:]:
            # Drop later duplicates together with the whitespace in front of them.
            start = later.start()
            while start > pos and script[start - 1] in " \t":
                start -= 1
            out += script[pos:start]
            pos = later.end()
        return out + script[pos:]
    anchors = list(HYDRA_TOKEN.finditer(script)) or list(PY_SCRIPT.finditer(script))[:1]
    if not anchors:
        return None
    end = anchors[-1].end()
    return script[:end] + " " + token + script[end:]


def head_index(job):
    for index, tmpl in enumerate(templates(job)):
        if tmpl.get("head"):
            return index
    return None


def copy_job(source, new_name, stopped=False, resume_dir=None):
    """``(new_job, findings)``; a new Job is returned only when no finding is an error."""
    found = []
    job = {
        "apiVersion": source.get("apiVersion", "rlinf.io/v1alpha1"),
        "kind": source.get("kind", "Job"),
        "metadata": copy.deepcopy(source.get("metadata") or {}),
        "spec": copy.deepcopy(source.get("spec") or {}),
    }
    meta = job["metadata"]
    for key in SERVER_METADATA:
        meta.pop(key, None)
    labels = meta.get("labels") or {}
    labels.pop(WORKFLOW_LABEL, None)
    if "labels" in meta and not labels:
        meta.pop("labels")
    meta["name"] = new_name
    job["spec"]["stopped"] = bool(stopped)
    found.extend(name_findings(new_name, [t.get("name") for t in templates(job)]))
    if new_name == job_name(source):
        found.append(finding("copy-same-name", "The copy needs a name other than the source's.", path="name"))
    if resume_dir is not None:
        found.extend(resume_dir_findings(resume_dir))
        index = head_index(job)
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
    return job, found
