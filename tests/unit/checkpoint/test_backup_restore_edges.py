# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Staging a step from its backup (checkpoint/backup_restore.py) at its edges: the messages with what they name,
the manifest's step, the times a staged file keeps, the byte count, digests on both sides of the manifest's, and
the resume's refusals. Outcomes are read with os.stat / os.walk, never with the store under test."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup_restore as R
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from test_backup import ROW, STEP, staged_setup, tree_of

HERE = {"kind": "hostPath", "node": "a100-01"}
MANIFEST = {"files": []}


@pytest.fixture
def root(tmp_path):
    """A complete step of test_backup's shape (its files written 600 s ago)."""
    ckpt = tmp_path / "ckpt"
    F.write_local(str(ckpt), STEP, F.tree(ROW, 40, "complete"), age=600)
    F.write_local(str(ckpt), STEP, [("actor/big.bin", os.urandom(3 * 1024 * 1024 + 5), 5000)], age=600)
    return ckpt


def fresh(text):
    """An equal string that is another object (``is`` must not decide)."""
    return "".join(list(text))


def test_staging_without_a_manifest_names_the_step(root, tmp_path):
    _R, bdir, _manifest, dest = staged_setup(root, tmp_path)
    with pytest.raises(GateError, match="^staging %s from its backup needs the step's integrity manifest" % STEP):
        R.stage({"path": str(bdir)}, STEP, str(dest), {})


@pytest.mark.parametrize("other", ["global_step_30", "global_step_50"])
def test_a_manifest_of_another_step_is_refused_whichever_side_it_sorts(root, tmp_path, other):
    _R, bdir, manifest, dest = staged_setup(root, tmp_path)
    with pytest.raises(GateError, match="^the integrity manifest was written for %s, not for %s$" % (other, STEP)):
        R.stage({"path": str(bdir)}, STEP, str(dest), dict(manifest, step_dir=other))
    assert not os.path.exists(str(dest))


def test_a_manifest_of_the_same_step_stages_whatever_string_object_names_it(root, tmp_path):
    _R, bdir, manifest, dest = staged_setup(root, tmp_path)
    report = R.stage({"path": str(bdir)}, fresh(STEP), str(dest), dict(manifest, step_dir=fresh(STEP)))
    assert report["status"] == "staged"


def test_an_existing_step_is_named_in_the_refusal(root, tmp_path):
    _R, bdir, manifest, dest = staged_setup(root, tmp_path)
    os.makedirs(str(dest / STEP))
    with pytest.raises(GateError, match="^%s exists already on this host" % (dest / STEP)):
        R.stage({"path": str(bdir)}, STEP, str(dest), manifest)


def test_no_backup_location_says_what_to_set(root, tmp_path):
    _R, _bdir, manifest, dest = staged_setup(root, tmp_path)
    with pytest.raises(GateError, match="need a backup location: set rlark_checkpoint_backup_path"):
        R.stage({}, STEP, str(dest), manifest)


def test_the_report_counts_every_byte_an_empty_file_included(root, tmp_path):
    F.write_local(str(root), STEP, [("empty.marker", b"", 0)], age=600)
    _R, bdir, manifest, dest = staged_setup(root, tmp_path)
    report = R.stage({"path": str(bdir)}, STEP, str(dest), manifest)
    on_disk = tree_of(str(root / STEP))
    assert report["files"] == len(on_disk) and report["bytes"] == sum(entry[0] for entry in on_disk.values())
    dry = R.stage({"path": str(bdir)}, STEP, str(tmp_path / "third"), manifest, check_mode=True)
    assert dry["status"] == "would-stage" and dry["bytes"] == report["bytes"] and dry["copied"] == 0


def backup_times(bdir, when):
    for rel in tree_of(str(bdir / STEP)):
        os.utime(str(bdir / STEP / rel), (when, when))


def test_a_staged_file_keeps_the_originals_time_from_the_backups_progress(root, tmp_path):
    _R, bdir, manifest, dest = staged_setup(root, tmp_path)
    backup_times(bdir, 1_000_000)  # the backup's own times differ from the original's
    R.stage({"path": str(bdir)}, STEP, str(dest), manifest)
    for rel in tree_of(str(root / STEP)):
        assert os.stat(str(dest / STEP / rel)).st_mtime == os.stat(str(root / STEP / rel)).st_mtime, rel


