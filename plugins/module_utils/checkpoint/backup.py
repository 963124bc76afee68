# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The backup of a hostPath checkpoint: does it hold the gated step? The one place that decides it.

A hostPath checkpoint lives on one node's disk. Its backup (a directory - a local disk or an NFS mount of
a backup server - or an S3 prefix) holds the same layout as the checkpoints root. For the step the gate
chose, the backup must hold every file of the original with the same size, written no earlier than the
original file (a copy older than the save is stale), and - when the gate has the step's integrity
manifest (``integrity`` write or verify) - the same sha256. ``apply`` makes the backup first when asked
(``backup_copy.make``), then judges it and puts the verdict in the gate result under ``backup``; with
``required`` a backup that does not hold makes the gate result incomplete, so a guarded stop refuses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_copy import make
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_store import DirStore, open_store, sha256_of
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, finding

STALE_TOLERANCE = 1.0  # seconds: S3 LastModified has whole seconds; a copy that keeps mtimes (rsync -a) is equal
WHERE = "rlark_checkpoint_backup_path / rlark_checkpoint_backup_s3"
HINT = (
    "copy the step to the backup again (or set rlark_checkpoint_backup_make=true to have the collection copy it) "
    "and run again; rlark_checkpoint_backup_required=false lets the stop go without a backup"
)
KEYS = ("path", "host", "s3", "required", "make", "batch_files", "listing")


def normalize(spec):
    """The backup option with defaults, or None when no backup location is set (raises GateError on bad input)."""
    spec = {k: v for k, v in (spec or {}).items() if k in KEYS and v not in (None, "", {})}
    if not spec.get("path") and not spec.get("s3"):
        if spec.get("required") or spec.get("make"):
            raise GateError(
                "rlark_checkpoint_backup_required/make need a backup location: set rlark_checkpoint_backup_path "
                "(a directory) or rlark_checkpoint_backup_s3 (bucket, prefix)"
            )
        return None
    if spec.get("path") and spec.get("s3"):
        raise GateError("set one backup location: rlark_checkpoint_backup_path or rlark_checkpoint_backup_s3, not both")
    if spec.get("listing") and spec.get("make"):
        raise GateError(
            "rlark_checkpoint_backup_make cannot copy to a directory on another host: rlark_checkpoint_backup_host "
            "%s is an inventory host, so its directory is only read there. Copy the step there yourself (e.g. rsync) "
            "and set rlark_checkpoint_backup_make=false, or unset rlark_checkpoint_backup_host to make the backup in "
            "rlark_checkpoint_backup_path as seen from the node (an NFS mount)" % spec.get("host")
        )
    if spec.get("s3") and not spec["s3"].get("bucket"):
        raise GateError("rlark_checkpoint_backup_s3 needs a bucket")
    batch = spec.get("batch_files", 16)
    if not isinstance(batch, int) or batch < 1:
        raise GateError("backup batch_files must be at least 1, got %r" % (batch,))
    return dict(spec, required=bool(spec.get("required")), make=bool(spec.get("make")), batch_files=batch)


def problem(id, rel, message):
    return finding(id, message, severity=ERROR, path=rel, hint=HINT)


def judge(listing, backup, step_name, location, expected=None, hash_of=None, known=None):
    """Findings for a backup (``backup``: {rel: (size, mtime)}) of a step (``listing``: the original's).

    ``expected``: {rel: sha256} of the integrity manifest (None: sizes and times only); ``hash_of(rel)``
    hashes a backup file; ``known``: {rel: sha256} of files this run copied (hashed while copying).
    """
    if not backup:
        return [
            problem(
                "backup-missing",
                step_name,
                "the backup %s holds no copy of %s (%s)" % (location, step_name, WHERE),
            )
        ]
    found = []
    for rel in sorted(listing):
        size, mtime = listing[rel]
        got = backup.get(rel)
        if got is None:
            found.append(problem("backup-missing", rel, "%s/%s is not in the backup %s" % (step_name, rel, location)))
        elif got[0] != size:
            found.append(
                problem(
                    "backup-incomplete",
                    rel,
                    "%s/%s has %d bytes in the backup %s, %d in the original"
                    % (step_name, rel, got[0], location, size),
                )
            )
        elif got[1] + STALE_TOLERANCE < mtime:
            found.append(
                problem(
                    "backup-stale",
                    rel,
                    "%s/%s in the backup %s was written %.0f s before the original's last write: it is older than the "
                    "save" % (step_name, rel, location, mtime - got[1]),
                )
            )
        elif expected is not None and rel in expected:
            have = (known or {}).get(rel) or hash_of(rel)
            if have != expected[rel]:
                found.append(
                    problem(
                        "backup-mismatch",
                        rel,
                        "%s/%s in the backup %s has sha256 %s, the integrity manifest of the original says %s"
                        % (step_name, rel, location, have, expected[rel]),
                    )
                )
    return found


