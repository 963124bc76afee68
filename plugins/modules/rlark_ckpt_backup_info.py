#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rlark_ckpt_backup_info
short_description: Read the backup of hostPath checkpoints on the backup server, for the gate to judge
version_added: 0.1.0
description:
  - Run on the backup-server inventory host (C(delegate_to) the host named by C(rlark_checkpoint_backup_host));
    lists every C(global_step_*) directory of the backup root O(path) with each file's size and modification
    time, and with O(sha256) the sha256 of every file of one step.
  - Judges nothing. Its RV(listing) is passed to M(rlark.ops.rlark_ckpt_gate) / M(rlark.ops.rlark_ckpt_wait)
    as O(rlark.ops.rlark_ckpt_gate#module:backup.listing); the gate makes the verdict (C(backup-missing),
    C(backup-incomplete), C(backup-stale), C(backup-mismatch)) from it, as for a directory read on the node.
  - Never writes or deletes anything; C(changed) is always false. Needs only the Python standard library.
author:
  - rlark.ops contributors (@rlark-ops)
options:
  path:
    description: The backup root on this host (it holds C(global_step_N/) directories). Missing is an empty backup.
    type: path
    required: true
  step:
    description:
      - The step whose files are hashed with O(sha256) - a step number, or V(latest) for the newest
        C(global_step_*) of the backup.
    type: str
    default: latest
  sha256:
    description: Hash every file of the step O(step) (reads each of its bytes once).
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: It only reads (lists and hashes), so check mode runs it as it is.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to diff.
"""

EXAMPLES = r"""
- name: Read the backup on the backup server
  rlark.ops.rlark_ckpt_backup_info:
    path: /srv/backup/run1/checkpoints
    step: "6"
    sha256: true
  delegate_to: backup-01
  register: backup_listing

- name: Gate the checkpoint on its node and judge that backup
  rlark.ops.rlark_ckpt_gate:
    path: /data/rlinf/logs/run1/checkpoints
    step: "6"
    integrity: write
    backup:
      path: /srv/backup/run1/checkpoints
      host: backup-01
      listing: "{{ backup_listing.listing }}"
      required: true
  delegate_to: gpu-node-01
"""

RETURN = r"""
listing:
  description:
    - C(root) (the absolute backup root), C(steps) (step name to relative path to C([size, mtime, sha256]),
      sha256 null for files not hashed) and C(hashed) (the step hashed, empty without O(sha256)).
  returned: always
  type: dict
  sample: {root: /srv/backup/run1/checkpoints, hashed: global_step_6,
           steps: {global_step_6: {actor/model.pt: [4096, 1764671000.5, "9f86d08..."]}}}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_store import read_listing
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            step=dict(type="str", default="latest"),
            sha256=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        listing = read_listing(p["path"], step=p["step"], sha256=p["sha256"])
    except GateError as exc:
        module.fail_json(msg="%s (rlark_checkpoint_backup_path)" % exc, changed=False)
    module.exit_json(changed=False, listing=listing)


if __name__ == "__main__":
    main()
