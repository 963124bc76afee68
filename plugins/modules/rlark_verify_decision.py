#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_verify_decision
short_description: One decision of verify (submitted, head-log signals, running, report)
version_added: 0.1.0
description:
  - The verify runbook's decisions have one owner, C(plugins/module_utils/verify_decision.py); the
    C(rlark.ops.verify) role only wires them through this action, one O(phase) at a time, between the reads, the log
    wait and the gate.
  - V(submitted) judges whether the Job was submitted as designed (C(verify-*) findings) and names its head task;
    a missing Job, one not submitted as designed or one without a head task is RV(refusal).
  - V(signals) gives the regexes the head-log wait looks for and stops on (the launch manifest's start-up and
    failure signals; in resume mode also the resume directory, the first step and the scratch-start lines).
  - V(running) judges the Job read again, the signals in the head's log and (resume mode) the resume and its
    continuity with the old run, and says whether the first checkpoint after the resume is to be gated.
  - V(report) is the verify record's report and, when the Job is not verified, the failure message
    (RV(refusal)) naming C(rlark_verify_wait_timeout) and the findings.
  - "Runs on the controller; reads and writes nothing. A refusal does not fail the task: it is RV(refusal), and
    the role fails with it."
extends_documentation_fragment:
  - rlark.ops.controller_action
  - rlark.ops.controller_action.decision
options:
  phase:
    choices: [submitted, signals, running, report]
  name:
    description: The Job's name (C(rlark_job_name)).
    type: str
    required: true
  resource:
    description: The Job as C(rlark.ops.rlark_job_info) read it (V(submitted), V(running)).
    type: dict
    default: {}
  proof:
    description: The selector proof of the Job (V(submitted), V(running)).
    type: dict
    default: {}
  signals:
    description: The launch manifest's C(signals) (C(startup), C(failure), C(normal)); V(signals), V(running).
    type: dict
    default: {}
  mode:
    description: V(resume) also judges the resume (V(signals), V(running), V(report)).
    type: str
    default: normal
    choices: [normal, resume]
  resume_dir:
    description: The directory the Job resumed from (resume mode).
    type: str
    default: ""
  resume_step:
    description: The step the Job resumed from (resume mode).
    type: int
    default: 0
  continuity:
    description: C({old_run, tolerance, ignore}), the old run's metric tables and how they compare (resume mode).
    type: dict
    default: {}
  next_checkpoint:
    description: In resume mode, the first checkpoint after the resume must pass the gate.
    type: bool
    default: true
  logs:
    description: The C(rlark.ops.job_logs) lookup's result (V(running), V(report)).
    type: dict
    default: {}
  submitted:
    description: The V(submitted) phase's C(state) (V(report)).
    type: dict
    default: {}
  judged:
    description: The V(running) phase's decision (V(report)).
    type: dict
    default: {}
  gate:
    description: The C(rlark.ops.checkpoint_gate) role's result, used only when the V(running) phase said C(gated).
    type: dict
    default: {}
  verify_timeout:
    description: The verify timeout in seconds (C(rlark_verify_wait_timeout)), for the message (V(report)).
    type: raw
    default: 180
  wait_msg:
    description: The message of the running wait, for the failure message (V(report)).
    type: str
    default: ""
seealso:
  - module: rlark.ops.rlark_job_running
  - module: rlark.ops.rlark_resume_decision
"""

EXAMPLES = r"""
- name: Judge "submitted" and find the head task
  rlark.ops.rlark_verify_decision:
    phase: submitted
    name: ppo-demo
    resource: "{{ info.resources | first | default({}) }}"
  register: first

- name: Refuse a Job that is not submitted as designed
  ansible.builtin.fail:
    msg: "{{ first.refusal }}"
  when: first.refusal | length > 0
"""

RETURN = r"""
decision:
  description:
    - The decision of O(phase). V(submitted) C({state, head_task, clusters, refusal}); V(signals)
      C({wait_for, stop_on}); V(running) C({running, signals, resume, gated}); V(report) C({report, refusal}).
  returned: success
  type: dict
refusal:
  description: Why verify fails here, naming what to set (empty when it may go on).
  returned: success
  type: str
"""
