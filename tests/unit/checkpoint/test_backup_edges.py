# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The backup verdict's edges (checkpoint/backup.py, issue 26): each finding's id, path, severity and message,
the stale tolerance pinned from both sides, the options' refusals, and what apply and summary return.

Plain dicts for ``judge``; a tiny step on disk for ``apply`` (outcomes read back with os / json, never the store).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup as B
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource

STEP = "global_step_9"
WHERE = "/b/" + STEP
A, F = "a" * 64, "f" * 64


def judged(got, size=10, mtime=1000.0, expected=None, hash_of=None, known=None):
    return B.judge({"x.pt": (size, mtime)}, {"x.pt": got}, STEP, WHERE, expected, hash_of, known)


def brief(found):
    return [(f["id"], f["severity"], f["path"], f["message"]) for f in found]


def test_each_finding_names_the_file_and_what_differs():
    larger = "%s/x.pt has 11 bytes in the backup %s, 10 in the original" % (STEP, WHERE)
    assert brief(judged((11, 1000.0))) == [("backup-incomplete", "error", "x.pt", larger)]  # larger is not it either
    assert brief(judged((9, 1000.0)))[0][:3] == ("backup-incomplete", "error", "x.pt")
    assert brief(judged((10, 2800.0), mtime=10000.0)) == [
        ("backup-stale", "error", "x.pt", "%s/x.pt in the backup %s was written 7200 s before the original's last "
         "write: it is older than the save" % (STEP, WHERE))
    ]  # fmt: skip
    assert brief(B.judge({"x.pt": (10, 1.0), "y.pt": (1, 1.0)}, {"x.pt": (10, 1.0)}, STEP, WHERE)) == [
        ("backup-missing", "error", "y.pt", "%s/y.pt is not in the backup %s" % (STEP, WHERE))
    ]
    missing = B.judge({"x.pt": (10, 1.0)}, {}, STEP, WHERE)
    assert brief(missing)[0][:3] == ("backup-missing", "error", STEP)
    assert "rlark_checkpoint_backup_path / rlark_checkpoint_backup_s3" in missing[0]["message"]
    assert "rlark_checkpoint_backup_make=true" in missing[0]["hint"]


@pytest.mark.parametrize(
    "copy_mtime, original_mtime, stale",
    [
        (999.0, 1000.0, False),  # exactly the tolerance older: S3's whole seconds
        (998.5, 1000.0, True),  # 1.5 s older: written before the save finished
        (999.5, 1000.0, False),
        (999.5, 1000.4, False),  # fractions count: not rounded down
        (1000.0, 1000.0, False),  # equal: a copy that keeps mtimes (rsync -a)
        (1500.0, 1000.0, False),  # newer: copied after the save
    ],
)
def test_the_stale_tolerance_is_one_second_from_both_sides(copy_mtime, original_mtime, stale):
    ids = [f["id"] for f in judged((10, copy_mtime), mtime=original_mtime)]
    assert ids == (["backup-stale"] if stale else [])


def test_sha256_compares_both_ways_and_trusts_what_this_run_hashed():
    def never(rel):
        raise AssertionError("hashed again: %s" % rel)

    def hashes(value):
        return lambda rel: value

    assert judged((10, 1000.0), expected={"x.pt": A}, hash_of=hashes(A)) == []
    for have, want in ((A, F), (F, A)):  # smaller and larger digests both differ
        assert brief(judged((10, 1000.0), expected={"x.pt": want}, hash_of=hashes(have))) == [
            ("backup-mismatch", "error", "x.pt", "%s/x.pt in the backup %s has sha256 %s, the integrity manifest of "
             "the original says %s" % (STEP, WHERE, have, want))
        ]  # fmt: skip
    assert judged((10, 1000.0), expected={"x.pt": A}, hash_of=never, known={"x.pt": A}) == []
    assert judged((10, 1000.0), expected={"x.pt": A}, hash_of=hashes(A), known=None) == []
    assert judged((10, 1000.0), expected={}, hash_of=never) == []  # not in the manifest: sizes and times only


def test_normalize_keeps_only_the_backup_options_with_their_defaults():
    spec = {"path": "/b", "host": "", "listing": None, "extra": "x", "s3": {}}
    assert B.normalize(spec) == {"path": "/b", "required": False, "make": False, "batch_files": 16}
    s3 = {"bucket": "bk", "prefix": "p"}
    assert B.normalize({"s3": s3, "batch_files": 1}) == dict(s3=s3, required=False, make=False, batch_files=1)
    with pytest.raises(GateError, match="rlark_checkpoint_backup_s3 needs a bucket"):
        B.normalize({"s3": {"prefix": "p"}})


def test_making_a_backup_read_on_another_host_names_that_host():
    with pytest.raises(GateError) as err:
        B.normalize({"path": "/b", "host": "backup-01", "listing": {"steps": {}}, "make": True})
    assert "rlark_checkpoint_backup_host backup-01 is an inventory host" in str(err.value)


@pytest.mark.parametrize("batch, shown", [(0, "0"), (-1, "-1"), ("4", "'4'")])
def test_a_bad_batch_is_refused_with_its_value(batch, shown):
    with pytest.raises(GateError) as err:
        B.normalize({"path": "/b", "batch_files": batch})
    assert str(err.value) == "backup batch_files must be at least 1, got %s" % shown


def verify_report(path="/nonexistent/integrity.json", status="verified"):
    """The gate's integrity report as a later task reads it back (JSON: no string is the module's constant)."""
    return json.loads(json.dumps({"integrity": {"mode": "verify", "status": status, "path": path}}))


