# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of one checkpoint wait for a located checkpoint: what the checkpoint_gate role passes to
rlark_ckpt_wait, rlark_ckpt_tree and rlark_guarded_stop, in the one wait vocabulary (wait_options: after_step,
wait_timeout, wait_sleep). Asked through the rlark_ckpt_wait_options action; raises ``ValueError`` with one
sentence on bad input."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup as backup_rules
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.options import GATE_OPTIONS

# Gate options a caller may pass through: the step and the report size are the role's to set, and integrity is
# set on its own so a resume never writes a manifest.
PASSED_OPTIONS = tuple(o for o in GATE_OPTIONS if o not in ("step", "full_report")) + ("hash_workers",)
S3_KEYS = ("bucket", "prefix", "endpoint_url", "region")


def wait_args(location, node_root="", step="latest", after_step=-1, newest_complete=False, wait_timeout=0,
              wait_sleep=2, integrity="off", integrity_manifest=None, options=None, integrity_store="file",
              backup=None):  # fmt: skip
    """The rlark_ckpt_wait options for a checkpoint location (None values dropped so the plugin defaults apply)."""
    location = location or {}
    kind = location.get("kind")
    if kind not in ("hostPath", "s3"):
        raise ValueError("no checkpoint storage to gate (kind %r)" % kind)
    try:
        after_step, wait_timeout, wait_sleep = int(after_step), float(wait_timeout), float(wait_sleep)
    except (TypeError, ValueError) as exc:
        raise ValueError(str(exc)) from exc
    if wait_sleep <= 0:
        raise ValueError("wait_sleep must be positive, not %s" % wait_sleep)
    # Poll only while waiting for a newer complete step, or for the newest step to be complete and quiet;
    # whole polls only: a 1 s budget with 2 s between polls judges once.
    polls = after_step >= 0 or (bool(newest_complete) and wait_timeout > 0)
    args = {
        "path": (node_root or "") + location.get("host_path", "") if kind == "hostPath" else None,
        "s3": {k: v for k, v in (location.get("s3") or {}).items() if k in S3_KEYS and v is not None}
        if kind == "s3"
        else None,
        "step": step,
        "after_step": after_step,
        "newest_complete": bool(newest_complete),
        "wait_timeout": int(wait_timeout / wait_sleep) * wait_sleep if polls else 0.0,
        "wait_sleep": wait_sleep,
        "integrity": integrity or "off",
        "integrity_manifest": integrity_manifest or None,
        "integrity_store": integrity_store or "file",
    }
    args.update({k: v for k, v in (options or {}).items() if k in PASSED_OPTIONS})
    args["backup"] = _backup(backup, kind, node_root)
    return {k: v for k, v in args.items() if v is not None}


def _backup(spec, kind, node_root):
    """The gate's ``backup`` option (checkpoint/backup.py normalizes it): a directory is read on the node, below
    its ``rlark_node_root`` like the checkpoint (unless ``listing`` holds it as read on the backup host); only the
    S3 target's location keys (credentials come from the environment of the host that runs the gate)."""
    try:
        spec = backup_rules.normalize(spec)
    except GateError as exc:
        raise ValueError(str(exc)) from exc
    if spec is None:
        return None
    if kind != "hostPath":
        raise ValueError(
            "rlark_checkpoint_backup_* is for hostPath checkpoints; this one is in object storage already: unset the "
            "backup variables for it"
        )
    if spec.get("path") and not spec.get("listing"):  # a listing was read on the backup host, below its own root
        spec["path"] = (node_root or "") + spec["path"]
    if spec.get("s3"):
        spec["s3"] = {k: v for k, v in spec["s3"].items() if k in S3_KEYS and v not in (None, "")}
    return spec


__all__ = ["PASSED_OPTIONS", "S3_KEYS", "wait_args"]
