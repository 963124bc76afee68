# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rlark.ops.query filter: JMESPath over any data (logic in module_utils/query.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rlark.ops.plugins.module_utils.query import QueryError, holds, query

DOCUMENTATION = r"""
name: query
short_description: Select data with a JMESPath expression
version_added: 0.1.0
description:
  - Evaluates a JMESPath expression against the input (for example the C(resources) of
    M(rlark.ops.rlark_job_info)) and returns the result, or C(None) when nothing matches.
  - An invalid expression fails the task with one sentence that names the expression.
  - With O(assert=true) the filter returns a boolean by JMESPath's truth rules instead
    (null, false, empty string, list or object are false).
positional: expression
options:
  _input:
    description: The data to search.
    type: raw
    required: true
  expression:
    description: The JMESPath expression.
    type: str
    required: true
  assert:
    description: Return the truth of the result instead of the result.
    type: bool
    default: false
requirements:
  - jmespath
"""

EXAMPLES = r"""
- name: Names of the Running Jobs of an rlark.ops.rlark_job_info result
  ansible.builtin.debug:
    msg: >-
      {{ info.resources | rlark.ops.query("[?job.status.phase=='Running'].job.metadata.name") }}

- name: Every Pod CR of the first Job is Running
  ansible.builtin.assert:
    that: info.resources[0] | rlark.ops.query("pods[?status.phase!='Running'] | length(@) == `0`", assert=true)
"""

RETURN = r"""
_value:
  description: The result of the expression, or its truth with O(assert=true).
  type: raw
"""


def query_filter(data, expression, **kwargs):
    want_truth = kwargs.pop("assert", False)
    if kwargs:
        raise AnsibleFilterError("rlark.ops.query: unknown option(s) %s" % ", ".join(sorted(kwargs)))
    try:
        return holds(data, expression) if want_truth else query(data, expression)
    except QueryError as exc:
        raise AnsibleFilterError("rlark.ops.query: %s" % exc) from exc


class FilterModule:
    def filters(self):
        return {"query": query_filter}