@pytest.mark.parametrize(
    "progress",
    [None, "not json", {"files": None}, {"files": {"x": 1}}, "entries-not-dicts", "times-not-numbers"],
)
def test_without_the_originals_time_a_staged_file_keeps_the_backups(root, tmp_path, progress):
    _R, bdir, manifest, dest = staged_setup(root, tmp_path)
    path = str(bdir / "rlark-backup" / (STEP + ".json"))
    with open(path) as fh:
        made = json.load(fh)
    if progress == "entries-not-dicts":
        progress = dict(made, files={rel: [1, 2] for rel in made["files"]})
    elif progress == "times-not-numbers":
        progress = dict(made, files={rel: dict(e, source_mtime="yesterday") for rel, e in made["files"].items()})
    if progress is None:
        os.unlink(path)
    else:
        with open(path, "w") as fh:
            fh.write(progress if isinstance(progress, str) else json.dumps(progress))
    backup_times(bdir, 1_000_000)
    R.stage({"path": str(bdir)}, STEP, str(dest), manifest)
    for rel in tree_of(str(root / STEP)):
        assert os.stat(str(dest / STEP / rel)).st_mtime == 1_000_000, rel


@pytest.mark.parametrize("when", [0, -0.5, -1.5, -1e9])
def test_staging_does_not_judge_the_backups_age(root, tmp_path, when):
    _R, bdir, manifest, dest = staged_setup(root, tmp_path)
    os.unlink(str(bdir / "rlark-backup" / (STEP + ".json")))
    backup_times(bdir, when)
    report = R.stage({"path": str(bdir)}, STEP, str(dest), manifest)
    assert report["status"] == "staged" and report["findings"] == []


@pytest.mark.parametrize("digest", ["0" * 64, "f" * 64])
def test_a_digest_on_either_side_of_the_manifests_is_a_mismatch(root, tmp_path, digest):
    _R, bdir, manifest, dest = staged_setup(root, tmp_path)
    forged = json.loads(json.dumps(manifest))
    entry = next(e for e in forged["files"] if e["path"] == "actor/big.bin")
    entry["sha256"] = digest
    report = R.stage({"path": str(bdir)}, STEP, str(dest), forged)
    assert report["status"] == "failed" and not os.path.exists(str(dest / STEP))
    assert [(f["id"], f["severity"], f["path"]) for f in report["findings"]] == [
        ("backup-mismatch", "error", "actor/big.bin")
    ]
    assert "says %s" % digest in report["findings"][0]["message"]


def test_a_leftover_of_another_size_is_copied_again(root, tmp_path):
    _R, bdir, manifest, dest = staged_setup(root, tmp_path)
    leftover = dest / (R.STAGING + STEP) / "actor"
    os.makedirs(str(leftover))
    with open(str(root / STEP / "actor" / "big.bin"), "rb") as fh:
        data = fh.read()
    (leftover / "big.bin").write_bytes(data[:-1])
    report = R.stage({"path": str(bdir)}, STEP, str(dest), manifest)
    assert report["status"] == "staged" and report["kept"] == 0
    assert tree_of(str(dest / STEP)) == tree_of(str(root / STEP))


# ------------------------------------------------------------------ the resume's refusals, with what they name


def test_a_checkpoint_that_is_no_hostpath_is_named():
    assert R.resume_problem({"kind": "s3"}, "dual-01", MANIFEST, "demo") == (
        "the checkpoint is not a hostPath (s3); only hostPath checkpoints have a backup."
    )
    assert R.resume_problem({"kind": "emptyDir"}, "dual-01", MANIFEST, "demo").startswith("the checkpoint is not")
    assert R.resume_problem({"kind": fresh("hostPath"), "node": "a100-01"}, "dual-01", MANIFEST, "demo") == ""


def test_the_original_node_is_named_and_only_that_node_refused():
    assert R.resume_problem(HERE, "a100-01", MANIFEST, "demo") == (
        "set rlark_resume_node to the approved node to run on (not a100-01, the original's)."
    )
    assert R.resume_problem(HERE, fresh("a100-01"), MANIFEST, "demo").startswith("set rlark_resume_node")
    assert R.resume_problem(HERE, "a100-00", MANIFEST, "demo") == ""  # sorts before the original's
    assert R.resume_problem(HERE, "a100-02", MANIFEST, "demo") == ""


def test_a_missing_manifest_names_the_source_job():
    assert R.resume_problem(HERE, "dual-01", {}, "demo-7").startswith("no stop record of demo-7 keeps")


def test_a_backup_host_not_said_to_be_in_the_inventory_is_a_label():
    on_server = {"path": "/backup/demo", "host": "backup-01", "s3": {}, "mount": ""}
    assert R.resume_problem(HERE, "dual-01", MANIFEST, "demo", on_server) == ""
