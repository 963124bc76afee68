# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the guarded-stop playbook and role: the selection, the stop record and the run's summary.

Logic lives in module_utils (query, stop_record, stop_summary); these wrappers only turn Ansible's objects into
plain data.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rlark.ops.plugins.module_utils import stop_summary as stop_summaries
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop import outcomes
from ansible_collections.rlark.ops.plugins.module_utils.query import QueryError, plain, query


def query_problem(candidates, expression=""):
    """One sentence naming rlark_job_query when it does not compile or fails on the candidates, else ''."""
    if expression:
        try:
            query(plain(candidates) or [], expression)
        except QueryError as exc:
            return "rlark_job_query is not usable: %s. Fix the expression (JMESPath over rlark_job_info results)." % exc
    return ""


def empty_selection_message(jobs=None, selectors=None, expression=""):
    """Why an empty selection fails, naming what the user set."""
    given = []
    if jobs:
        given.append("rlark_jobs=%s" % ",".join(plain(jobs)))
    if selectors:
        given.append("rlark_job_selectors=%s" % ",".join(plain(selectors)))
    if expression:
        given.append("rlark_job_query=%s" % expression)
    return (
        "The selection matched no Job (%s), so nothing was stopped. Check the names, selectors and query, or set "
        "rlark_allow_empty_selection: true when an empty selection is expected." % ("; ".join(given) or "nothing given")
    )


def select_jobs(resources, expression="", names=None):
    """rlark_job_info resources chosen by ``names`` (when given) and by a JMESPath expression over that list."""
    resources = plain(resources) or []
    if names:
        wanted = set(plain(names))
        resources = [r for r in resources if ((r.get("job") or {}).get("metadata") or {}).get("name") in wanted]
    if not expression:
        return resources
    try:
        chosen = query(resources, expression)
    except QueryError as exc:
        raise AnsibleFilterError("rlark.ops.select_jobs: %s" % exc) from exc
    if chosen is None:
        return []
    if not isinstance(chosen, list):
        chosen = [chosen]
    picked = set()
    for item in chosen:
        if isinstance(item, str):
            picked.add(item)
        elif isinstance(item, dict):
            job = item.get("job") if isinstance(item.get("job"), dict) else item
            picked.add((job.get("metadata") or {}).get("name"))
    return [r for r in resources if ((r.get("job") or {}).get("metadata") or {}).get("name") in picked]


def refusal(job, reason):
    return {"job": job, "outcome": "refused", "reason": reason}


def stop_outcomes(outcomes, jobs):
    """Per-Job outcomes, ``outcomes[i]`` for ``jobs[i]``; a Job that never reported one counts as refused."""
    outcomes, jobs = plain(outcomes) or [], plain(jobs) or []
    if len(outcomes) != len(jobs):
        raise AnsibleFilterError("rlark.ops.stop_outcomes: %d outcomes for %d Jobs" % (len(outcomes), len(jobs)))
    out = []
    for outcome, job in zip(outcomes, jobs):
        if not (outcome or {}).get("outcome"):
            outcome = refusal(job, "the checks did not finish (see the failed task above)")
        out.append(outcome)
    return out


def log_record_name(item):
    """``{key: pod, value: text}`` -> ``{key: "log-<pod>", value: text}`` for rlark_record ``files``."""
    return {"key": "log-%s" % item["key"], "value": item["value"]}


def refusal_outcome(failed_result, job, live=None, reread=None, check_mode=False):
    """The outcome of a refusal by the role's own checks (``ansible_failed_result``), told apart from a stop
    someone made meanwhile by the Job as read before (``live``) and after (``reread``, an rlark_job_info result)."""
    failed_result, live, reread = plain(failed_result) or {}, plain(live) or {}, plain(reread) or {}
    after = ((reread.get("resources") or [{}])[0] or {}).get("job") or {}
    return outcomes.refusal_outcome(
        job, failed_result.get("msg") or "failed",
        stopped_before=bool(((live.get("job") or {}).get("spec") or {}).get("stopped")),
        stopped_now=bool((after.get("spec") or {}).get("stopped")), check_mode=bool(check_mode),
        findings=failed_result.get("findings") or [],
    )  # fmt: skip


def stop_summary(results):
    return stop_summaries.stop_summary(plain(results))


class FilterModule:
    def filters(self):
        return {
            "empty_selection_message": empty_selection_message,
            "query_problem": query_problem,
            "select_jobs": select_jobs,
            "refusal": refusal,
            "stop_outcomes": stop_outcomes,
            "log_record_name": log_record_name,
            "stop_summary": stop_summary,
            "refusal_outcome": refusal_outcome,
        }