def test_manifest_hashes_of_a_verified_manifest_given_or_read():
    manifest = {"algorithm": "sha256", "files": [{"path": "x.pt", "size": 10, "sha256": A}]}
    assert B.manifest_hashes(verify_report(), manifest) == {"x.pt": A}  # given: the path is not read
    literal = {"integrity": {"mode": "verify", "status": "verified", "path": "/nonexistent"}}  # as integrity.apply
    assert B.manifest_hashes(literal, manifest) == {"x.pt": A}  # sets them in-process: the strings compare equal
    assert B.manifest_hashes(verify_report(status="failed"), manifest) is None
    assert B.manifest_hashes(verify_report(status="zzz"), manifest) is None
    assert B.manifest_hashes({"integrity": {"mode": "write", "manifest": manifest}}) == {"x.pt": A}
    assert B.manifest_hashes({}) is None
    both = verify_report()
    both["integrity"]["manifest"] = {"files": [{"path": "z.pt", "sha256": F}]}  # the gate's own: not re-read
    assert B.manifest_hashes(both, manifest) == {"z.pt": F}


def test_manifest_hashes_reads_the_verified_manifest_file(tmp_path):
    path = tmp_path / "integrity.json"
    path.write_text(json.dumps({"files": [{"path": "y.pt", "sha256": F}]}))
    assert B.manifest_hashes(verify_report(str(path))) == {"y.pt": F}
    assert B.manifest_hashes(verify_report(str(tmp_path / "absent.json"))) is None


@pytest.fixture
def step(tmp_path):
    (tmp_path / "ckpt" / STEP).mkdir(parents=True)
    (tmp_path / "ckpt" / STEP / "only.pt").write_bytes(b"x" * 10)
    return LocalSource(str(tmp_path / "ckpt")), tmp_path / "backup"


def chosen(complete=True):
    return {"checkpoint": "/ckpt/%s/" % STEP, "complete": complete, "findings": [{"id": "gate-earlier"}]}


def test_apply_without_a_backup_location_does_nothing(step):
    src, _bdir = step
    result = chosen()
    assert B.apply(src, result, None) is False and "backup" not in result


def test_apply_makes_the_backup_unless_check_mode_is_asked(step):
    src, bdir = step
    result = chosen()
    assert B.apply(src, result, {"path": str(bdir), "make": True}) is True
    assert os.path.getsize(str(bdir / STEP / "only.pt")) == 10 and result["backup"]["verdict"] == "verified"
    line = "backup of %s to %s/%s: 1/1 files, 0.0 MiB of 0.0 MiB copied" % (STEP, bdir, STEP)
    assert result["backup"]["made"]["progress"] == [line]  # kept in the report when no one else takes them
    taken, result = [], chosen()
    assert B.apply(src, result, {"path": str(bdir) + "-2", "make": True}, progress=taken.append) is True
    assert len(taken) == 1 and "progress" not in result["backup"]["made"]


def test_apply_skips_an_incomplete_step(step):
    src, bdir = step
    result = chosen(complete=False)
    assert B.apply(src, result, {"path": str(bdir), "make": True, "required": True}) is False
    assert result["backup"]["verdict"] == "skipped" and result["backup"]["reason"] == "the chosen step is incomplete"
    assert not os.path.exists(str(bdir))


def test_apply_refuses_a_source_that_is_not_local(step):
    src, bdir = step

    class Remote:
        kind = "s3"

        def describe(self):
            return "s3://bk/ckpt"

    class Unnamed(Remote):
        kind = ""  # a source that does not say it is local: refused as well (any kind but "local")

    for source in (Remote(), Unnamed()):
        with pytest.raises(GateError) as err:
            B.apply(source, chosen(), {"path": str(bdir)})
        assert str(err.value).startswith("rlark_checkpoint_backup_* is for hostPath checkpoints; s3://bk/ckpt is ")
    src.kind = json.loads('"local"')  # compared by value, not by identity with the class's constant
    assert B.apply(src, chosen(), {"path": str(bdir), "make": True}) is True


def test_an_interrupted_make_that_copied_nothing_changes_nothing(step):
    src, bdir = step
    (bdir / STEP / "only.pt").mkdir(parents=True)  # not ours where the one file must go: its copy fails
    result = chosen()
    assert B.apply(src, result, {"path": str(bdir), "make": True, "required": True}) is False
    made = result["backup"]["made"]
    assert (made["status"], made["copied"]) == ("interrupted", 0) and "run again to continue" in made["error"]
    assert [(f["id"], f.get("path")) for f in result["findings"]] == [("backup-missing", STEP), ("gate-earlier", None)]
    assert not result["complete"] and os.path.isdir(str(bdir / STEP / "only.pt"))


def test_summary_keeps_the_verdict_the_first_20_findings_and_what_was_made():
    found = [{"id": "backup-missing", "path": "f%02d" % i, "message": "m", "hint": "h"} for i in range(25)]
    report = {"location": WHERE, "kind": "dir", "required": True, "verdict": "failed", "checked": "files",
              "files": 25, "bytes": 250, "findings": found, "made": {"copied": 3}}  # fmt: skip
    out = B.summary(report)
    assert out["findings"] == [{"id": "backup-missing", "path": "f%02d" % i, "message": "m"} for i in range(20)]
    assert out["made"] == {"copied": 3} and out["made"] is not report["made"]
    assert {k: out[k] for k in ("location", "verdict", "files", "bytes")} == {
        "location": WHERE, "verdict": "failed", "files": 25, "bytes": 250,
    }  # fmt: skip
    del report["made"]
    assert "made" not in B.summary(report)
    keys = ("location", "kind", "required", "verdict", "checked", "files", "bytes")
    assert B.summary(None) == dict(dict.fromkeys(keys), findings=[])
