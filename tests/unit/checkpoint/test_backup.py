# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The backup of a hostPath checkpoint (checkpoint/backup.py): the verdict, making it, resuming a cut-off copy.

A directory backup on this host; the S3 store is exercised on the sandbox (tests/integration/test_backup_s3.py).
Outcomes are read back with os.walk / hashlib, never with the store under test.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup as B
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import integrity as I
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource

ROW = F.ROWS[0]
STEP = "global_step_40"


@pytest.fixture
def root(tmp_path):
    ckpt = tmp_path / "ckpt"
    F.write_local(str(ckpt), STEP, F.tree(ROW, 40, "complete"), age=600)
    F.write_local(str(ckpt), STEP, [("actor/big.bin", os.urandom(3 * 1024 * 1024 + 5), 5000)], age=600)
    return ckpt


def tree_of(top):
    """{rel: (size, sha256)} of every file under ``top`` (os.walk + hashlib)."""
    out = {}
    for here, _dirs, files in os.walk(top):
        for name in files:
            full = os.path.join(here, name)
            with open(full, "rb") as fh:
                out[os.path.relpath(full, top)] = (os.path.getsize(full), hashlib.sha256(fh.read()).hexdigest())
    return out


def gate(root, backup, integrity="off", check_mode=False, progress=None):
    src = LocalSource(str(root))
    result = run_gate(src, dict(ROW.gate_params(), quiet_seconds=120))
    assert result["complete"], result["findings"]
    I.apply(src, result, integrity, store="result")
    changed = B.apply(src, result, backup, check_mode=check_mode, progress=progress)
    return result, changed


def copy_tree(src, dest):
    for rel, _meta in tree_of(src).items():
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        with open(os.path.join(src, rel), "rb") as a, open(os.path.join(dest, rel), "wb") as b:
            b.write(a.read())


def ids(result):
    return [(f["id"], f["severity"], f["path"]) for f in result["backup"]["findings"]]


def test_made_backup_equals_the_original_and_holds(root, tmp_path):
    lines = []
    bdir = tmp_path / "backup"
    result, changed = gate(root, {"path": str(bdir), "make": True, "required": True, "batch_files": 2}, "write",
                           progress=lines.append)  # fmt: skip
    assert changed and result["complete"]
    assert result["backup"]["verdict"] == "verified" and result["backup"]["checked"].endswith("sha256")
    assert tree_of(str(bdir / STEP)) == tree_of(str(root / STEP))
    assert len(lines) == (result["backup"]["made"]["copied"] + 1) // 2 and "files" in lines[-1]
    # a second run copies nothing and still holds
    result, changed = gate(root, {"path": str(bdir), "make": True, "required": True})
    assert not changed and result["backup"]["made"]["copied"] == 0 and result["complete"]


@pytest.mark.parametrize(
    "damage, finding",
    [("remove", "backup-missing"), ("shorten", "backup-incomplete"), ("flip", "backup-mismatch"),
     ("age", "backup-stale")],
)  # fmt: skip
def test_a_damaged_backup_is_refused_when_required(root, tmp_path, damage, finding):
    bdir = tmp_path / "backup"
    copy_tree(str(root), str(bdir))
    victim = "actor/big.bin"
    path = str(bdir / STEP / victim)
    if damage == "remove":
        os.unlink(path)
    elif damage == "shorten":
        os.truncate(path, os.path.getsize(path) - 1)
    elif damage == "flip":
        with open(path, "r+b") as fh:
            fh.seek(1000)
            byte = fh.read(1)
            fh.seek(1000)
            fh.write(bytes([byte[0] ^ 1]))
    else:
        old = time.time() - 7200
        os.utime(path, (old, old))
    result, _changed = gate(root, {"path": str(bdir), "required": True}, "write")
    assert ids(result) == [(finding, "error", victim)]
    assert not result["complete"] and result["findings"][0]["id"] == finding
    # not required: reported, the gate's verdict stays
    result, _changed = gate(root, {"path": str(bdir)}, "write")
    assert result["complete"] and result["backup"]["verdict"] == "failed" and ids(result)[0][0] == finding


