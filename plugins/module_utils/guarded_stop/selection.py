# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Jobs a guarded-stop run stops: the name list, the label selectors' candidates and the JMESPath query.

``select`` is the one verdict the guarded_stop playbook asks (through rlark_guarded_stop_decision): the Jobs
selected, the names asked for that do not exist, and why the run must stop here (an unusable ``rlark_job_query``,
or a selection that matches no Job).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.query import QueryError, plain, query


def _name(resource):
    return (((resource or {}).get("job") or {}).get("metadata") or {}).get("name")


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
        given.append("rlark_jobs=%s" % ",".join(jobs))
    if selectors:
        given.append("rlark_job_selectors=%s" % ",".join(selectors))
    if expression:
        given.append("rlark_job_query=%s" % expression)
    return (
        "The selection matched no Job (%s), so nothing was stopped. Check the names, selectors and query, or set "
        "rlark_allow_empty_selection: true when an empty selection is expected." % ("; ".join(given) or "nothing given")
    )


def select_jobs(resources, expression="", names=None):
    """rlark_job_info resources chosen by ``names`` (when given) and by a JMESPath expression over that list.

    Raises QueryError when the expression is not usable (``query_problem`` words it for the user)."""
    resources = plain(resources) or []
    if names:
        wanted = set(names)
        resources = [r for r in resources if _name(r) in wanted]
    if not expression:
        return resources
    chosen = query(resources, expression)
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
    return [r for r in resources if _name(r) in picked]


def select(candidates, jobs=None, selectors=None, expression="", allow_empty=False):
    """``{selected, unknown, refusal}``: the Jobs to stop, the asked names no candidate has, and why the run stops
    here ('' when it goes on): an unusable query, or (unless ``allow_empty``) a selection that matches no Job."""
    candidates, jobs, selectors = plain(candidates) or [], plain(jobs) or [], plain(selectors) or []
    problem = query_problem(candidates, expression)
    if problem:
        return {"selected": [], "unknown": [], "refusal": problem}
    known = set(_name(r) for r in candidates)
    unknown = []
    for name in jobs:
        if name not in known and name not in unknown:
            unknown.append(name)
    selected = select_jobs(candidates, expression, jobs)
    refusal = ""
    if not selected and not unknown and not allow_empty:
        refusal = empty_selection_message(jobs, selectors, expression)
    return {"selected": selected, "unknown": unknown, "refusal": refusal}


__all__ = ["empty_selection_message", "query_problem", "select", "select_jobs"]
