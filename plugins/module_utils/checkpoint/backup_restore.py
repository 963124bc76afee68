# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage one step from its backup onto another node's disk, verified against the step's integrity manifest.

For a resume when the node that held a hostPath checkpoint is gone or cordoned: the files the manifest lists
are copied from the backup store into ``<root>/.rlark-staging-global_step_N/`` on this host (each read once,
hashed while written, keeping the original's modification time), compared with the manifest, and only when
every file matches is the staging directory renamed to ``<root>/global_step_N``. Nothing that exists is
replaced or deleted: an existing ``global_step_N`` refuses the staging (resume from it as it is, or choose
another root); an interrupted
staging keeps its files and a later run copies only what is missing or differs. The verdict uses the
backup's finding ids (``backup.judge``): a file the backup lacks is ``backup-missing``, one with another size
``backup-incomplete``, another sha256 ``backup-mismatch``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_store import DirStore, open_store, sha256_of
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.integrity_schema import manifest_entries
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError

STAGING = ".rlark-staging-"  # not global_step_*: RLinf's resume scan never sees a half-staged step
NO_TIME = float("-inf")  # staging judges files and sizes: the backup's age was judged when the stop was gated


def _staged_hashes(staging, step_name, expected, sizes):
    """{rel: sha256} of files an earlier staging left with the manifest's size (hashed again: a file is trusted
    only by its content)."""
    out = {}
    for rel, (size, _mtime) in staging.list(step_name).items():
        if rel in expected and sizes.get(rel) == size:
            out[rel] = sha256_of(staging, step_name, rel)
    return out


def _original_mtime(recorded, rel, backup_mtime):
    """A staged file keeps the time of the original (the backup's progress manifest has it when the collection made
    the backup), else the backup's own: a copy staged now is no save running, for the gate's quiet period."""
    entry = (recorded.get("files") or {}).get(rel) if isinstance(recorded, dict) else None
    when = entry.get("source_mtime") if isinstance(entry, dict) else None
    return when if isinstance(when, (int, float)) else backup_mtime


def stage(spec, step_name, root, manifest, check_mode=False):
    """Stage ``step_name`` from the backup ``spec`` (gate option ``backup``) under ``root``; the report.

    ``{status (staged|would-stage|failed), path, source, files, bytes, copied, kept, findings}``; raises
    GateError for what no finding describes (no manifest, the step exists already).
    """
    entries = manifest_entries(manifest) if manifest else []
    if not entries:
        raise GateError(
            "staging %s from its backup needs the step's integrity manifest (the stop record keeps it with "
            "rlark_checkpoint_integrity=write and rlark_checkpoint_integrity_store=record)" % step_name
        )
    written_for = manifest.get("step_dir") if isinstance(manifest, dict) else None
    if written_for and written_for != step_name:
        raise GateError("the integrity manifest was written for %s, not for %s" % (written_for, step_name))
    spec = backup.normalize(dict(spec or {}, make=False, required=True))
    if spec is None:
        raise GateError("set the backup location: rlark_checkpoint_backup_path or rlark_checkpoint_backup_s3")
    store = open_store(spec)
    final = os.path.join(root, step_name)
    if os.path.lexists(final):
        raise GateError(
            "%s exists already on this host: nothing was staged over it. Resume from it as it is, or remove it "
            "yourself if it is not a checkpoint anyone needs" % final
        )
    expected = {path: digest for path, _size, digest in entries}
    sizes = {path: size for path, size, _digest in entries}
    listing = store.list(step_name)
    report = {"status": "would-stage" if check_mode else "failed", "path": final, "source": store.location(step_name),
              "files": len(entries), "bytes": sum(s or 0 for s in sizes.values()), "copied": 0, "kept": 0}  # fmt: skip
    wanted = {rel: listing[rel] for rel in expected if rel in listing}
    found = backup.judge({rel: (sizes[rel], NO_TIME) for rel in expected}, wanted, step_name, report["source"])
    if found or check_mode:
        report["findings"] = found
        return report
    staging = DirStore(os.path.join(root, STAGING + step_name))
    recorded = store.read_progress(step_name) or {}
    known = _staged_hashes(staging, "", expected, sizes)
    for rel in sorted(expected):
        if known.get(rel) == expected[rel]:
            report["kept"] += 1
            continue
        with store.open(step_name, rel) as fh:
            known[rel] = staging.put("", rel, fh)[0]
        report["copied"] += 1
        when = _original_mtime(recorded, rel, listing[rel][1])
        os.utime(staging.step_path("", rel), (when, when))
    found = [
        backup.problem("backup-mismatch", rel, "%s/%s staged from %s has sha256 %s, the integrity manifest says %s"
                       % (step_name, rel, report["source"], known[rel], expected[rel]))
        for rel in sorted(expected) if known[rel] != expected[rel]
    ]  # fmt: skip
    report["findings"] = found
    if not found:
        os.rename(staging.root, final)  # one rename: the step appears whole or not at all
        report["status"] = "staged"
    return report


def resume_problem(location, node, manifest, source_job, backup=None, host_in_inventory=False):
    """Why a resume from the backup cannot start ('' when it can): a hostPath checkpoint, another node named,
    the step's integrity manifest at hand, and a backup the new node can read.

    ``backup`` is the role's ``resume_backup`` ({path, s3, host, mount}); ``host_in_inventory`` whether its
    ``host`` names an inventory host. Such a host's directory is on that host, not on the node: the staging reads
    it only where the node mounts it (``mount``), since the collection never copies between hosts."""
    location = location or {}
    backup = backup or {}
    if location.get("kind") != "hostPath":
        return "the checkpoint is not a hostPath (%s); only hostPath checkpoints have a backup." % location.get("kind")
    if not node or node == location.get("node"):
        return "set rlark_resume_node to the approved node to run on (not %s, the original's)." % location.get("node")
    if not manifest:
        return (
            "no stop record of %s keeps an integrity manifest for that step: stop it with "
            "rlark_checkpoint_integrity=write and rlark_checkpoint_integrity_store=record." % source_job
        )
    if backup.get("path") and not backup.get("s3") and host_in_inventory and not backup.get("mount"):
        return (
            "the backup %s is on the backup host %s (rlark_checkpoint_backup_host), not on node %s, and the "
            "collection never copies between hosts: mount that directory on node %s and set "
            "rlark_checkpoint_backup_mount to the path where the node sees it, or copy the step to the node or to "
            "S3 yourself and resume from there (rlark_checkpoint_backup_path without rlark_checkpoint_backup_host, "
            "or rlark_checkpoint_backup_s3)." % (backup["path"], backup.get("host"), node, node)
        )
    return ""
