# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the migration inputs: load, validate, render and review (logic in module_utils).

Everything a filter returns is redacted: a rendered Job, findings and records never carry a secret.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rlark.ops.plugins.module_utils import findings as findings_core
from ansible_collections.rlark.ops.plugins.module_utils import manifest as manifest_io
from ansible_collections.rlark.ops.plugins.module_utils import preflight as preflight_core
from ansible_collections.rlark.ops.plugins.module_utils import redact as redact_core
from ansible_collections.rlark.ops.plugins.module_utils import render as render_core
from ansible_collections.rlark.ops.plugins.module_utils import review as review_core


def _kind(kind):
    if kind not in manifest_io.KINDS:
        raise AnsibleFilterError("kind must be one of %s, not %r" % (", ".join(sorted(manifest_io.KINDS)), kind))
    return kind


def render_job(manifest, profile, job_name=None):
    """The rlinf.io/v1alpha1 Job of a launch manifest and deployment profile (fails on invalid records)."""
    found, records = [], []
    for data, kind in ((manifest, manifest_io.MANIFEST), (profile, manifest_io.PROFILE)):
        more, valid = review_core.input_findings(data, kind)
        found.extend(more)
        records.append(valid)
    if found:
        raise AnsibleFilterError(findings_core.table(review_core.safe(found), "the migration records"))
    return redact_core.redact(render_core.render_job(records[0], records[1], job_name))


def review_job(job, manifest=None, profile=None):
    """Findings ``{id, severity, path, message, hint}`` for a Job and the records it came from."""
    return review_core.review_job(job, manifest, profile)


def preflight(manifest, profile, job_name=None):
    """Validate, render and review; ``job`` is set only when no error finding exists."""
    return redact_core.redact(preflight_core.preflight(manifest, profile, job_name))


def validate_manifest(data, kind="manifest"):
    """``{ok, errors: [{path, message}], data}`` for a launch manifest (or ``kind='profile'``), path or data."""
    result = manifest_io.load_and_validate(data, _kind(kind))
    result.pop("raw", None)
    return redact_core.redact(result)


def load_manifest(data, kind="manifest"):
    """The validated record (path, text or data), redacted; fails with every error and its field path."""
    result = manifest_io.load_and_validate(data, _kind(kind))
    if not result["ok"]:
        lines = ["%s: %s" % (e["path"] or "(document)", e["message"]) for e in result["errors"]]
        raise AnsibleFilterError(
            "invalid %s (%s):\n%s\nFix the record %s gives and run again."
            % (
                manifest_io.TITLES[kind],
                manifest_io.VARIABLES[kind],
                redact_core.redact_text("\n".join(lines)),
                manifest_io.VARIABLES[kind],
            )
        )
    # Clean records are unchanged by redaction (review flags anything it would mask as an error).
    return redact_core.redact(result["data"])


class FilterModule:
    def filters(self):
        return {
            "render_job": render_job,
            "review_job": review_job,
            "preflight": preflight,
            "validate_manifest": validate_manifest,
            "load_manifest": load_manifest,
        }
