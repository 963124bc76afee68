#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_resume_decision
short_description: One decision of a resume (step, backup, checkpoint, copy, original-tree proof, outcome)
version_added: 0.1.0
description:
  - The resume's decisions have one owner, C(plugins/module_utils/resume_decision.py); the C(rlark.ops.resume) role
    only wires them through this action, one O(phase) at a time, between the reads, the gate and the creation.
  - V(plan) refuses an original that is missing or still running, parses O(step) (V(latest), C(N) or
    C(global_step_N)), finds the earlier resume that is this run (nothing is created then, RV(decision) says
    so), locates the original's checkpoints and, with O(read_records), takes the integrity manifest a stop record of
    the original keeps for the step (the reference of integrity verify and of a resume from the backup).
  - V(backup) refuses a resume from the backup (C(rlark_resume_from_backup)) that lacks what it needs, a hostPath
    checkpoint, another node to run on (O(node)), the step's integrity manifest (O(reference_manifest)) or a backup
    the new node can read (a directory on a backup host, O(backup_host_known), only where the node mounts it), or a
    node without an inventory host.
  - V(checkpoint) refuses a partial or missing gated checkpoint (the C(integrity-*) findings in a table), and names
    the directory the new Job resumes from and the new Job (O(new_name), else C(<source>-r<step>)).
  - V(copy) reviews the dry-run copy O(preview) like a new submission (apart from the intended C(runner.resume_dir)
    and experiment overrides; C(resume-override) when it does not carry exactly those) and plans where the new Job
    writes its checkpoints.
  - V(tree) judges the original-tree proof (C(resume-original-changed) when the original run's checkpoints changed).
  - V(outcome) is the report of the resume.
  - "Runs on the controller; reads only (the stop records under O(records_dir)). A refusal does not fail the task:
    it is RV(refusal), and the role fails with it."
extends_documentation_fragment:
  - rlark.ops.controller_action
  - rlark.ops.controller_action.decision
attributes:
  check_mode:
    description: Writes nothing in any mode; V(outcome) words the report for check mode.
options:
  phase:
    choices: [plan, backup, checkpoint, copy, tree, outcome]
  source:
    description: The original Job's name (C(rlark_resume_source)).
    type: str
    required: true
  resource:
    description: The original as C(rlark.ops.rlark_job_info) read it (C({job, tasks, pods, nodes})); V(plan), V(copy).
    type: dict
    default: {}
  earlier:
    description: The Jobs labelled C(rlark.ops/resumed-from=<source>) (V(plan)).
    type: list
    elements: dict
    default: []
  step:
    description: The step asked for (V(plan)) or decided (V(checkpoint)), V(latest), C(N) or C(global_step_N).
    type: raw
    default: latest
  new_name:
    description: The new Job's name (C(rlark_resume_name)); empty means C(<source>-r<step>).
    type: str
    default: ""
  manifest:
    description: The launch manifest (C(rlark_launch_manifest)) as data (V(plan), V(copy)).
    type: dict
    default: {}
  profile:
    description: The deployment profile (C(rlark_deployment_profile)) as data (V(copy)).
    type: dict
    default: {}
  root:
    description: The checkpoint root when the Job does not say it (C(rlark_checkpoint_root); V(plan)).
    type: str
    default: ""
  object_storage:
    description: The object storage of the checkpoints (C(rlark_object_storage); V(plan), V(copy)).
    type: dict
    default: {}
  records_dir:
    description: The records root (C(rlark_records_dir)), read with O(read_records) (V(plan)).
    type: path
  read_records:
    description: Read the original's stop records for the reference integrity manifest (V(plan)).
    type: bool
    default: false
  location:
    description: The original's checkpoint location (V(backup), V(checkpoint), V(copy), V(tree)).
    type: dict
    default: {}
  gate:
    description: The C(rlark.ops.checkpoint_gate) role's result for the chosen step (V(checkpoint)).
    type: dict
    default: {}
  preview:
    description: The server-side dry-run copy (V(copy)).
    type: dict
    default: {}
  resume_dir:
    description: The directory the new Job resumes from (V(copy)).
    type: str
    default: ""
  name:
    description: The new Job's name (V(copy)).
    type: str
    default: ""
  diff:
    description: The comparison of the original tree with its snapshot (V(tree)).
    type: dict
    default: {}
  created:
    description: What was created, C({name, step, resume_dir, root, changed}) (V(outcome)).
    type: dict
    default: {}
  verify:
    description: Whether the new Job was to be verified (V(outcome)).
    type: bool
    default: true
  verify_report:
    description: The verify role's report (V(outcome)).
    type: dict
    default: {}
  node:
    description:
      - The node to resume on (C(rlark_resume_node); V(backup)); its inventory host (the host whose C(rlark_node_name)
        names it, or the host of group C(rlark_nodes) named like it) is found, and a node without one refused.
    type: str
    default: ""
  reference_manifest:
    description: The integrity manifest of the step, the V(plan) decision's C(reference_manifest) (V(backup)).
    type: dict
    default: {}
  backup:
    description: The backup to resume from, C({path, s3, host, mount}) (C(rlark_checkpoint_backup_*); V(backup)).
    type: dict
    default: {}
  backup_host_known:
    description:
      - The backup's C(host) is an inventory host, so its directory is on that host, not on the node (V(backup)).
    type: bool
    default: false
seealso:
  - module: rlark.ops.rlark_job
  - module: rlark.ops.rlark_resume_sentinel
"""

EXAMPLES = r"""
- name: Decide the step and whether this run is an earlier resume
  rlark.ops.rlark_resume_decision:
    phase: plan
    source: ppo-demo
    resource: "{{ info.resources | first | default({}) }}"
    earlier: "{{ earlier.resources | map(attribute='job') | list }}"
    step: latest
  register: plan

- name: Refuse what the plan refuses
  ansible.builtin.fail:
    msg: "{{ plan.refusal }}"
  when: plan.refusal | length > 0
"""

RETURN = r"""
decision:
  description:
    - The decision of O(phase). V(plan) C({refusal, step, already, outcome, location, reference_manifest});
      V(backup) C({refusal, host}) (C(host) the inventory host of O(node)); V(checkpoint) C({refusal, gate, step,
      resume_dir, name}); V(copy) C({refusal, findings, new_location});
      V(tree) C({refusal, findings}); V(outcome) the resume's report.
  returned: success
  type: dict
refusal:
  description: Why the resume must stop here, naming what to set (empty when it may go on).
  returned: success
  type: str
"""
