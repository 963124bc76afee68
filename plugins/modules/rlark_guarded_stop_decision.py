#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_guarded_stop_decision
short_description: The guarded-stop run's decisions around the stops (selection, a refusal's outcome, summary)
version_added: 0.1.0
description:
  - The guarded stop's decisions have one owner, C(plugins/module_utils/guarded_stop/); the
    C(rlark.ops.guarded_stop) playbook and role only wire them through this action, one O(phase) at a time. The
    stop of one Job is M(rlark.ops.rlark_guarded_stop).
  - V(select) picks the Jobs to stop from the candidates M(rlark.ops.rlark_job_info) read (by their label selectors),
    the names asked for (C(rlark_jobs)) and a JMESPath expression over the candidates (C(rlark_job_query)). It
    fails the task, with one sentence naming the variable to fix, when the expression is not usable or when the
    selection matches no Job (unless O(allow_empty=true)). Names asked for that no Job has are RV(decision.unknown).
  - V(refused) is the outcome of one Job whose guarded stop the role's own checks refused (the failed task's result
    in O(failed)); a Job that someone else stopped meanwhile is C(already stopped), and in check mode the reason
    reads C(would refuse).
  - V(summary) is the run's summary over each Job's outcome, one row per Job (C(stopped), C(already stopped),
    C(refused), C(failed), C(stopped-unconfirmed), C(would stop)); a Job that reported no outcome counts as refused,
    and each unknown name is refused as C(no such Job).
  - Runs on the controller; reads and writes nothing, and never reports C(changed).
extends_documentation_fragment:
  - rlark.ops.controller_action
  - rlark.ops.controller_action.decision
attributes:
  check_mode:
    description: Reads and writes nothing in any mode; V(refused) words its reason for check mode.
options:
  phase:
    choices: [select, refused, summary]
  candidates:
    description: The C(resources) of M(rlark.ops.rlark_job_info), the candidate Jobs (V(select)).
    type: list
    elements: dict
    default: []
  jobs:
    description:
      - V(select), the Job names asked for (C(rlark_jobs)); empty selects every candidate.
      - V(summary), the Job of each of O(outcomes), in the same order.
    type: list
    elements: str
    default: []
  selectors:
    description:
      - The label selectors the candidates were read with (C(rlark_job_selectors)), for its message (V(select)).
    type: list
    elements: str
    default: []
  query:
    description:
      - A JMESPath expression over the candidates (C(rlark_job_query)); the Jobs it returns, as items or names, are
        selected (V(select)). Empty selects every candidate.
    type: str
    default: ""
  allow_empty:
    description: A selection that matches no Job is not an error (C(rlark_allow_empty_selection)); V(select).
    type: bool
    default: false
  name:
    description: The Job whose checks refused its stop (V(refused)).
    type: str
    default: ""
  failed:
    description:
      - The failed task's result (C(ansible_failed_result)); its C(msg) and C(findings) are the refusal's (V(refused)).
    type: dict
    default: {}
  live:
    description: The Job as M(rlark.ops.rlark_job_info) read it before the checks, one of its C(resources) (V(refused)).
    type: dict
    default: {}
  reread:
    description: The M(rlark.ops.rlark_job_info) result of reading the Job again after the refusal (V(refused)).
    type: dict
    default: {}
  outcomes:
    description: Each Job's outcome, as the C(rlark.ops.guarded_stop) role reported it (C({}) when none); V(summary).
    type: list
    elements: dict
    default: []
  unknown:
    description: Job names asked for that do not exist (RV(decision.unknown) of V(select)); V(summary).
    type: list
    elements: str
    default: []
seealso:
  - module: rlark.ops.rlark_guarded_stop
  - module: rlark.ops.rlark_job_info
"""

EXAMPLES = r"""
- name: Read the candidate Jobs
  rlark.ops.rlark_job_info:
    label_selectors: [team=rl]
    nodes: false
  register: candidates

- name: Select the Running ones (fails when none matches)
  rlark.ops.rlark_guarded_stop_decision:
    phase: select
    candidates: "{{ candidates.resources }}"
    selectors: [team=rl]
    query: "[?job.status.phase=='Running']"
  register: selection

- name: Summarise two outcomes
  rlark.ops.rlark_guarded_stop_decision:
    phase: summary
    outcomes: [{job: a, outcome: stopped, step: 12, checkpoint: /c/global_step_12}, {}]
    jobs: [a, b]
  register: summary
"""

RETURN = r"""
decision:
  description:
    - The decision of O(phase).
    - V(select), C({selected, unknown, refusal}).
    - V(refused), the Job's outcome C({job, outcome, reason, step, checkpoint, record, identity, findings}).
    - V(summary), C({table, counts, refused, failed, ok, outcome, stop_records}).
  returned: success
  type: dict
  contains:
    selected:
      description: The selected Jobs, each as M(rlark.ops.rlark_job_info) returned it (V(select)).
      type: list
      elements: dict
      returned: phase is select
    unknown:
      description: Job names asked for that no Job has (V(select)).
      type: list
      elements: str
      returned: phase is select
    table:
      description: The summary table, one line per Job, then the counts (V(summary)).
      type: str
      returned: phase is summary
    ok:
      description: No Job was refused or failed (V(summary)).
      type: bool
      returned: phase is summary
refusal:
  description: Empty; a selection that must stop the run fails the task instead.
  returned: success
  type: str
"""
