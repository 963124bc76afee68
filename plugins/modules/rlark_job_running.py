#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_job_running
short_description: Wait until an RLark Job runs as designed, with progress lines
version_added: 0.1.0
description:
  - Reads the Job with M(rlark.ops.rlark_job_info) (and the API options of this task) every O(wait_sleep) seconds
    until every Task has its pods running on the nodes the selector proof expects (in the clusters it expects),
    or O(wait_timeout) passes.
  - Prints one progress line per change of what keeps the Job from running as designed, instead of retry lines.
  - Never fails on a timeout or a failed read; it returns RV(running), RV(timed_out) and the last RV(state), so
    the caller can say what it waited for and what it saw. Never changes anything.
  - This is an action plugin; every look runs M(rlark.ops.rlark_job_info) on the target host.
author:
  - rlark.ops contributors (@rlark-ops)
extends_documentation_fragment:
  - rlark.ops.auth
attributes:
  check_mode:
    support: full
    description: Read-only; runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller or any host that can reach the API server.
options:
  name:
    description: Name of the Job.
    type: str
    required: true
  proof:
    description:
      - The selector proof of the Job (C(proof) of M(rlark.ops.rlark_node_match)); each Task's pods must run on the
        nodes and in the cluster it proved. Empty means any node.
    type: dict
    default: {}
  wait_timeout:
    description:
      - Seconds to wait.
      - O(wait_timeout) and O(wait_sleep) are the collection's one wait vocabulary
        (C(plugins/module_utils/wait_options.py)); C(timeout) and C(interval) are the older names, still accepted.
    type: float
    default: 180
    aliases: [timeout]
  wait_sleep:
    description: Seconds between two reads.
    type: float
    default: 2
    aliases: [interval]
"""

EXAMPLES = r"""
- name: Wait up to 5 minutes for ppo-demo to run on the proven nodes
  rlark.ops.rlark_job_running:
    name: ppo-demo
    proof: "{{ selector_proof_report }}"
    wait_timeout: 300
  register: running

- name: Say what was seen
  ansible.builtin.assert:
    that: running.running
    fail_msg: "{{ running.msg | default('') }} {{ running.state.observed | to_json }}"
"""

RETURN = r"""
running:
  description: Whether every pod runs as designed at the last read.
  returned: always
  type: bool
state:
  description: The last verdict, C({submitted, running, findings, observed}) (findings say what is not as designed).
  returned: always
  type: dict
resources:
  description: The last M(rlark.ops.rlark_job_info) result items (the Job, its Tasks, Pod CRs and Nodes).
  returned: always
  type: list
  elements: dict
timed_out:
  description: The Job did not run as designed within O(wait_timeout).
  returned: always
  type: bool
waited_seconds:
  description: How long the wait took.
  returned: always
  type: float
wait_log:
  description: One line per change of what was seen, with the seconds since the start.
  returned: always
  type: list
  elements: str
msg:
  description: What was waited for and the last state, after a timeout; or why the last read failed.
  returned: when timed out or a read failed
  type: str
"""
