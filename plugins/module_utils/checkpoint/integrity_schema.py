# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The entries of an integrity manifest: ours (written at guarded stop) and Megatron's ``integrity.json``.

Kept apart from the hashing (``integrity.py``) so the gate reads a listed size without importing hashlib.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

ALGORITHM = "sha256"


class ManifestError(Exception):
    """The manifest to verify is missing, unreadable or not an integrity manifest."""


def manifest_entries(manifest):
    """[(path, size, sha256)] from our schema or a Megatron-style ``integrity.json`` (list or mapping)."""
    if not isinstance(manifest, dict):
        raise ManifestError("an integrity manifest is a JSON object with a 'files' list")
    algorithm = str(manifest.get("algorithm") or ALGORITHM).lower()
    if algorithm != ALGORITHM:
        raise ManifestError("the manifest uses %s; only sha256 is supported" % algorithm)
    files = manifest.get("files")
    if isinstance(files, dict):
        files = [dict(v, path=k) if isinstance(v, dict) else {"path": k, "sha256": v} for k, v in files.items()]
    if not isinstance(files, list) or not files:
        raise ManifestError("the manifest lists no files")
    out = []
    for entry in files:
        entry = entry if isinstance(entry, dict) else {}
        path = entry.get("path") or entry.get("relative_path") or entry.get("name")
        digest = entry.get("sha256")
        if not isinstance(path, str) or not isinstance(digest, str) or path.startswith("/") or ".." in path.split("/"):
            raise ManifestError("a manifest entry has no relative path and sha256: %r" % (entry,))
        size = entry.get("size")
        out.append((path, size if isinstance(size, int) else None, digest.lower()))
    return out
