#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_ckpt_dir_decision
short_description: Judge a new Job's checkpoint directory (another run's steps there, checkpoint-dir-reuse)
version_added: 0.1.0
description:
  - The checkpoint-directory guard's verdict has one owner, C(plugins/module_utils/checkpoint/dir_guard.py); the
    C(rlark.ops.checkpoint_dir_guard) role only wires it, after listing the directory where it lives.
  - RLinf overwrites same-numbered C(global_step_*) directories and mixes two runs in one directory, so a new Job
    must not start writing where another run's steps already are. When the listing O(tree) holds steps, the report
    carries one C(checkpoint-dir-reuse) finding naming the Job, the directory and up to five of the steps; its
    severity is C(error), or C(warning) with O(allow_reuse) (the recorded acknowledgement
    C(rlark_allow_checkpoint_dir_reuse=true)).
  - Runs on the controller; reads and writes nothing, and never reports C(changed). The role fails on an error.
extends_documentation_fragment:
  - rlark.ops.controller_action
options:
  job:
    description: The new Job's name, for the finding.
    type: str
    required: true
  location:
    description: Where the new Job will write (the C(rlark.ops.planned_checkpoint_location) filter's result).
    type: dict
    default: {}
  tree:
    description:
      - The directory's listing, an M(rlark.ops.rlark_ckpt_tree) result with its C(steps); without C(steps) the
        directory was not listed (RV(decision.checked) is false).
    type: dict
    default: {}
  allow_reuse:
    description: The user acknowledged writing there (C(rlark_allow_checkpoint_dir_reuse)); the finding is a warning.
    type: bool
    default: false
seealso:
  - module: rlark.ops.rlark_ckpt_tree
"""

EXAMPLES = r"""
- name: List the new Job's checkpoint directory
  rlark.ops.rlark_ckpt_tree:
    path: /data/rlinf/logs/ppo-demo-r40/checkpoints
  register: listing

- name: Judge the directory
  rlark.ops.rlark_ckpt_dir_decision:
    job: ppo-demo-r40
    location: "{{ planned }}"
    tree: "{{ listing }}"
  register: judged

- name: Refuse to write where another run's checkpoints are
  ansible.builtin.fail:
    msg: "{{ judged.decision.findings | rlark.ops.findings_table }}"
  when: judged.decision.findings | selectattr('severity', 'equalto', 'error') | list | length > 0
"""

RETURN = r"""
decision:
  description: The guard's report.
  returned: success
  type: dict
  contains:
    job:
      description: The Job's name.
      type: str
      returned: success
    checked:
      description: The directory was listed.
      type: bool
      returned: success
    location:
      description: O(location).
      type: dict
      returned: success
    steps:
      description: The C(global_step_*) directories found there.
      type: list
      elements: str
      returned: success
    acknowledged:
      description: O(allow_reuse).
      type: bool
      returned: success
    findings:
      description: The C(checkpoint-dir-reuse) finding, or none.
      type: list
      elements: dict
      returned: success
refusal:
  description: Empty; the role fails on the findings of severity C(error).
  returned: success
  type: str
"""
