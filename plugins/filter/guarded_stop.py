# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Data steps of the guarded-stop playbook and role: selection checks and the stop record's outcome part.

Logic lives in module_utils (query, stop_record); these wrappers only turn Ansible's objects into
plain data.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import stop_record
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


def stop_outcome_fields(outcome, reason="", identity=None, selection=None, stop=None, step=None):
    return stop_record.outcome_fields(outcome, reason, plain(identity), plain(selection), plain(stop), step)


class FilterModule:
    def filters(self):
        return {
            "empty_selection_message": empty_selection_message,
            "query_problem": query_problem,
            "stop_outcome_fields": stop_outcome_fields,
        }
