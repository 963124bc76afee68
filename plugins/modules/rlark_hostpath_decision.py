#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_hostpath_decision
short_description: The hostPath check's plan and verdict (which path on which host, and what the stat found)
version_added: 0.1.0
description:
  - The hostPath check's decisions have one owner, C(plugins/module_utils/placement.py); the
    C(rlark.ops.hostpath_check) role only wires them through this action, around one C(ansible.builtin.raw) stat
    per host (no Python needed on the node).
  - V(plan) maps each hostPath volume of O(job) to the inventory hosts of the Nodes its task matched (O(proof)),
    by the collection's host variables C(rlark_node_name), C(rlark_node_cluster), C(rlark_node_root) and the group
    C(rlark_nodes); a Node without an inventory host is the finding C(hostpath-node-unmapped).
  - V(results) turns the stat output of each host (O(outputs)) into per-check results and the findings
    C(hostpath-missing), C(hostpath-not-directory), C(hostpath-not-writable) and C(hostpath-node-unreachable).
  - Runs on the controller; reads the inventory's variables only, writes nothing, and never reports C(changed).
extends_documentation_fragment:
  - rlark.ops.controller_action
  - rlark.ops.controller_action.decision
options:
  phase:
    choices: [plan, results]
  job:
    description: The Job manifest whose hostPath volumes are checked (V(plan)).
    type: dict
    default: {}
  proof:
    description: The selector proof of the Job (M(rlark.ops.rlark_node_match)), the Nodes each task matched (V(plan)).
    type: dict
    default: {}
  plan:
    description: The V(plan) decision (V(results)).
    type: dict
    default: {}
  outputs:
    description:
      - The C(results) of the C(ansible.builtin.raw) task looped over the plan's C(hosts), each with its C(item),
        C(stdout), C(rc) and C(msg) or C(stderr) (V(results)).
    type: list
    elements: dict
    default: []
seealso:
  - module: rlark.ops.rlark_node_match
"""

EXAMPLES = r"""
- name: Plan which path to check on which host
  rlark.ops.rlark_hostpath_decision:
    phase: plan
    job: "{{ job }}"
    proof: "{{ proof }}"
  register: planned

- name: Stat the hostPaths on each matched node
  ansible.builtin.raw: "{{ item.script }}"
  delegate_to: "{{ item.host }}"
  loop: "{{ planned.decision.hosts }}"
  register: stats
  changed_when: false
  failed_when: false

- name: Judge the results
  rlark.ops.rlark_hostpath_decision:
    phase: results
    plan: "{{ planned.decision }}"
    outputs: "{{ stats.results }}"
  register: judged
"""

RETURN = r"""
decision:
  description:
    - The decision of O(phase). V(plan) C({hosts, findings, volumes}), each host C({host, node, root, checks,
      script}); V(results) C({results, findings}), each result a check with C(exists), C(directory) and
      C(writable_ok).
  returned: success
  type: dict
refusal:
  description: Empty; the role fails on the findings of severity C(error).
  returned: success
  type: str
"""
