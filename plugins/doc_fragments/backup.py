# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    # The backup of a hostPath checkpoint (rlark_ckpt_gate, rlark_ckpt_wait; checkpoint/backup.py decides).
    DOCUMENTATION = r"""
options:
  backup:
    description:
      - The backup of a hostPath checkpoint (C(path)), made when asked and judged for the chosen step once it passed
        the gate (after C(integrity)); the verdict is returned in C(backup). The roles set it from the variables
        C(rlark_checkpoint_backup_*).
      - The backup holds the layout of the checkpoints root, C(<backup root>/global_step_N/<file>). For the chosen
        step it must hold every file of the original with the same size (else C(backup-missing) or
        C(backup-incomplete) naming the file), written no earlier than the original file (else C(backup-stale)),
        and, when the gate has the step's integrity manifest (C(integrity=write) or a passed C(integrity=verify)),
        the same sha256 (else C(backup-mismatch)). No copy of the step at all is C(backup-missing) naming the step.
      - Not for object-storage checkpoints (C(s3)). M(rlark.ops.rlark_ckpt_stage) reads the location only
        (C(required) and C(make) do not apply there).
    type: dict
    suboptions:
      path:
        description:
          - A directory holding the backup on the host that runs the gate (the node; for a backup server, its
            export mounted there, e.g. over NFS), or on the backup-server inventory host O(backup.host) when
            O(backup.listing) is given. Exclusive with O(backup.s3).
        type: path
      host:
        description:
          - The host that serves O(backup.path), kept in the location for records (C(host:path)).
          - The roles read the backup on that host when it is an inventory host (M(rlark.ops.rlark_ckpt_backup_info)
            delegated to it) and pass what they read as O(backup.listing); otherwise O(backup.path) is read on the
            node (for example the NFS mount of that server).
        type: str
      listing:
        description:
          - The backup as read on the backup host O(backup.host) by M(rlark.ops.rlark_ckpt_backup_info) (its
            RV(rlark.ops.rlark_ckpt_backup_info#module:listing)). The backup is then judged from it, unchanged
            (same findings); O(backup.make) is refused, the collection never copies to another host.
        type: dict
      s3:
        description:
          - An S3 prefix holding the backup. Credentials and endpoint fall back to the same environment variables
            as C(s3).
        type: dict
        suboptions:
          bucket:
            description: The bucket of the backup.
            type: str
            required: true
          prefix:
            description: The key prefix of the backup root (it holds C(global_step_N/) prefixes).
            type: str
            default: ''
          endpoint_url:
            description: The S3-compatible endpoint of the backup bucket.
            type: str
          region:
            description: The region of the backup bucket.
            type: str
          access_key:
            description: The access key id for the backup bucket.
            type: str
          secret_key:
            description: The secret access key for the backup bucket (never printed).
            type: str
      required:
        description:
          - A backup that does not hold makes the gate result incomplete (C(complete) false, its findings first in
            C(findings)), so a guarded stop refuses. With V(false) the verdict is only reported.
        type: bool
        default: false
      make:
        description:
          - Copy the chosen step to the backup first, then judge it. Each file is read once (hashed while it is
            copied, streamed; S3 uploads are multipart), written under the step's own name only and atomically;
            nothing else in the backup location is replaced or deleted.
          - Resumable - a progress manifest C(<backup root>/rlark-backup/global_step_N.json), written after every
            batch, lists the files copied; a later run copies only the others. Check mode copies nothing.
          - Refused with O(backup.listing) (a backup on another host, O(backup.host)) - the collection does not copy
            between hosts.
        type: bool
        default: false
      batch_files:
        description:
          - Files per progress line and progress-manifest write while making the backup (also at least every
            256 MiB). Progress lines are printed when the gate runs in the worker (local connection), else returned
            in C(made.progress).
        type: int
        default: 16
"""
