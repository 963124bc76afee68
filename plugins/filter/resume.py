# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the resume flow: what a resume Job carries and how its copy is reviewed (logic in module_utils)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import resume, role_verdicts
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_restore import resume_problem
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


def resume_review_view(copy_job, source, manifest=None, profile=None):
    return resume.review_view(plain(copy_job), plain(source), plain(manifest), plain(profile))


def resume_plan(earlier_jobs, source_name, step="latest", new_name=""):
    return resume.resume_plan(source_name, plain(step), new_name, plain(earlier_jobs))


def resume_gate_refusal(result, step, source):
    return role_verdicts.resume_gate_refusal(plain(result), plain(step), source)


def resume_marks(job):
    return resume.resume_marks(plain(job))


def resume_override_findings(view, resume_dir, name):
    return role_verdicts.resume_override_findings(plain(view), resume_dir, name)


def resume_backup_problem(location, node, manifest, source):
    return resume_problem(plain(location), node, plain(manifest), source)


class FilterModule:
    def filters(self):
        return {
            "resume_review_view": resume_review_view,
            "resume_marks": resume_marks,
            "resume_override_findings": resume_override_findings,
            "resume_plan": resume_plan,
            "resume_gate_refusal": resume_gate_refusal,
            "resume_backup_problem": resume_backup_problem,
        }
