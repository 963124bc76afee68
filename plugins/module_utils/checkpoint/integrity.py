# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Content integrity of one checkpoint step: a manifest of (relative path, size, sha256), and its check.

Written at guarded stop, verified before resume: a checkpoint that changed in between (a flipped
byte, a file rewritten or removed) is refused. Files are hashed in parallel threads (hashlib
releases the GIL on large buffers) and streamed through one reused buffer per thread, so memory
stays flat whatever the checkpoint size. The schema follows Megatron's ``integrity.json`` idea:
one entry per file with its path relative to the step directory, size and sha256.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import time

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.integrity_schema import (
    ALGORITHM,
    ManifestError,
    manifest_entries,
)
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, finding

SCHEMA = "rlark.ops/integrity/v1"
CHUNK = 1024 * 1024
MANIFEST_LIMIT = 256 * 1024 * 1024
DEFAULT_DIR = "rlark-integrity"  # in the checkpoints root; not global_step_* so RLinf's resume scan ignores it


def default_workers():
    return max(1, os.cpu_count() or 1)


def sha256_stream(opener):
    """(sha256 hex, bytes read) of what ``opener()`` returns, read in CHUNK pieces into one buffer."""
    digest = hashlib.sha256()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    total = 0
    with opener() as fh:
        readinto = getattr(fh, "readinto", None)
        while True:
            if readinto is not None:
                n = readinto(buf)
                if not n:
                    break
                digest.update(view[:n])
            else:
                chunk = fh.read(CHUNK)
                if not chunk:
                    break
                n = len(chunk)
                digest.update(chunk)
            total += n
    return digest.hexdigest(), total


def _hash_all(source, step_name, rels, workers):
    """{rel: (sha256, size)}, hashed by ``workers`` threads that take the next file as they free up."""
    from concurrent.futures import ThreadPoolExecutor  # only when hashing: the gate alone stays light to import

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {rel: pool.submit(sha256_stream, lambda rel=rel: source.open_file(step_name, rel)) for rel in rels}
        return {rel: f.result() for rel, f in futures.items()}


def build_manifest(source, step_name, workers=None):
    """The manifest of every file of ``step_name`` (sorted by path)."""
    start = time.time()
    listing = sorted(source.list_files(step_name))
    hashed = _hash_all(source, step_name, [rel for rel, _size in listing], workers or default_workers())
    files = [{"path": rel, "size": hashed[rel][1], "sha256": hashed[rel][0]} for rel, _size in listing]
    return {
        "schema": SCHEMA,
        "algorithm": ALGORITHM,
        "step_dir": step_name,
        "checkpoint": source.location(step_name),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)),
        "file_count": len(files),
        "total_bytes": sum(f["size"] for f in files),
        "files": files,
    }


def read_manifest(path):
    try:
        with open(path, "rb") as fh:
            data = fh.read(MANIFEST_LIMIT)
    except OSError as exc:
        raise ManifestError("cannot read the integrity manifest %s: %s" % (path, exc.strerror or exc)) from None
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise ManifestError("the integrity manifest %s is not JSON (%s)" % (path, str(exc)[:80])) from None


def write_manifest(path, manifest):
    """Write atomically (temp file + rename) so a reader never sees half a manifest."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as fh:
        fh.write(serialize(manifest))
    os.replace(tmp, path)


def serialize(manifest):
    """The manifest's file content (its sha256 is what a stop record keeps)."""
    return json.dumps(manifest, indent=1, sort_keys=True) + "\n"


def summary(report):
    """What a stop record keeps of an integrity report: where the manifest is and the sha256 of its content.

    The manifest itself only when it has no file (object storage), so that a resume can verify against it.
    """
    report = report or {}
    manifest = report.get("manifest")
    out = {key: report.get(key) for key in ("mode", "status", "path", "files", "bytes")}
    out["step_dir"] = (manifest or {}).get("step_dir")
    out["manifest_sha256"] = hashlib.sha256(serialize(manifest).encode()).hexdigest() if manifest else None
    if manifest and not report.get("path"):
        out["manifest"] = manifest
    return out


def verify(source, step_name, manifest, workers=None):
    """Findings (``integrity-mismatch``) for every listed file that is missing, resized or has another sha256."""
    entries = manifest_entries(manifest)
    present = dict(source.list_files(step_name))
    found = []
    to_hash = []
    for path, size, _digest in entries:
        if path not in present:
            found.append(_mismatch(path, "is listed in the integrity manifest but no longer exists"))
        elif size is not None and present[path] != size:
            found.append(_mismatch(path, "has %d bytes, the manifest says %d" % (present[path], size)))
        else:
            to_hash.append(path)
    hashed = _hash_all(source, step_name, to_hash, workers or default_workers())
    expected = {path: digest for path, _size, digest in entries}
    for path in to_hash:
        if hashed[path][0] != expected[path]:
            found.append(_mismatch(path, "has sha256 %s, the manifest says %s" % (hashed[path][0], expected[path])))
    return found, {"files": len(entries), "bytes": sum(hashed[p][1] for p in to_hash)}


