# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: load + validate both records, render the Job, review it; offer the Job only when clean.

"Offered for submission" means ``result['job']`` is a Job dict. It is None whenever any finding has
severity ``error`` (a stop condition of seed 001 or a failed review item): callers submit
``result['job']`` and nothing else. Never raises for bad input.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import manifest as manifest_io
from ansible_collections.rlark.ops.plugins.module_utils import render, review
from ansible_collections.rlark.ops.plugins.module_utils.findings import has_errors
from ansible_collections.rlark.ops.plugins.module_utils.findings import render as findings_text
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact


def preflight(manifest, profile, job_name=None):
    """``{ok, job, rendered, findings, summary, job_name, manifest_version, profile_version, manifest, profile}``.

    ``manifest`` and ``profile`` are the validated records, only when ``ok`` (with errors they may hold the very
    secrets review refused): the roles after the preflight use them instead of loading the files again.
    """
    found, rendered, records = [], None, {}
    try:
        for data, kind in ((manifest, manifest_io.MANIFEST), (profile, manifest_io.PROFILE)):
            more, valid = review.input_findings(data, kind)
            found.extend(more)
            records[kind] = valid
        m, p = records[manifest_io.MANIFEST], records[manifest_io.PROFILE]
        if m is not None and p is not None:
            rendered = render.render_job(m, p, job_name)
            found.extend(review.review_records(rendered, m, p))
    except Exception as exc:  # a preflight reports, never crashes the play
        found.append(review.internal_error(exc))
    found = review.safe(found)
    ok = not has_errors(found)
    m = records.get(manifest_io.MANIFEST) or {}
    p = records.get(manifest_io.PROFILE) or {}
    return {
        "ok": ok,
        "job": rendered if ok else None,
        # With errors the draft may hold the very secrets review refused: mask them.
        "rendered": rendered if ok else redact(rendered),
        "findings": found,
        "summary": findings_text(found, "preflight"),
        "job_name": render.job_name_of(m, job_name) or None,
        "manifest_version": m.get("version"),
        "profile_version": p.get("version"),
        "manifest": m if ok else None,
        "profile": p if ok else None,
    }


def review_for_submission(job, manifest=None, profile=None):
    """Gate for a Job that was not rendered here (hand-edited, a resume copy): ``{ok, job, findings}``.

    ``job`` is the Job only when the review has no error finding; otherwise None (nothing offered).
    """
    found = review.review_job(job, manifest, profile)
    ok = not has_errors(found)
    return {"ok": ok, "job": manifest_io.to_plain(job) if ok else None, "findings": found}
