#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_ckpt_wait_options
short_description: The rlark_ckpt_wait options that gate a located checkpoint
version_added: 0.1.0
description:
  - Turns a checkpoint location (the C(rlark.ops.checkpoint_location) filter's output) into the options of
    M(rlark.ops.rlark_ckpt_wait) (also the C(gate) option of M(rlark.ops.rlark_guarded_stop)), C(path) on the node
    (O(node_root) put before the host path) or C(s3), the step, the wait and the integrity. One owner,
    C(plugins/module_utils/checkpoint/wait_args.py); the C(rlark.ops.checkpoint_gate) role only wires it.
  - It waits (C(wait_timeout) above 0) only for a newer complete step (O(after_step) 0 or more) or with
    O(newest_complete=true) and a positive O(wait_timeout); the timeout is rounded down to whole O(wait_sleep)s.
  - The wait options are the collection's one wait vocabulary (C(after_step), C(wait_timeout), C(wait_sleep)).
  - Options left empty are dropped so the module's defaults apply. Fails, with one sentence, for a location that
    is neither a hostPath nor object storage, for a backup of a checkpoint in object storage, and (with
    O(find_node_host=true)) for a hostPath whose Node has no inventory host.
  - Runs on the controller; reads and writes nothing, and never reports C(changed).
extends_documentation_fragment:
  - rlark.ops.controller_action
options:
  location:
    description: The checkpoint location.
    type: dict
    required: true
  node_root:
    description:
      - The node host's C(rlark_node_root) (where the node's filesystem is mounted on that host).
      - Ignored with O(find_node_host=true) for a hostPath checkpoint, which takes the found host's.
    type: raw
    default: ""
  find_node_host:
    description:
      - For a hostPath checkpoint, find the inventory host of its Node (the host whose C(rlark_node_name) names it,
        or the host of group C(rlark_nodes) named like the Node or its address, as the C(rlark.ops.node_host)
        filter finds it), put that host's C(rlark_node_root) before the host path and return the host as RV(host).
      - Fails, naming the Node, when no inventory host is the Node's.
    type: bool
    default: false
  node_hosts:
    description:
      - With O(find_node_host=true), the only inventory hosts that may be the Node's (the hosts of group
        C(rlark_nodes) are always read); unset, every inventory host.
    type: list
    elements: str
  step:
    description: C(latest) or a step number.
    type: raw
    default: latest
  after_step:
    description: Wait for a complete step newer than this; C(-1) judges what is there.
    type: int
    default: -1
  newest_complete:
    description: Wait for the newest step to be complete and quiet.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait.
    type: raw
    default: 0
  wait_sleep:
    description: Seconds between two looks.
    type: raw
    default: 2
  integrity:
    description: C(off), C(write) or C(verify).
    type: raw
    default: "off"
  integrity_manifest:
    description: A recorded integrity manifest to verify against.
    type: raw
  integrity_store:
    description: Where C(integrity=write) keeps the manifest, C(file) or C(result) (see M(rlark.ops.rlark_ckpt_gate)).
    type: raw
    default: file
  backup:
    description:
      - Where the backup of a hostPath checkpoint lives and what to do with it (the
        O(rlark.ops.rlark_ckpt_gate#module:backup) option, C(path), C(host), C(s3), C(required), C(make),
        C(batch_files)); empty values are dropped and nothing is passed when neither C(path) nor C(s3) is set.
      - A C(path) is read on the node host, below O(node_root); only C(bucket), C(prefix), C(endpoint_url) and
        C(region) of C(s3) are passed (credentials come from the environment of the host that runs the gate).
    type: raw
  options:
    description:
      - Extra gate options; only C(runner), C(backend), C(actor_world_size), C(tensor_parallel),
        C(pipeline_parallel), C(expert_parallel), C(critic), C(full_weights), C(quiet_seconds),
        C(verify_payloads) and C(hash_workers) are taken.
    type: raw
seealso:
  - module: rlark.ops.rlark_ckpt_wait
  - module: rlark.ops.rlark_ckpt_gate
"""

EXAMPLES = r"""
- name: Wait up to 10 minutes for a complete step after 40, where ppo-demo-r40 writes
  rlark.ops.rlark_ckpt_wait_options:
    location: "{{ planned }}"
    node_root: /mnt/a100-01
    after_step: 40
    wait_timeout: 600
    options:
      runner: embodied
  register: wait

- name: The same for a hostPath, on whichever inventory host is the checkpoint's Node
  rlark.ops.rlark_ckpt_wait_options:
    location: "{{ planned }}"
    find_node_host: true
  register: on_node

- name: Gate it on the node
  rlark.ops.rlark_ckpt_wait:
    path: "{{ wait.decision.path }}"
    after_step: "{{ wait.decision.after_step }}"
    wait_timeout: "{{ wait.decision.wait_timeout }}"
    runner: "{{ wait.decision.runner }}"
  delegate_to: a100-01
"""

RETURN = r"""
decision:
  description:
    - The M(rlark.ops.rlark_ckpt_wait) options, C({path | s3, step, after_step, newest_complete, wait_timeout,
      wait_sleep, integrity, ...}).
  returned: success
  type: dict
refusal:
  description: Empty; bad input fails the task.
  returned: success
  type: str
host:
  description:
    - The inventory host of the checkpoint's Node (where M(rlark.ops.rlark_ckpt_wait) runs), found with
      O(find_node_host=true) for a hostPath; null otherwise.
  returned: success
  type: str
  sample: a100-01
"""