def test_sizes_and_times_only_without_a_manifest(root, tmp_path):
    bdir = tmp_path / "backup"
    copy_tree(str(root), str(bdir))
    result, _changed = gate(root, {"path": str(bdir), "required": True})
    assert result["backup"]["verdict"] == "verified" and result["backup"]["checked"] == "files, sizes, times"


def test_no_copy_of_the_step_names_the_step(root, tmp_path):
    result, _changed = gate(root, {"path": str(tmp_path / "empty"), "required": True})
    assert ids(result) == [("backup-missing", "error", STEP)]
    assert "rlark_checkpoint_backup" in result["backup"]["findings"][0]["message"]


def test_an_interrupted_copy_continues_without_copying_finished_files_again(root, tmp_path):
    bdir = tmp_path / "backup"
    names = sorted(tree_of(str(root / STEP)))
    blocked = names[len(names) // 2]
    os.makedirs(str(bdir / STEP / blocked))  # something that is not ours where a file must go: the copy stops
    result, _changed = gate(root, {"path": str(bdir), "make": True, "batch_files": 1, "required": True})
    assert "run again to continue" in result["backup"]["made"]["error"]
    assert not result["complete"] and ids(result)[0] == ("backup-missing", "error", blocked)
    assert os.path.isdir(str(bdir / STEP / blocked)), "never removed"
    with open(str(bdir / "rlark-backup" / (STEP + ".json"))) as fh:
        recorded = sorted(json.load(fh)["files"])
    assert set(names[: len(names) // 2]) <= set(recorded) and blocked not in recorded
    before = {n: os.stat(str(bdir / STEP / n)) for n in recorded}
    os.rmdir(str(bdir / STEP / blocked))
    result, _changed = gate(root, {"path": str(bdir), "make": True, "required": True}, "write")
    assert result["complete"] and result["backup"]["made"]["skipped"] == len(before)
    for n, st in before.items():
        again = os.stat(str(bdir / STEP / n))
        assert (again.st_ino, again.st_mtime_ns) == (st.st_ino, st.st_mtime_ns), n
    assert tree_of(str(bdir / STEP)) == tree_of(str(root / STEP))


def test_without_a_kernel_copy_the_backup_still_equals_the_original(root, tmp_path, monkeypatch):
    import errno

    def refuse(*_args):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "copy_file_range", refuse)  # another filesystem (NFS mount, another disk)
    bdir = tmp_path / "backup"
    result, changed = gate(root, {"path": str(bdir), "make": True, "required": True}, "write")
    assert changed and result["backup"]["verdict"] == "verified", result["backup"]
    assert tree_of(str(bdir / STEP)) == tree_of(str(root / STEP))


def test_a_file_that_grows_while_it_is_copied_is_not_recorded(root, tmp_path, monkeypatch):
    real = os.preadv
    grown = []

    def preadv_then_append(fd, buffers, offset):
        n = real(fd, buffers, offset)
        if not grown and offset == 1024 * 1024:  # actor/big.bin, in its second window
            grown.append(os.readlink("/proc/self/fd/%d" % fd))
            with open(grown[0], "ab") as fh:
                fh.write(b"late bytes")
        return n

    monkeypatch.setattr(os, "preadv", preadv_then_append)
    bdir = tmp_path / "backup"
    result, _changed = gate(root, {"path": str(bdir), "make": True, "required": True})
    assert grown and "changed while it was copied" in result["backup"]["made"]["error"]
    with open(str(bdir / "rlark-backup" / (STEP + ".json"))) as fh:
        assert "actor/big.bin" not in json.load(fh)["files"]
    assert not os.path.exists(str(bdir / STEP / "actor" / "big.bin")), "never published under its name"


def test_make_touches_nothing_outside_the_step(root, tmp_path):
    bdir = tmp_path / "backup"
    os.makedirs(str(bdir / "global_step_20"))
    (bdir / "global_step_20" / "keep.pt").write_bytes(b"older step")
    (bdir / "notes.txt").write_bytes(b"not ours")
    gate(root, {"path": str(bdir), "make": True})
    assert (bdir / "global_step_20" / "keep.pt").read_bytes() == b"older step"
    assert (bdir / "notes.txt").read_bytes() == b"not ours"


def test_check_mode_copies_nothing(root, tmp_path):
    bdir = tmp_path / "backup"
    result, changed = gate(root, {"path": str(bdir), "make": True, "required": True}, check_mode=True)
    assert not changed and result["backup"]["verdict"] == "would-make" and not os.path.exists(str(bdir))


def test_bad_options_say_what_to_set():
    with pytest.raises(GateError, match="rlark_checkpoint_backup_path"):
        B.normalize({"required": True})
    with pytest.raises(GateError, match="not both"):
        B.normalize({"path": "/a", "s3": {"bucket": "b"}})
    assert B.normalize({"path": "", "s3": {}}) is None


# ------------------------------------------------------------------ staging from the backup (resume)


def staged_setup(root, tmp_path):
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup_restore as R

    bdir = tmp_path / "backup"
    result, _changed = gate(root, {"path": str(bdir), "make": True, "required": True}, "write")
    return R, bdir, result["integrity"]["manifest"], tmp_path / "other-node" / "ckpt"


def test_staging_from_the_backup_equals_the_original(root, tmp_path):
    R, bdir, manifest, dest = staged_setup(root, tmp_path)
    report = R.stage({"path": str(bdir)}, STEP, str(dest), manifest)
    assert report["status"] == "staged" and not report["findings"] and report["copied"] == report["files"]
    assert tree_of(str(dest / STEP)) == tree_of(str(root / STEP))
    assert sorted(os.listdir(str(dest))) == [STEP]
    with pytest.raises(GateError, match="exists already"):
        R.stage({"path": str(bdir)}, STEP, str(dest), manifest)


def test_staging_refuses_a_backup_that_differs_from_the_manifest(root, tmp_path):
    R, bdir, manifest, dest = staged_setup(root, tmp_path)
    path = str(bdir / STEP / "actor" / "big.bin")
    with open(path, "r+b") as fh:
        fh.seek(7)
        byte = fh.read(1)
        fh.seek(7)
        fh.write(bytes([byte[0] ^ 1]))
    report = R.stage({"path": str(bdir)}, STEP, str(dest), manifest)
    assert report["status"] == "failed" and not os.path.exists(str(dest / STEP))
    assert [(f["id"], f["severity"], f["path"]) for f in report["findings"]] == [
        ("backup-mismatch", "error", "actor/big.bin")
    ]
    os.unlink(path)
    report = R.stage({"path": str(bdir)}, STEP, str(dest), manifest)
    assert [(f["id"], f["path"]) for f in report["findings"]] == [("backup-missing", "actor/big.bin")]


def test_an_interrupted_staging_keeps_what_matches(root, tmp_path):
    R, bdir, manifest, dest = staged_setup(root, tmp_path)
    leftover = dest / (R.STAGING + STEP)
    for rel, (_size, _digest) in list(tree_of(str(root / STEP)).items())[:2]:
        os.makedirs(os.path.dirname(str(leftover / rel)), exist_ok=True)
        with open(str(root / STEP / rel), "rb") as a, open(str(leftover / rel), "wb") as b:
            b.write(a.read())
    report = R.stage({"path": str(bdir)}, STEP, str(dest), manifest)
    assert report["status"] == "staged" and report["kept"] == 2 and report["copied"] == report["files"] - 2
    assert tree_of(str(dest / STEP)) == tree_of(str(root / STEP))


def test_staging_needs_the_manifest(root, tmp_path):
    R, bdir, _manifest, dest = staged_setup(root, tmp_path)
    with pytest.raises(GateError, match="rlark_checkpoint_integrity_store=record"):
        R.stage({"path": str(bdir)}, STEP, str(dest), None)


def test_a_resume_from_the_backup_says_what_it_lacks():
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_restore import resume_problem

    here = {"kind": "hostPath", "node": "a100-01"}
    assert "only hostPath" in resume_problem({"kind": "s3"}, "dual-01", {"files": []}, "demo")
    assert "rlark_resume_node" in resume_problem(here, "", {"files": []}, "demo")
    assert "rlark_resume_node" in resume_problem(here, "a100-01", {"files": []}, "demo")
    assert "rlark_checkpoint_integrity_store=record" in resume_problem(here, "dual-01", {}, "demo")
    assert resume_problem(here, "dual-01", {"files": []}, "demo") == ""


def test_a_resume_from_a_backup_host_needs_the_node_to_mount_it():
    """The collection never copies between hosts: a directory on an inventory backup host is refused unless mounted."""
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_restore import resume_problem

    here, manifest = {"kind": "hostPath", "node": "a100-01"}, {"files": []}
    on_server = {"path": "/backup/demo", "host": "backup-01", "s3": {}, "mount": ""}
    said = resume_problem(here, "dual-01", manifest, "demo", on_server, True)
    for words in ("rlark_checkpoint_backup_host", "rlark_checkpoint_backup_mount", "backup-01", "/backup/demo",
                  "mount that directory on node dual-01", "never copies between hosts"):  # fmt: skip
        assert words in said, said
    assert resume_problem(here, "dual-01", manifest, "demo", dict(on_server, mount="/mnt/backup-01/demo"), True) == ""
    assert resume_problem(here, "dual-01", manifest, "demo", on_server, False) == ""  # a label: path is on the node
    assert resume_problem(here, "dual-01", manifest, "demo", dict(on_server, path="", s3={"bucket": "b"}), True) == ""


def listed(bdir, **kw):
    """The backup as the backup host reads it (rlark_ckpt_backup_info), through a JSON round trip."""
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_store import read_listing

    return json.loads(json.dumps(read_listing(str(bdir), **kw)))


def test_a_backup_read_on_the_backup_host_is_judged_the_same(root, tmp_path):
    bdir = tmp_path / "backup"
    copy_tree(str(root / STEP), str(bdir / STEP))
    os.makedirs(str(bdir / "global_step_20"))
    spec = {"path": "/srv/backup", "host": "backup-01", "required": True}
    result, _changed = gate(root, dict(spec, listing=listed(bdir, sha256=True)), "write")
    assert result["complete"] and result["backup"]["verdict"] == "verified", result["backup"]
    assert result["backup"]["location"] == "backup-01:%s/%s" % (bdir, STEP)
    with open(str(bdir / STEP / "actor" / "big.bin"), "r+b") as fh:
        fh.seek(77)
        byte = fh.read(1)
        fh.seek(77)
        fh.write(bytes([byte[0] ^ 1]))
    result, _changed = gate(root, dict(spec, listing=listed(bdir, sha256=True)), "write")
    assert not result["complete"] and ids(result) == [("backup-mismatch", "error", "actor/big.bin")]
    os.unlink(str(bdir / STEP / "actor" / "big.bin"))
    result, _changed = gate(root, dict(spec, listing=listed(bdir, step="40")), "off")
    assert ids(result) == [("backup-missing", "error", "actor/big.bin")]


def test_a_listing_without_the_step_hashed_says_what_to_set(root, tmp_path):
    bdir = tmp_path / "backup"
    copy_tree(str(root / STEP), str(bdir / STEP))
    os.makedirs(str(bdir / "global_step_50"))  # newer than the gated step: 'latest' hashes that one
    with pytest.raises(GateError, match="rlark_checkpoint_step=40"):
        gate(root, {"path": str(bdir), "host": "backup-01", "listing": listed(bdir, sha256=True)}, "write")


def test_making_a_backup_on_another_host_is_refused(root, tmp_path):
    bdir = tmp_path / "backup"
    spec = {"path": str(bdir), "host": "backup-01", "make": True, "listing": listed(bdir)}
    with pytest.raises(GateError, match=r"rlark_checkpoint_backup_make.*rlark_checkpoint_backup_host"):
        gate(root, spec)
    assert not os.path.exists(str(bdir))
