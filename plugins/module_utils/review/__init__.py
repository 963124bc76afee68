# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Review a Job against seed 001 (stop conditions, Step 6 YAML review) and the platform gotchas.

``review_job(job, manifest, profile)`` returns findings ``{id, severity, path, message, hint}``;
any ``error`` means: do not submit. Paths start with ``spec.``/``metadata.`` for the Job,
``manifest.`` and ``profile.`` for the two records. Every id is documented in docs/findings.md.
Inputs of any shape are accepted: bad ones become findings, never exceptions. ``manifest`` and
``profile`` may be None to review a Job on its own (e.g. a copy for resume).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import manifest as manifest_io
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, finding
from ansible_collections.rlark.ops.plugins.module_utils.jobspec import pod_spec
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact_text
from ansible_collections.rlark.ops.plugins.module_utils.review.consistency import consistency_findings
from ansible_collections.rlark.ops.plugins.module_utils.review.job_rules import indexed_tasks, job_findings
from ansible_collections.rlark.ops.plugins.module_utils.review.legacy import (
    LEGACY_FIELDS,
    is_legacy_key,
    legacy_findings,
)
from ansible_collections.rlark.ops.plugins.module_utils.review.record_rules import records_findings
from ansible_collections.rlark.ops.plugins.module_utils.review.secret_rules import (
    SECRETS_HINT,
    env_secret_findings,
    inline_secret_findings,
)
from ansible_collections.rlark.ops.plugins.module_utils.review.values import as_dict, as_list, as_text


def input_findings(data, kind):
    """Schema + legacy findings for one record; returns ``(findings, valid_data_or_None)``."""
    prefix = manifest_io.MANIFEST if kind == manifest_io.MANIFEST else manifest_io.PROFILE
    if data is None:
        return [finding("%s-missing" % prefix, "No %s was given." % manifest_io.TITLES[kind], path=prefix)], None
    result = manifest_io.load_and_validate(data, kind, extra_ok=is_legacy_key)
    found = legacy_findings(result.get("raw"), prefix)
    for error in result["errors"]:
        found.append(
            finding(
                "%s-invalid" % prefix,
                "%s: %s" % (manifest_io.TITLES[kind], error["message"]),
                path=manifest_io.field_path([], prefix) + ("." + error["path"] if error["path"] else ""),
                hint=_input_hint(kind, error),
            )
        )
    return found, (result["data"] if not found else None)


def _input_hint(kind, error):
    """What to do about one input error, naming the playbook variable that passes the record."""
    variable, title = manifest_io.VARIABLES[kind], manifest_io.TITLES[kind]
    if error.get("unreadable") and "not valid YAML" in error["message"]:
        return "Fix the YAML syntax at the line and column shown, in the file given as %s." % variable
    if error.get("unreadable"):
        return (
            "Pass the %s as a readable YAML file: -e %s=PATH (a relative PATH is resolved from the directory "
            % (
                title,
                variable,
            )
            + "you run ansible-playbook in)."
        )
    if not error["path"]:
        return "Give %s a %s: a YAML mapping as described in schemas/%s." % (
            variable,
            title,
            manifest_io.SCHEMA_FILES[kind],
        )
    return "Fix %s in the %s given as %s (schemas/%s lists every field)." % (
        error["path"],
        title,
        variable,
        manifest_io.SCHEMA_FILES[kind],
    )


def review_records(job, manifest, profile):
    """Review with records already validated (or None): the core of ``review_job`` and ``preflight``."""
    found = job_findings(job)
    found.extend(legacy_findings(job, ""))
    if manifest is None or profile is None:
        if isinstance(job, dict):
            found.extend(inline_secret_findings(job, "", skip=_env_paths(job)))
        return found
    # A secret in env is the user's to fix in the launch manifest: report it there, not in the rendered Job.
    for i, role in enumerate(as_list(manifest.get("roles"))):
        found.extend(env_secret_findings(as_dict(role).get("env"), "manifest.roles[%d].env" % i))
    rendered_from_manifest = _manifest_env_paths_in_job(job, manifest)
    found = [f for f in found if not (f["id"] == "env-secret" and f["path"] in rendered_from_manifest)]
    found.extend(records_findings(manifest, profile))
    found.extend(inline_secret_findings(manifest, "manifest", skip=_env_paths_manifest(manifest)))
    found.extend(inline_secret_findings(profile, "profile"))
    if isinstance(job, dict):
        found.extend(consistency_findings(job, manifest, profile))
    return found


def _env_paths(job):
    paths = set()
    for i, task in indexed_tasks(job):
        pod = pod_spec(task)
        for ci, container in enumerate(as_list(pod.get("containers"))):
            for ei in range(len(as_list(as_dict(container).get("env")))):
                paths.add("spec.tasks[%d].kubernetes.workload.template.spec.containers[%d].env[%d].value" % (i, ci, ei))
    return paths


def _manifest_env_paths_in_job(job, manifest):
    """Paths of the Job's env items that carry a manifest env item of the same name (rendered from it)."""
    by_role = {
        as_text(as_dict(r).get("name")): {as_text(as_dict(e).get("name")) for e in as_list(as_dict(r).get("env"))}
        for r in as_list(manifest.get("roles"))
    }
    paths = set()
    for i, task in indexed_tasks(job):
        names = by_role.get(as_text(task.get("name")), set())
        pod = pod_spec(task)
        for ci, container in enumerate(as_list(pod.get("containers"))):
            for ei, item in enumerate(as_list(as_dict(container).get("env"))):
                if as_text(as_dict(item).get("name")) in names:
                    paths.add("spec.tasks[%d].kubernetes.workload.template.spec.containers[%d].env[%d]" % (i, ci, ei))
    return paths


def _env_paths_manifest(manifest):
    paths = set()
    for i, role in enumerate(as_list(manifest.get("roles"))):
        for ei in range(len(as_list(as_dict(role).get("env")))):
            paths.add("manifest.roles[%d].env[%d].value" % (i, ei))
    return paths


def safe(found):
    """Findings with secrets masked in every text field; a stable order (errors first)."""
    out = []
    for f in found:
        out.append({k: redact_text(v) if isinstance(v, str) else v for k, v in f.items()})
    return sorted(out, key=lambda f: (f["severity"] != ERROR, f["path"], f["id"], f["message"]))


def review_job(job, manifest=None, profile=None):
    """Findings for a Job and (optionally) the records it was rendered from. Never raises."""
    try:
        found = []
        records = []
        for data, kind in ((manifest, manifest_io.MANIFEST), (profile, manifest_io.PROFILE)):
            if data is None and manifest is None and profile is None:
                records.append(None)
                continue
            more, valid = input_findings(data, kind)
            found.extend(more)
            records.append(valid)
        found.extend(review_records(manifest_io.to_plain(job), records[0], records[1]))
    except Exception as exc:  # a review must report, never crash the play
        found.append(internal_error(exc))
    return safe(found)


def internal_error(exc):
    return finding(
        "review-internal-error",
        "The review could not finish (%s: %s); treat the input as not reviewed." % (type(exc).__name__, exc),
        path="",
        hint="Report this as a bug with the redacted inputs.",
    )


__all__ = [
    "LEGACY_FIELDS",
    "SECRETS_HINT",
    "consistency_findings",
    "env_secret_findings",
    "inline_secret_findings",
    "input_findings",
    "internal_error",
    "job_findings",
    "legacy_findings",
    "records_findings",
    "review_job",
    "review_records",
    "safe",
]