def verify_integrity_lists(source, step_name, lists, workers=None):
    """Findings for every file of a Megatron ``integrity.json`` (the gate checked their sizes) with another sha256."""
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.payloads import integrity_list_entries

    found = []
    for rel in lists:
        try:
            entries = integrity_list_entries(source, step_name, rel)
        except (ManifestError, ValueError) as exc:
            found.append(finding("integrity-manifest-unreadable", "%s: %s" % (rel, str(exc)[:120]), path=rel))
            continue
        hashed = _hash_all(source, step_name, [path for path, _size, _digest in entries], workers or default_workers())
        for path, _size, digest in entries:
            if hashed[path][0] != digest:
                found.append(
                    finding(
                        "integrity-mismatch",
                        "%s has sha256 %s, %s says %s: the checkpoint is not the one its integrity list describes"
                        % (path, hashed[path][0], rel, digest),
                        path=path,
                        hint="do not resume from this checkpoint; find out what wrote to it after the save",
                    )
                )
    return found


def _mismatch(path, what):
    return finding(
        "integrity-mismatch",
        "%s %s: the checkpoint changed after its manifest was written" % (path, what),
        severity=ERROR,
        path=path,
        hint="do not resume from this checkpoint; find out what wrote to it after the guarded stop",
    )


def default_path(source, step_name):
    """Next to the checkpoint on this host (``<root>/rlark-integrity/<step>.json``); None for object storage."""
    if getattr(source, "kind", "") != "local":
        return None
    return os.path.join(source.root, DEFAULT_DIR, step_name + ".json")


STORES = ("file", "result")


def apply(source, result, mode, path=None, manifest=None, workers=None, check_mode=False, store="file"):
    """Write or verify the manifest of the gate's chosen step; update ``result``; return True when a file was written.

    ``store``: ``file`` writes the manifest to ``path`` (default next to the checkpoint; object storage:
    only returned); ``result`` writes no file anywhere, the manifest is only returned (the caller keeps
    it, e.g. in the stop record). Nothing is hashed when the chosen step is already incomplete. A failed
    verification makes the result incomplete with one ``integrity-mismatch`` finding per file.
    """
    if mode == "off":
        return False
    if store not in STORES:
        raise GateError("integrity_store must be one of %s, got %r" % (", ".join(STORES), store))
    step_name = result["checkpoint"].rstrip("/").rpartition("/")[2]
    if mode == "write" and store == "result":
        if path:
            raise GateError(
                "integrity_path %s and integrity_store=result exclude each other: drop integrity_path to keep the"
                " manifest only in the result, or set integrity_store=file to write it there" % path
            )
    else:
        path = path or default_path(source, step_name)
    report = result["integrity"] = {"mode": mode, "path": path, "status": "skipped"}
    if not result["complete"]:
        report["reason"] = "the chosen step is incomplete"
        return False
    start = time.time()
    if mode == "write":
        built = build_manifest(source, step_name, workers)
        report.update(files=built["file_count"], bytes=built["total_bytes"], manifest=built)
        if not path:
            report["status"] = "returned"  # integrity_store=result or object storage without a path: caller keeps it
        elif check_mode:
            report["status"] = "would-write"
        else:
            write_manifest(path, built)
            report["status"] = "written"
        report["seconds"] = round(time.time() - start, 3)
        return report["status"] == "written"
    try:
        if manifest is None:
            if not path:
                raise ManifestError("integrity=verify on object storage needs integrity_path or integrity_manifest")
            manifest = read_manifest(path)
            report["path"] = path
        else:
            report["path"] = None
        written_for = manifest.get("step_dir") if isinstance(manifest, dict) else None
        if written_for and written_for != step_name:
            raise ManifestError(
                "the integrity manifest was written for %s, not for %s: verify the step it was written for"
                % (written_for, step_name)
            )
        found, counts = verify(source, step_name, manifest, workers)
    except ManifestError as exc:
        found, counts = [finding("integrity-manifest-unreadable", str(exc), path=path or "")], {}
    lists = result.get("integrity_lists") or []
    if lists:  # the checkpoint's own Megatron integrity.json: hashes too, now that verification was asked for
        report["integrity_lists"] = list(lists)
        found += verify_integrity_lists(source, step_name, lists, workers)
    report.update(counts, status="failed" if found else "verified", seconds=round(time.time() - start, 3))
    if found:
        result["complete"] = False
        result["findings"] = found + result["findings"]
    return False
