# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A whole checkpoint tree as data, to prove later that nothing in it changed.

A snapshot lists every file below a root with its size and modification time (optionally its
sha256) on a local file system, or every key below a prefix with its size, ETag and LastModified in
S3 (all pages). ``tree_diff`` compares two snapshots; ``step_names`` lists the ``global_step_*``
entries directly below the root (a checkpoint directory some run wrote). Reads only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os

from ansible_collections.rlark.ops.plugins.module_utils import hydra
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError

CHUNK = 1 << 20


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def local_tree(root, sha256=False):
    """``{kind, root, exists, files: {relpath: {size, mtime_ns[, sha256]}}, dirs: [relpath]}``.

    A root that does not exist is an empty tree with ``exists`` false (nothing was written there yet).
    """
    root = os.path.abspath(os.path.expanduser(root))
    out = {"kind": "local", "root": root, "exists": os.path.isdir(root), "files": {}, "dirs": []}
    if not out["exists"]:
        if os.path.lexists(root):
            raise GateError("%s is not a directory" % root)
        return out

    def fail(exc):
        raise GateError("cannot read %s: %s" % (exc.filename, exc.strerror or exc))

    for here, dirs, files in os.walk(root, onerror=fail):
        rel_here = os.path.relpath(here, root)
        prefix = "" if rel_here == "." else rel_here + "/"
        dirs.sort()
        out["dirs"].extend(prefix + d for d in dirs)
        for name in sorted(files):
            path = os.path.join(here, name)
            st = os.lstat(path)
            entry = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
            if sha256 and not os.path.islink(path):
                entry["sha256"] = _sha256(path)
            out["files"][prefix + name] = entry
    return out


def s3_tree(source):
    """The same for every key below an :class:`S3Source` root prefix (every page of the listing)."""
    root = source.root
    out = {"kind": "s3", "root": source.uri(root), "exists": False, "files": {}, "dirs": []}
    for page in source.pages(root):
        for obj in page.get("Contents") or ():
            rel = obj["Key"][len(root) :]
            out["files"][rel] = {
                "size": obj["Size"],
                "etag": str(obj.get("ETag") or "").strip('"'),
                "last_modified": obj["LastModified"].isoformat(),
            }
    out["exists"] = bool(out["files"])
    return out


def step_names(tree):
    """The ``global_step_*`` names directly below the root (files or directories), sorted."""
    names = set()
    for rel in list(tree.get("files") or {}) + list(tree.get("dirs") or []):
        first = rel.split("/", 1)[0]
        if hydra.is_step_like(first):
            names.add(first)
    return sorted(names)


def tree_diff(before, after):
    """``{same, changed, vanished, appeared}`` between two snapshots (relative paths, sorted).

    A file counts as changed when any recorded attribute differs (size, mtime, ETag, LastModified,
    sha256 when both have it); directories count only by presence.
    """
    old, new = before.get("files") or {}, after.get("files") or {}
    changed = []
    for rel in sorted(set(old) & set(new)):
        a, b = old[rel], new[rel]
        keys = (set(a) & set(b)) if "sha256" in a and "sha256" in b else (set(a) & set(b)) - {"sha256"}
        if any(a[k] != b[k] for k in keys):
            changed.append(rel)
    old_dirs, new_dirs = set(before.get("dirs") or []), set(after.get("dirs") or [])
    vanished = sorted((set(old) - set(new)) | (old_dirs - new_dirs))
    appeared = sorted((set(new) - set(old)) | (new_dirs - old_dirs))
    return {
        "same": not (changed or vanished or appeared),
        "changed": changed,
        "vanished": vanished,
        "appeared": appeared,
    }


def tree_summary(tree):
    """Counts for messages and records: files, bytes, steps."""
    files = tree.get("files") or {}
    return {
        "root": tree.get("root"),
        "files": len(files),
        "bytes": sum(int(f.get("size") or 0) for f in files.values()),
        "steps": step_names(tree),
    }


__all__ = ["local_tree", "s3_tree", "step_names", "tree_diff", "tree_summary"]
