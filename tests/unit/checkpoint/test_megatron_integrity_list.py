# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Megatron checkpoint's own ``integrity.json``: sizes always, sha256 with ``integrity: verify``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import integrity as I
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource

ROW = next(r for r in F.ROWS if r.id == "megatron-torch-dist")
STEP = 40
STEP_DIR = "global_step_%d" % STEP
ITER = "actor/iter_%07d" % STEP
LIST = ITER + "/integrity.json"


def integrity_list(files, change=None):
    """Megatron-style integrity.json of the iter directory: paths relative to it, size and sha256 of each file."""
    entries = []
    for rel, data, _age in files:
        if not rel.startswith(ITER + "/"):
            continue
        entry = {"path": rel[len(ITER) + 1 :], "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        if change and change[0] == entry["path"]:
            entry.update(change[1])
        entries.append(entry)
    return json.dumps({"algorithm": "sha256", "files": entries}).encode()


def write(root, change=None, extra=None, raw=None):
    files = F.tree(ROW, STEP, "complete")
    body = raw if raw is not None else integrity_list(files + (extra or []), change)
    F.write_local(str(root), STEP_DIR, files + [(LIST, body, 3600.0)])
    return files


def gate(root):
    return run_gate(LocalSource(str(root)), dict(ROW.gate_params(), quiet_seconds=120))


def integrity_findings(result):
    return [(p["id"], p["severity"], p["path"]) for p in result["findings"] if p["id"].startswith("integrity")]


def test_a_matching_list_passes_and_is_reported(tmp_path):
    write(tmp_path)
    result = gate(tmp_path)
    assert result["complete"], result["findings"]
    assert result["integrity_lists"] == [LIST]
    assert integrity_findings(result) == []


def test_a_resized_file_fails_naming_it(tmp_path):
    write(tmp_path, change=("common.pt", {"size": 10**6}))
    result = gate(tmp_path)
    assert not result["complete"]
    assert integrity_findings(result) == [("integrity-mismatch", "error", ITER + "/common.pt")]
    assert any(LIST + " says 1000000" in p["message"] for p in result["findings"])


def test_a_listed_file_that_is_gone_fails_naming_it(tmp_path):
    write(tmp_path, extra=[(ITER + "/__9_0.distcp", b"x" * 64, 0.0)])
    result = gate(tmp_path)
    assert not result["complete"]
    assert integrity_findings(result) == [("integrity-mismatch", "error", ITER + "/__9_0.distcp")]


def test_a_cut_off_list_is_unreadable(tmp_path):
    body = integrity_list(F.tree(ROW, STEP, "complete"))
    write(tmp_path, raw=body[: len(body) // 2])
    result = gate(tmp_path)
    assert not result["complete"]
    assert integrity_findings(result) == [("integrity-manifest-unreadable", "error", LIST)]


@pytest.mark.parametrize("mode", ["off", "write"])
def test_sha256_is_not_checked_unless_verification_is_asked(tmp_path, mode):
    write(tmp_path, change=("common.pt", {"sha256": "0" * 64}))
    result = gate(tmp_path)
    I.apply(LocalSource(str(tmp_path)), result, mode, workers=2)
    assert result["complete"] and integrity_findings(result) == []


def test_verify_checks_the_list_sha256_naming_the_file(tmp_path):
    write(tmp_path, change=("common.pt", {"sha256": "0" * 64}))
    src = LocalSource(str(tmp_path))
    I.apply(src, gate(tmp_path), "write", workers=2)  # our manifest: taken of the files as they are
    result = gate(tmp_path)
    I.apply(src, result, "verify", workers=2)
    assert not result["complete"]
    assert integrity_findings(result) == [("integrity-mismatch", "error", ITER + "/common.pt")]
    assert result["integrity"]["integrity_lists"] == [LIST]


def test_a_flipped_byte_fails_verify_against_the_list(tmp_path):
    write(tmp_path)
    src = LocalSource(str(tmp_path))
    result = gate(tmp_path)
    manifest = I.build_manifest(src, STEP_DIR, workers=2)
    path = os.path.join(str(tmp_path), STEP_DIR, ITER, "common.pt")
    before = os.stat(path)
    with open(path, "r+b") as fh:
        first = fh.read(1)
        fh.seek(0)
        fh.write(bytes([first[0] ^ 0xFF]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # old, as a quiet rewrite would leave it
    result = gate(tmp_path)
    assert result["complete"]  # same size: the gate alone cannot see it
    I.apply(src, result, "verify", manifest=manifest, workers=2)
    paths = [p["path"] for p in result["findings"] if p["id"] == "integrity-mismatch"]
    assert paths == [ITER + "/common.pt", ITER + "/common.pt"]  # our manifest and the step's own list
