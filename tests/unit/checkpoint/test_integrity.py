# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Integrity manifest: written at guarded stop, verified before resume; a flipped byte is refused."""

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
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource

ROW = F.ROWS[0]
STEP = 40


@pytest.fixture
def root(tmp_path):
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(ROW, STEP, "complete"))
    # a payload larger than one hashing chunk, so streaming over several reads is exercised
    F.write_local(str(tmp_path), "global_step_%d" % STEP, [("actor/big.bin", os.urandom(I.CHUNK * 2 + 17), 5000)])
    return tmp_path


def gate(root, mode, **kw):
    src = LocalSource(str(root))
    result = run_gate(src, dict(ROW.gate_params(), quiet_seconds=120))
    written = I.apply(src, result, mode, workers=2, **kw)
    return result, written


def independent_sha(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def test_write_then_verify(root):
    result, written = gate(root, "write")
    path = str(root / "rlark-integrity" / ("global_step_%d.json" % STEP))
    assert written and result["integrity"]["status"] == "written" and result["integrity"]["path"] == path
    with open(path) as fh:
        manifest = json.load(fh)
    step_dir = root / ("global_step_%d" % STEP)
    on_disk = sorted(str(p.relative_to(step_dir)) for p in step_dir.rglob("*") if p.is_file())
    assert [f["path"] for f in manifest["files"]] == on_disk
    for entry in manifest["files"]:
        assert entry["sha256"] == independent_sha(step_dir / entry["path"])
        assert entry["size"] == os.path.getsize(step_dir / entry["path"])
    result, written = gate(root, "verify")
    assert not written and result["complete"] and result["integrity"]["status"] == "verified"
    assert result["integrity"]["files"] == len(on_disk)


def test_a_flipped_byte_fails_the_check(root):
    gate(root, "write")
    target = root / ("global_step_%d" % STEP) / "actor" / "big.bin"
    data = bytearray(target.read_bytes())
    data[I.CHUNK + 3] ^= 0x01
    stat = os.stat(target)
    target.write_bytes(bytes(data))
    os.utime(target, (stat.st_atime, stat.st_mtime))  # same size, same mtime: only the content tells
    result, _w = gate(root, "verify")
    assert not result["complete"] and result["integrity"]["status"] == "failed"
    bad = [p for p in result["findings"] if p["id"] == "integrity-mismatch"]
    assert len(bad) == 1 and bad[0]["path"] == "actor/big.bin" and bad[0]["severity"] == "error"


def test_a_removed_or_resized_file_is_named(root):
    gate(root, "write")
    step_dir = root / ("global_step_%d" % STEP)
    (step_dir / "actor" / "big.bin").unlink()
    shard = step_dir / "actor" / "dcp_checkpoint" / "__0_0.distcp"
    stat = os.stat(shard)
    with open(shard, "ab") as fh:
        fh.write(b"x")
    os.utime(shard, (stat.st_atime, stat.st_mtime))  # still quiet: the gate passes, the manifest does not
    result, _w = gate(root, "verify")
    bad = {p["path"]: p["message"] for p in result["findings"] if p["id"] == "integrity-mismatch"}
    assert set(bad) == {"actor/big.bin", "actor/dcp_checkpoint/__0_0.distcp"}
    assert "no longer exists" in bad["actor/big.bin"] and "49 bytes" in bad["actor/dcp_checkpoint/__0_0.distcp"]


def test_megatron_style_mapping_is_read(root):
    step_dir = root / ("global_step_%d" % STEP)
    files = {"actor/big.bin": {"size": os.path.getsize(step_dir / "actor/big.bin"), "sha256": "0" * 64}}
    result, _w = gate(root, "verify", manifest={"files": files})
    bad = [p for p in result["findings"] if p["id"] == "integrity-mismatch"]
    assert not result["complete"] and len(bad) == 1 and "has sha256" in bad[0]["message"]


@pytest.mark.parametrize(
    "manifest,fragment",
    [({"files": []}, "lists no files"), ({"algorithm": "md5", "files": [{}]}, "only sha256"), ([], "JSON object")],
)
def test_a_bad_manifest_is_a_refusal(root, manifest, fragment):
    result, _w = gate(root, "verify", manifest=manifest)
    bad = [p for p in result["findings"] if p["id"] == "integrity-manifest-unreadable"]
    assert not result["complete"] and bad and fragment in bad[0]["message"]


def test_missing_manifest_file_is_a_refusal(root):
    result, _w = gate(root, "verify")
    bad = [p for p in result["findings"] if p["id"] == "integrity-manifest-unreadable"]
    assert not result["complete"] and "cannot read the integrity manifest" in bad[0]["message"]


def test_nothing_is_hashed_or_written_for_an_incomplete_step(tmp_path):
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(ROW, STEP, "marker-missing"))
    result, written = gate(tmp_path, "write")
    assert not written and result["integrity"]["status"] == "skipped"
    assert not (tmp_path / "rlark-integrity").exists()


def test_check_mode_writes_nothing(root):
    result, written = gate(root, "write", check_mode=True)
    assert not written and result["integrity"]["status"] == "would-write"
    assert result["integrity"]["manifest"]["file_count"] > 0 and not (root / "rlark-integrity").exists()


def test_the_manifest_directory_is_not_taken_for_a_step(root):
    gate(root, "write")
    r = run_gate(LocalSource(str(root)), dict(ROW.gate_params(), quiet_seconds=120, full_report=True))
    assert [s["name"] for s in r["steps"]] == ["global_step_%d" % STEP]


def test_store_result_writes_no_file_and_the_record_keeps_the_manifest(root):
    before = sorted(str(p) for p in root.rglob("*"))
    result, written = gate(root, "write", store="result")
    assert not written and result["integrity"]["status"] == "returned" and result["integrity"]["path"] is None
    assert sorted(str(p) for p in root.rglob("*")) == before  # nothing new on the node
    kept = I.summary(result["integrity"])
    assert kept["manifest"] == result["integrity"]["manifest"] and kept["step_dir"] == "global_step_%d" % STEP
    # the recorded manifest is what a resume verifies against
    again, _w = gate(root, "verify", manifest=kept["manifest"])
    assert again["complete"] and again["integrity"]["status"] == "verified"


def test_store_result_with_a_path_is_refused_before_hashing(root, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("elsewhere") / "m.json")
    with pytest.raises(GateError, match="integrity_store=result"):
        gate(root, "write", store="result", path=path)
    assert not os.path.exists(path)


def test_a_manifest_of_another_step_is_not_taken_for_this_one(root):
    result, _w = gate(root, "write", store="result")
    manifest = dict(result["integrity"]["manifest"], step_dir="global_step_20")
    again, _w = gate(root, "verify", manifest=manifest)
    bad = [(p["id"], p["severity"]) for p in again["findings"] if p["id"].startswith("integrity-")]
    assert not again["complete"] and bad == [("integrity-manifest-unreadable", "error")]
    assert "written for global_step_20, not for global_step_%d" % STEP in again["findings"][0]["message"]