def backup_sha256(store, step_name, rel):
    """sha256 of a backup file: as listed on the backup host (ListedStore), else read through the store."""
    own = getattr(store, "sha256", None)
    return own(step_name, rel) if own else sha256_of(store, step_name, rel)


def manifest_hashes(result, given=None):
    """{rel: sha256} of the chosen step's integrity manifest when the gate has one (write, or a passed verify)."""
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.integrity import read_manifest
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.integrity_schema import (
        ManifestError,
        manifest_entries,
    )

    report = result.get("integrity") or {}
    manifest = report.get("manifest")
    if manifest is None and report.get("mode") == "verify" and report.get("status") == "verified":
        try:
            manifest = given or read_manifest(report["path"])
        except ManifestError:
            return None
    if not manifest:
        return None
    return {path: digest for path, _size, digest in manifest_entries(manifest)}


def apply(source, result, spec, manifest=None, check_mode=False, progress=None):
    """Make (when asked) and judge the backup of the gate's chosen step; update ``result``; True when files were
    copied. ``spec``: the ``backup`` option; ``manifest``: the integrity manifest passed to the gate, if any."""
    spec = normalize(spec)
    if spec is None:
        return False
    if getattr(source, "kind", "") != "local":
        raise GateError(
            "rlark_checkpoint_backup_* is for hostPath checkpoints; %s is object storage already: unset the backup "
            "options for this Job" % source.describe()
        )
    store = open_store(spec)
    step_name = result["checkpoint"].rstrip("/").rpartition("/")[2]
    report = result["backup"] = {
        "location": store.location(step_name),
        "kind": store.kind,
        "required": spec["required"],
        "verdict": "skipped",
        "findings": [],
    }
    if not result["complete"]:
        report["reason"] = "the chosen step is incomplete"
        return False
    original = DirStore(source.root)
    listing = original.list(step_name)
    known = {}
    if spec["make"]:
        lines = []
        try:
            made = make(original, store, step_name, listing, spec["batch_files"], check_mode, progress or lines.append)
        except GateError as exc:  # what was copied is recorded; the verdict below names what is not there yet
            made = {"status": "interrupted", "error": str(exc), "copied": 0, "hashes": {}}
        known = made.pop("hashes")
        report["made"] = dict(made, progress=lines) if lines else made
        if check_mode:
            report.update(verdict="would-make", reason="check mode: the backup would be made, then judged")
            return False
    expected = manifest_hashes(result, manifest)
    found = judge(
        listing, store.list(step_name), step_name, report["location"], expected,
        lambda rel: backup_sha256(store, step_name, rel), known,
    )  # fmt: skip
    report.update(
        verdict="failed" if found else "verified",
        checked="files, sizes, times" + (", sha256" if expected is not None else ""),
        files=len(listing),
        bytes=sum(size for size, _mtime in listing.values()),
        findings=found,
    )
    if found and spec["required"]:
        result["complete"] = False
        result["findings"] = found + list(result.get("findings") or [])
    return bool(spec["make"] and report["made"]["copied"])


def summary(report):
    """What a stop record keeps of the backup verdict: where, what was checked, the verdict and its findings."""
    report = report or {}
    out = {k: report.get(k) for k in ("location", "kind", "required", "verdict", "checked", "files", "bytes")}
    out["findings"] = [{k: f.get(k) for k in ("id", "path", "message")} for f in (report.get("findings") or [])[:20]]
    if report.get("made"):
        out["made"] = dict(report["made"])
    return out


RULES = (
    ("backup-missing", ERROR, judge),
    ("backup-incomplete", ERROR, judge),
    ("backup-stale", ERROR, judge),
    ("backup-mismatch", ERROR, judge),
)
