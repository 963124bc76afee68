# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The payload rules: open what a step's layout says to open (zip tails, tracker, JSON, DCP ``.metadata``,
Megatron's ``integrity.json``), only for the step(s) the gate selects.

``CHECKS`` maps each entry kind of the layout template to its check; ``RULES`` lists ``(finding id,
severity, check)`` for docs/findings.md and its test.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import struct

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.dcp_check import (
    METADATA_LIMIT,
    check_dcp,
    check_dcp_answer,
)
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.integrity_schema import (
    ManifestError,
    manifest_entries,
)
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, WARNING

ZIP_TAIL = 22 + 65535  # EOCD record plus the longest possible zip comment
JSON_LIMIT = 64 * 1024 * 1024
EOCD = b"PK\x05\x06"


def expectation(v, opts):
    return L.expect_cached(
        v.step,
        v.runner,
        v.backend,
        v.world_size,
        grid=v.grid,
        features=v.features,
        critic=v.critic,
        full_weights=opts["full_weights"],
    )


def zip_tail_problem(tail, size):
    """Why a torch.save zip whose last bytes are ``tail`` is truncated, or None when it looks whole."""
    start = size - len(tail)
    pos = len(tail)
    while True:
        pos = tail.rfind(EOCD, 0, pos)
        if pos < 0:
            return "no zip end-of-central-directory record (truncated torch.save payload)"
        if len(tail) - pos >= 22:
            _sig, _d, _cd, _nd, total, cd_size, cd_off, comment = struct.unpack("<4sHHHHIIH", tail[pos : pos + 22])
            if pos + 22 + comment == len(tail):
                if cd_off != 0xFFFFFFFF and cd_size != 0xFFFFFFFF and cd_off + cd_size > start + pos:
                    return "zip central directory points past its end record (damaged torch.save payload)"
                if total == 0:
                    return "zip archive with no entries (not a torch.save payload)"
                return None
        if pos == 0:
            return "no zip end-of-central-directory record (truncated torch.save payload)"


def check_zip(v, source, rel, opts):
    tail, size = source.read_tail(v.name, rel, 1024)
    why = zip_tail_problem(tail, size)
    if why and size > len(tail):
        tail, size = source.read_tail(v.name, rel, ZIP_TAIL)
        why = zip_tail_problem(tail, size)
    if why:
        v.problem("truncated-payload", "%s: %s" % (rel, why), path=rel)


def check_tracker(v, source, rel, opts):
    text = source.read_all(v.name, rel, 4096).decode("utf-8", "replace").strip()
    if text != str(v.step):
        v.problem(
            "tracker-mismatch",
            "%s contains %r, not %d: the tracker belongs to another save" % (rel, text[:40], v.step),
            path=rel,
        )


def check_json(v, source, rel, opts):
    json.loads(source.read_all(v.name, rel, JSON_LIMIT).decode("utf-8"))


def check_dcp_metadata(v, source, rel, opts):
    pending = v.prefetched.get(rel)  # read by a child while the step was walked (local steps); the gate reaps it
    answer = pending.result() if pending is not None else None
    if answer is not None:
        check_dcp_answer(v, answer, rel, opts)
    else:
        check_dcp(v, source.read_all(v.name, rel, METADATA_LIMIT + 1), rel, opts)


CHECKS = {L.ZIP: check_zip, L.TRACKER: check_tracker, L.JSON: check_json, L.DCP_METADATA: check_dcp_metadata}


def verify_payloads(v, source, opts):
    """Open what the rules say to open; mark the step verified. Errors go to ``v.findings``."""
    for rel, kind in expectation(v, opts).entries:
        check = CHECKS.get(kind)
        if check is not None:
            guarded(v, check, source, rel, opts)
    for rel in v.integrity_lists:
        guarded(v, check_integrity_list, source, rel, opts)
    v.verified = True


def guarded(v, check, source, rel, opts):
    """Run one check; an unreadable file or bad JSON is a finding, not a crash."""
    try:
        check(v, source, rel, opts)
    except ValueError as exc:
        v.problem("invalid-json", "%s does not parse as JSON (%s)" % (rel, str(exc)[:80]), path=rel)
    except (OSError, L.GateError) as exc:
        v.problem("unreadable", "%s could not be read: %s" % (rel, getattr(exc, "strerror", None) or exc), path=rel)


def integrity_list_entries(source, step_name, rel):
    """[(path relative to the step, size or None, sha256)] of a Megatron ``integrity.json`` at ``rel``.

    Its paths are relative to the directory that holds it. Raises ``ManifestError`` or ``ValueError``.
    """
    base = rel.rpartition("/")[0]
    manifest = json.loads(source.read_all(step_name, rel, JSON_LIMIT).decode("utf-8"))
    return [((base + "/" + path) if base else path, size, digest) for path, size, digest in manifest_entries(manifest)]


def check_integrity_list(v, source, rel, opts):
    """Megatron's ``integrity.json``: every file it lists exists with the listed size (hashes: integrity=verify)."""
    try:
        entries = integrity_list_entries(source, v.name, rel)
    except (ManifestError, ValueError) as exc:
        v.problem(
            "integrity-manifest-unreadable",
            "%s is not a readable integrity list: %s" % (rel, str(exc)[:120]),
            path=rel,
            hint="the save was cut off while writing its integrity list; do not resume from this step",
        )
        return
    present = dict(source.list_files(v.name))
    for path, size, _digest in entries:
        if path not in present:
            what = "is listed in %s but does not exist" % rel
        elif size is not None and present[path] != size:
            what = "has %d bytes, %s says %d" % (present[path], rel, size)
        else:
            continue
        v.problem(
            "integrity-mismatch",
            "%s %s: the checkpoint is not the one its integrity list describes" % (path, what),
            path=path,
            hint="the save did not finish or the files changed after it; do not resume from this step",
        )


RULES = (
    ("truncated-payload", ERROR, check_zip),
    ("tracker-mismatch", ERROR, check_tracker),
    ("invalid-json", ERROR, check_json),
    ("unreadable", ERROR, guarded),
    ("truncated-shard", ERROR, check_dcp_metadata),
    ("invalid-dcp-metadata", ERROR, check_dcp_metadata),
    ("dcp-metadata-unverified", WARNING, check_dcp_metadata),
    ("world-size-mismatch", ERROR, check_dcp_metadata),
    ("stale-shards", WARNING, check_dcp_metadata),
    ("integrity-mismatch", ERROR, check_integrity_list),
    ("integrity-manifest-unreadable", ERROR, check_integrity_list),
)
