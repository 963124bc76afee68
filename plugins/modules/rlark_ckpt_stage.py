#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rlark_ckpt_stage
short_description: Stage one RLinf checkpoint step from its backup onto this host, verified against its manifest
version_added: 0.1.0
description:
  - For a resume when the node that held a hostPath checkpoint is gone or cordoned - copies step O(step) from its
    backup (O(backup), a directory or an S3 prefix, the layout the guarded stop verifies and makes) into
    O(root) on the host the module runs on (the node the new Job is placed on).
  - Every file the integrity manifest O(manifest) lists is read once and hashed while written, into
    C(<root>/.rlark-staging-global_step_N/); only when every file has the manifest's sha256 is that directory
    renamed to C(<root>/global_step_N), so the step appears whole or not at all. Otherwise the module fails with
    C(backup-missing), C(backup-incomplete) or C(backup-mismatch) findings naming the file, and no step appears.
  - Never replaces or deletes anything - an existing C(global_step_N) under O(root) fails the module; the files of
    an interrupted staging are kept and only what is missing or differs is copied again. The original checkpoint
    and its backup are only read.
author:
  - rlark.ops contributors (@rlark-ops)
options:
  root:
    description: The checkpoints root on this host (the directory the step is staged under).
    type: path
    required: true
  step:
    description: The step, as a number (V(40)) or its directory name (V(global_step_40)).
    type: str
    required: true
  manifest:
    description:
      - The step's integrity manifest (the one the guarded stop kept in its stop record with
        C(rlark_checkpoint_integrity=write) and C(rlark_checkpoint_integrity_store=record)). Required - the staged
        copy is trusted only by it.
    type: dict
    required: true
extends_documentation_fragment:
  - rlark.ops.backup
attributes:
  check_mode:
    support: full
    description: Check mode lists the backup and compares it with the manifest's files and sizes; it copies nothing.
  diff_mode:
    support: none
    description: No diff is reported.
  platform:
    support: full
    platforms: posix
    description: Runs on the node host the new Job is placed on; boto3 only for an S3 backup.
requirements:
  - boto3 (only for an S3 backup, on the host that runs the module)
seealso:
  - module: rlark.ops.rlark_ckpt_gate
"""

EXAMPLES = r"""
- name: Stage step 6 of run1 from the backup bucket onto a100-02
  rlark.ops.rlark_ckpt_stage:
    root: /data/rlinf/logs/run1/checkpoints
    step: "6"
    manifest: "{{ stop_record.data.integrity.manifest }}"
    backup:
      s3:
        bucket: checkpoint-backups
        prefix: run1/checkpoints
  delegate_to: node-a100-02
"""

RETURN = r"""
status:
  description: V(staged), V(would-stage) (check mode) or V(failed).
  returned: always
  type: str
  sample: staged
path:
  description: The staged step directory on this host.
  returned: always
  type: str
  sample: /data/rlinf/logs/run1/checkpoints/global_step_6
source:
  description: Where the step was read from.
  returned: always
  type: str
  sample: s3://checkpoint-backups/run1/checkpoints/global_step_6/
files:
  description: Files the manifest lists.
  returned: always
  type: int
bytes:
  description: Bytes the manifest lists.
  returned: always
  type: int
copied:
  description: Files copied by this run.
  returned: always
  type: int
kept:
  description: Files an interrupted staging had left with the manifest's sha256 (not copied again).
  returned: always
  type: int
findings:
  description: C(backup-missing), C(backup-incomplete), C(backup-mismatch) findings naming the file.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rlark.ops.plugins.module_utils import step_names
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.findings import render
from ansible_collections.rlark.ops.plugins.module_utils.s3_options import BACKUP_ARG_SPEC


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", required=True),
            step=dict(type="str", required=True),
            manifest=dict(type="dict", required=True),
            backup=dict(type="dict", options=BACKUP_ARG_SPEC),
        ),
        supports_check_mode=True,
    )
    p = module.params
    number = step_names.parse_step(p["step"])
    if not isinstance(number, int):
        module.fail_json(msg="step must be a number or global_step_N, got %r" % p["step"])
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_restore import stage

    try:
        report = stage(p["backup"], step_names.step_name(number), p["root"], p["manifest"], module.check_mode)
    except (GateError, OSError) as exc:
        module.fail_json(msg="staging from the backup: %s" % exc, changed=False)
    if report["findings"]:
        module.fail_json(
            msg="The backup does not hold %s as its integrity manifest describes; nothing was staged:\n%s"
            % (report["source"], render(report["findings"], "the backup")),
            changed=report["copied"] > 0,
            **report,
        )
    module.exit_json(changed=report["status"] == "staged", **report)


if __name__ == "__main__":
    main()
