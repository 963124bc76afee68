# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that judge a running Job: its state, its log signals and the verify verdict (logic in module_utils).

These wrappers only turn Ansible's objects into plain data and errors into filter errors.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rlark.ops.plugins.module_utils import jobspec, role_verdicts, verify
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


def job_state(resource, proof=None, job_name=None):
    return verify.job_state(plain(resource), plain(proof), job_name)


def log_report(text, startup=None, failure=None, normal=None, live=None):
    return verify.log_report(text, plain(startup), plain(failure), plain(normal), plain(live))


def resume_report(text, resume_dir, step, old_run=None, tolerance=None, ignore=None):
    try:
        return verify.resume_report(text, resume_dir, step, plain(old_run), plain(tolerance), plain(ignore))
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("rlark.ops.resume_report: %s" % exc) from exc


def signal_regexes(items):
    return verify.signal_regexes(plain(items))


def resume_patterns(resume_dir, old_run=None, step=0):
    return verify.resume_patterns(resume_dir, plain(old_run), step)


def verify_report(running, job, mode="normal", submitted=None, signals=None, logs=None, **resume_mode):
    """The verify record's report with its verdict ``ok`` (resume mode: ``resume``, ``next_gate``, ``resume_step``,
    ``need_next_checkpoint``)."""
    unknown = set(resume_mode) - {"resume", "next_gate", "resume_step", "need_next_checkpoint"}
    if unknown:
        raise AnsibleFilterError("rlark.ops.verify_report: unknown option(s) %s" % ", ".join(sorted(unknown)))
    try:
        return role_verdicts.verify_report(
            job, mode, plain(submitted), plain(running), plain(signals), plain(logs), **plain(resume_mode)
        )
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("rlark.ops.verify_report: %s" % exc) from exc


def pod_names(pods):
    """Data-plane pod names (``rlark.io/local-pod-name``) of Pod CRs."""
    out = []
    for pod in plain(pods) or []:
        name = jobspec.pod_local_name(pod)
        if name:
            out.append(name)
    return sorted(out)


def verify_refusal(state, name):
    return role_verdicts.verify_submitted_refusal(plain(state), name)


def verify_failure(report, timeout, waited=None, wait_msg=""):
    return role_verdicts.verify_failure(plain(report), timeout, plain(waited), wait_msg or "")


class FilterModule:
    def filters(self):
        return {
            "job_state": job_state,
            "log_report": log_report,
            "resume_report": resume_report,
            "signal_regexes": signal_regexes,
            "resume_patterns": resume_patterns,
            "verify_report": verify_report,
            "pod_names": pod_names,
            "verify_refusal": verify_refusal,
            "verify_failure": verify_failure,
        }
