# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The integrity manifest and its check, value by value (issue 26: mutants of integrity.py and integrity_schema.py).

The source here is a dict of bytes (what ``LocalSource``/``S3Source`` answer for one step); the
hashes are checked against hashlib directly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import io
import json
import os
import threading

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import integrity as I
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.integrity_schema import (
    ManifestError,
    manifest_entries,
)
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError

STEP = "global_step_4"


def sha(data):
    return hashlib.sha256(data).hexdigest()


class Source:
    """One step's files in memory; ``readable`` False hands out files without ``readinto``."""

    kind = "memory"

    def __init__(self, files, readable=True, root="/ckpt"):
        self.files = files
        self.readable = readable
        self.root = root
        self.opened = []

    def list_files(self, name):
        assert name == STEP
        return [(rel, len(data)) for rel, data in self.files.items()]

    def open_file(self, name, rel):
        self.opened.append(rel)
        if self.readable:
            return io.BytesIO(self.files[rel])
        return ReadOnly(self.files[rel])

    def read_all(self, name, rel, limit):
        return self.files[rel][:limit]

    def location(self, name):
        return self.root + "/" + name


class ReadOnly(io.RawIOBase):
    """A file with read() only (an S3 body), recording each read's size."""

    def __init__(self, data):
        self.data = data
        self.sizes = []

    def read(self, n=-1):
        self.sizes.append(n)
        chunk, self.data = self.data[:n], self.data[n:]
        return chunk

    readinto = None


def result(complete=True, checkpoint="/ckpt/" + STEP, **extra):
    out = {"complete": complete, "checkpoint": checkpoint, "findings": [{"id": "prior"}]}
    out.update(extra)
    return out


# -- hashing ----------------------------------------------------------------------------------------------


def test_constants():
    assert I.CHUNK == 1024 * 1024 and I.MANIFEST_LIMIT == 256 * 1024 * 1024
    assert I.SCHEMA == "rlark.ops/integrity/v1" and I.DEFAULT_DIR == "rlark-integrity" and I.ALGORITHM == "sha256"


def test_default_workers(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert I.default_workers() == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert I.default_workers() == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert I.default_workers() == 3


@pytest.mark.parametrize("size", [0, 1, I.CHUNK - 1, I.CHUNK, I.CHUNK + 1, 2 * I.CHUNK + 5])
@pytest.mark.parametrize("readable", [True, False])
def test_sha256_stream(size, readable):
    data = os.urandom(size)
    src = Source({"f": data}, readable=readable)
    assert I.sha256_stream(lambda: src.open_file(STEP, "f")) == (sha(data), size)


def test_sha256_stream_reads_one_chunk_at_a_time():
    handle = ReadOnly(b"a" * (I.CHUNK + 1))
    assert I.sha256_stream(lambda: handle)[1] == I.CHUNK + 1
    assert handle.sizes == [I.CHUNK, I.CHUNK, I.CHUNK]

    sizes = []

    class Into(io.BytesIO):
        def readinto(self, buf):
            sizes.append(len(buf))
            return super().readinto(buf)

    assert I.sha256_stream(lambda: Into(b"b" * 10))[1] == 10
    assert sizes == [I.CHUNK, I.CHUNK]


def test_hash_all_with_no_workers_uses_one_thread():
    """Workers below 1 are one worker: the first file is hashed alone, the second does not start beside it."""
    second_started = threading.Event()
    seen = []

    class Blocking(Source):
        def open_file(self, name, rel):
            if rel == "a":
                seen.append(second_started.wait(0.3))
            else:
                second_started.set()
            return super().open_file(name, rel)

    src = Blocking({"a": b"1", "b": b"22"})
    assert I._hash_all(src, STEP, ["a", "b"], 0) == {"a": (sha(b"1"), 1), "b": (sha(b"22"), 2)}
    assert seen == [False]
    second_started.clear()
    seen.clear()
    I._hash_all(src, STEP, ["a", "b"], 2)
    assert seen == [True]


# -- the manifest -----------------------------------------------------------------------------------------


def test_build_manifest_whole(monkeypatch):
    monkeypatch.setattr(I.time, "time", lambda: 86400.0 * 365 + 3661)
    src = Source({"b/x": b"xyz", "a": b"", "c": b"1"})
    m = I.build_manifest(src, STEP, workers=1)
    assert m == {
        "schema": "rlark.ops/integrity/v1",
        "algorithm": "sha256",
        "step_dir": STEP,
        "checkpoint": "/ckpt/" + STEP,
        "created": "1971-01-01T01:01:01Z",
        "file_count": 3,
        "total_bytes": 4,
        "files": [
            {"path": "a", "size": 0, "sha256": sha(b"")},
            {"path": "b/x", "size": 3, "sha256": sha(b"xyz")},
            {"path": "c", "size": 1, "sha256": sha(b"1")},
        ],
    }


def test_serialize_and_write_manifest(tmp_path, monkeypatch):
    m = {"b": 1, "a": [1, 2]}
    assert I.serialize(m) == '{\n "a": [\n  1,\n  2\n ],\n "b": 1\n}\n'
    path = tmp_path / "deep" / "dir" / "m.json"
    I.write_manifest(str(path), m)
    assert path.read_text() == I.serialize(m)
    assert os.listdir(str(path.parent)) == ["m.json"]
    monkeypatch.chdir(tmp_path)
    I.write_manifest("here.json", m)  # no directory part: written in the working directory
    assert (tmp_path / "here.json").read_text() == I.serialize(m)
    assert not [n for n in os.listdir(str(tmp_path)) if ".tmp." in n]


def test_read_manifest(tmp_path):
    good = tmp_path / "m.json"
    good.write_text('{"files": []}')
    assert I.read_manifest(str(good)) == {"files": []}
    with pytest.raises(ManifestError) as e:
        I.read_manifest(str(tmp_path / "absent.json"))
    assert str(e.value) == "cannot read the integrity manifest %s: No such file or directory" % (
        tmp_path / "absent.json"
    )
    bad = tmp_path / "bad.json"
    bad.write_text("{" + " " * 1000000 + "x")  # an error message over 80 characters
    with pytest.raises(ManifestError) as e:
        I.read_manifest(str(bad))
    text = str(e.value)
    assert text.startswith("the integrity manifest %s is not JSON (Expecting property name" % bad)
    assert text.endswith(")") and len(text) == len("the integrity manifest %s is not JSON ()" % bad) + 80


def test_summary():
    assert I.summary(None) == {
        "mode": None,
        "status": None,
        "path": None,
        "files": None,
        "bytes": None,
        "step_dir": None,
        "manifest_sha256": None,
    }
    m = {"step_dir": STEP, "files": []}
    kept = I.summary({"mode": "write", "status": "written", "path": "/p", "files": 2, "bytes": 5, "manifest": m})
    assert kept == {
        "mode": "write",
        "status": "written",
        "path": "/p",
        "files": 2,
        "bytes": 5,
        "step_dir": STEP,
        "manifest_sha256": sha(I.serialize(m).encode()),
    }
    returned = I.summary({"mode": "write", "status": "returned", "manifest": m})
    assert returned["manifest"] is m and returned["step_dir"] == STEP


def test_default_path():
    assert I.default_path(Source({}), STEP) is None
    local = Source({}, root="/r")
    local.kind = "local"
    assert I.default_path(local, STEP) == "/r/rlark-integrity/global_step_4.json"


# -- verify -----------------------------------------------------------------------------------------------


def test_verify_counts_and_messages():
    files = {"a": b"aa", "b": b"bbb", "c": b"c", "d": b"dddd"}
    manifest = {
        "files": [
            {"path": "a", "size": 2, "sha256": sha(b"aa").upper()},
            {"path": "b", "size": 4, "sha256": sha(b"bbb")},
            {"path": "c", "sha256": sha(b"C")},
            {"path": "gone", "size": 1, "sha256": sha(b"g")},
            {"path": "d", "size": 4, "sha256": sha(b"dddd")},
        ]
    }
    src = Source(files)
    found, counts = I.verify(src, STEP, manifest, workers=1)
    assert counts == {"files": 5, "bytes": 7}
    assert sorted(src.opened) == ["a", "c", "d"]
    by_path = {f["path"]: f for f in found}
    assert [f["path"] for f in found] == ["b", "gone", "c"]
    assert (
        by_path["b"]["message"]
        == "b has 3 bytes, the manifest says 4: the checkpoint changed after its manifest was written"
    )
    assert by_path["gone"]["message"] == (
        "gone is listed in the integrity manifest but no longer exists: "
        "the checkpoint changed after its manifest was written"
    )
    assert by_path["c"]["message"] == "c has sha256 %s, the manifest says %s: %s" % (
        sha(b"c"),
        sha(b"C"),
        "the checkpoint changed after its manifest was written",
    )
    assert by_path["c"]["severity"] == "error" and by_path["c"]["id"] == "integrity-mismatch"
    assert (
        by_path["c"]["hint"] == "do not resume from this checkpoint; find out what wrote to it after the guarded stop"
    )


def test_verify_a_size_of_zero_is_checked():
    found, _c = I.verify(Source({"a": b"x"}), STEP, {"files": [{"path": "a", "size": 0, "sha256": sha(b"x")}]})
    assert [f["path"] for f in found] == ["a"] and "has 1 bytes, the manifest says 0" in found[0]["message"]


def test_verify_integrity_lists():
    listed = {"files": [{"path": "w.bin", "sha256": sha(b"w")}, {"path": "v.bin", "sha256": sha(b"V")}]}
    files = {
        "iter/integrity.json": json.dumps(listed).encode(),
        "iter/w.bin": b"w",
        "iter/v.bin": b"v",
        "cut.json": b"{",
    }
    src = Source(files)
    found = I.verify_integrity_lists(src, STEP, ["iter/integrity.json", "cut.json"], workers=1)
    assert [(f["id"], f["path"]) for f in found] == [
        ("integrity-mismatch", "iter/v.bin"),
        ("integrity-manifest-unreadable", "cut.json"),
    ]
    assert found[0]["message"] == (
        "iter/v.bin has sha256 %s, iter/integrity.json says %s: "
        "the checkpoint is not the one its integrity list describes" % (sha(b"v"), sha(b"V"))
    )
    assert found[0]["hint"] == "do not resume from this checkpoint; find out what wrote to it after the save"
    assert found[1]["message"].startswith("cut.json: Expecting property name") and found[1]["severity"] == "error"
    long = {"x.json": json.dumps({"files": [{"path": "/" + "p" * 300, "sha256": "0"}]}).encode()}
    (bad,) = I.verify_integrity_lists(Source(long), STEP, ["x.json"], workers=1)
    assert bad["message"].startswith("x.json: a manifest entry has no relative path") and len(bad["message"]) == 8 + 120
    assert I.verify_integrity_lists(src, STEP, [], workers=1) == []


# -- apply ------------------------------------------------------------------------------------------------


def test_apply_off_and_bad_store():
    r = result()
    assert I.apply(Source({}), r, "off") is False and "integrity" not in r
    with pytest.raises(GateError) as e:
        I.apply(Source({}), r, "write", store="disk")
    assert str(e.value) == "integrity_store must be one of file, result, got 'disk'"


def test_apply_write_statuses(tmp_path):
    src = Source({"a": b"aa"})
    r = result(checkpoint="/ckpt/%s/" % STEP)
    assert I.apply(src, r, "write", path=str(tmp_path / "m.json")) is True
    rep = r["integrity"]
    assert (rep["mode"], rep["status"], rep["path"], rep["files"], rep["bytes"]) == (
        "write",
        "written",
        str(tmp_path / "m.json"),
        1,
        2,
    )
    assert rep["manifest"]["step_dir"] == STEP and 0 <= rep["seconds"] < 60
    assert json.loads((tmp_path / "m.json").read_text()) == rep["manifest"]
    r = result()
    assert (
        I.apply(src, r, "write") is False and r["integrity"]["status"] == "returned" and r["integrity"]["path"] is None
    )
    r = result()
    assert I.apply(src, r, "write", path=str(tmp_path / "n.json"), check_mode=True) is False
    assert r["integrity"]["status"] == "would-write" and not (tmp_path / "n.json").exists()
    r = result()
    assert I.apply(src, r, "write", store="result") is False and r["integrity"]["status"] == "returned"
    r = result(complete=False)
    assert I.apply(src, r, "write", path=str(tmp_path / "o.json")) is False
    assert r["integrity"] == {
        "mode": "write",
        "path": str(tmp_path / "o.json"),
        "status": "skipped",
        "reason": "the chosen step is incomplete",
    }
    assert src.opened == ["a", "a", "a", "a"]  # nothing hashed for the incomplete step


def test_apply_store_result_with_a_path_names_it():
    with pytest.raises(GateError) as e:
        I.apply(Source({}), result(), "write", path="/m.json", store="result")
    assert str(e.value).startswith("integrity_path /m.json and integrity_store=result exclude each other")


def test_apply_verify(tmp_path):
    src = Source({"a": b"aa"})
    good = {"step_dir": STEP, "files": [{"path": "a", "size": 2, "sha256": sha(b"aa")}]}
    r = result()
    assert I.apply(src, r, "verify", manifest=good, path="/ignored") is False
    rep = r["integrity"]
    assert (rep["status"], rep["path"], rep["files"], rep["bytes"]) == ("verified", None, 1, 2)
    assert r["complete"] is True and r["findings"] == [{"id": "prior"}] and "integrity_lists" not in rep
    path = tmp_path / "m.json"
    path.write_text(json.dumps(dict(good, step_dir=None)))
    r = result()
    I.apply(src, r, "verify", path=str(path))
    assert r["integrity"]["status"] == "verified" and r["integrity"]["path"] == str(path)
    r = result()
    I.apply(src, r, "verify", manifest=dict(good, files=[{"path": "a", "sha256": sha(b"x")}]))
    assert r["integrity"]["status"] == "failed" and r["complete"] is False
    assert [f["id"] for f in r["findings"]] == ["integrity-mismatch", "prior"]


def test_apply_verify_refusals():
    src = Source({"a": b"aa"})
    r = result()
    I.apply(src, r, "verify")
    assert r["integrity"]["status"] == "failed" and r["complete"] is False
    (bad, _prior) = r["findings"]
    assert (bad["id"], bad["path"]) == ("integrity-manifest-unreadable", "")
    assert bad["message"] == "integrity=verify on object storage needs integrity_path or integrity_manifest"
    assert "files" not in r["integrity"]
    r = result()
    I.apply(src, r, "verify", manifest={"step_dir": "global_step_40", "files": [{"path": "a", "sha256": "0"}]})
    assert r["findings"][0]["message"] == (
        "the integrity manifest was written for global_step_40, not for global_step_4: "
        "verify the step it was written for"
    )
    r = result()
    I.apply(src, r, "verify", manifest=[{"path": "a"}])
    assert r["findings"][0]["message"] == "an integrity manifest is a JSON object with a 'files' list"


def test_apply_verify_also_hashes_the_integrity_lists():
    listed = {"files": [{"path": "w.bin", "sha256": sha(b"w")}]}
    src = Source({"iter/integrity.json": json.dumps(listed).encode(), "iter/w.bin": b"x"})
    good = {"files": [{"path": "iter/w.bin", "sha256": sha(b"x")}]}
    r = result(integrity_lists=("iter/integrity.json",))
    I.apply(src, r, "verify", manifest=good)
    assert r["integrity"]["integrity_lists"] == ["iter/integrity.json"] and r["integrity"]["status"] == "failed"
    assert [f.get("path") for f in r["findings"]] == ["iter/w.bin", None]
    assert "iter/integrity.json says" in r["findings"][0]["message"]


# -- manifest entries -------------------------------------------------------------------------------------


def test_manifest_entries_schemas():
    assert manifest_entries({"files": [{"path": "a", "size": 3, "sha256": "AB"}]}) == [("a", 3, "ab")]
    assert manifest_entries({"algorithm": "SHA256", "files": [{"relative_path": "r", "sha256": "x"}]}) == [
        ("r", None, "x")
    ]
    assert manifest_entries({"algorithm": None, "files": [{"name": "n", "sha256": "x", "size": "3"}]}) == [
        ("n", None, "x")
    ]
    mapping = {"files": {"m": "D", "k": {"size": 1, "sha256": "e"}}}
    assert manifest_entries(mapping) == [("m", None, "d"), ("k", 1, "e")]
    assert manifest_entries({"files": [{"path": "a..b/c", "sha256": "x"}]}) == [("a..b/c", None, "x")]


@pytest.mark.parametrize(
    "manifest,message",
    [
        ("x", "an integrity manifest is a JSON object with a 'files' list"),
        ({"algorithm": "md5", "files": [{}]}, "the manifest uses md5; only sha256 is supported"),
        ({"algorithm": "SHA512", "files": [{}]}, "the manifest uses sha512; only sha256 is supported"),
        ({"files": []}, "the manifest lists no files"),
        ({"files": {}}, "the manifest lists no files"),
        ({"files": "a"}, "the manifest lists no files"),
        ({}, "the manifest lists no files"),
        ({"files": ["a"]}, "a manifest entry has no relative path and sha256: {}"),
        ({"files": [{"path": "/a", "sha256": "x"}]}, "a manifest entry has no relative path and sha256: "),
        ({"files": [{"path": "a/../b", "sha256": "x"}]}, "a manifest entry has no relative path and sha256: "),
        ({"files": [{"path": "..", "sha256": "x"}]}, "a manifest entry has no relative path and sha256: "),
        ({"files": [{"path": "a", "sha256": 1}]}, "a manifest entry has no relative path and sha256: "),
        ({"files": [{"path": 1, "sha256": "x"}]}, "a manifest entry has no relative path and sha256: "),
        ({"files": [{"sha256": "x"}]}, "a manifest entry has no relative path and sha256: "),
    ],
)
def test_manifest_entries_refusals(manifest, message):
    with pytest.raises(ManifestError) as e:
        manifest_entries(manifest)
    assert str(e.value).startswith(message)


# -- timings ----------------------------------------------------------------------------------------------


def clock(monkeypatch, *times):
    ticks = iter(times)
    monkeypatch.setattr(I.time, "time", lambda: next(ticks))


def test_apply_reports_its_seconds_rounded_to_milliseconds(tmp_path, monkeypatch):
    """The end time minus the start (not its remainder or quotient: the start is 1.0 here), to 3 decimals."""
    src = Source({"a": b"aa"})
    clock(monkeypatch, 1.0, 1.0, 3.00049)  # apply's start, the manifest's created, apply's end
    r = result()
    I.apply(src, r, "write", path=str(tmp_path / "m.json"))
    assert r["integrity"]["seconds"] == 2.0 and r["integrity"]["manifest"]["created"] == "1970-01-01T00:00:01Z"
    good = {"files": [{"path": "a", "size": 2, "sha256": sha(b"aa")}]}
    clock(monkeypatch, 1.0, 2.50049)
    r = result()
    I.apply(src, r, "verify", manifest=good)
    assert r["integrity"]["seconds"] == 1.5 and r["integrity"]["status"] == "verified"


# -- values as the module receives them -------------------------------------------------------------------


def parsed(text):
    """A string as Ansible hands it to a module (parsed from JSON): not the interned literal of the same text."""
    return json.loads(json.dumps(text))


def test_verify_compares_sizes_by_value():
    """Sizes above 256 are distinct int objects: a listed size equal to the file's is no mismatch."""
    data = b"z" * 1000
    manifest = json.loads(json.dumps({"files": [{"path": "big", "size": 1000, "sha256": sha(data)}]}))
    assert I.verify(Source({"big": data}), STEP, manifest, workers=1) == ([], {"files": 1, "bytes": 1000})


def test_an_unreadable_integrity_list_does_not_end_the_check():
    listed = {"files": [{"path": "w.bin", "sha256": sha(b"W")}]}
    src = Source({"cut.json": b"{", "iter/integrity.json": json.dumps(listed).encode(), "iter/w.bin": b"w"})
    found = I.verify_integrity_lists(src, STEP, ["cut.json", "iter/integrity.json"], workers=1)
    assert [(f["id"], f["path"]) for f in found] == [
        ("integrity-manifest-unreadable", "cut.json"),
        ("integrity-mismatch", "iter/w.bin"),
    ]


def test_apply_with_parsed_modes(tmp_path):
    src = Source({"a": b"aa"})
    r = result()
    assert I.apply(src, r, parsed("off")) is False and "integrity" not in r
    r = result()
    assert I.apply(src, r, parsed("write"), path=str(tmp_path / "m.json")) is True
    assert r["integrity"]["status"] == "written" and (tmp_path / "m.json").exists()
    r = result()
    assert I.apply(src, r, parsed("write"), store=parsed("result")) is False
    assert r["integrity"]["status"] == "returned" and r["integrity"]["path"] is None
    with pytest.raises(GateError):
        I.apply(src, result(), parsed("write"), path="/m.json", store=parsed("result"))
    r = result()
    assert I.apply(src, r, parsed("verify"), path=str(tmp_path / "m.json"), store=parsed("file")) is False
    assert r["integrity"]["status"] == "verified" and r["integrity"]["files"] == 1


def test_default_path_of_a_source_without_a_kind():
    class Bare:
        root = "/r"

    assert I.default_path(Bare(), STEP) is None


def test_verify_reads_its_path_whatever_the_store(tmp_path):
    """integrity_store is where a written manifest goes: verify reads integrity_path with store=result too."""
    src = Source({"a": b"aa"})
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"step_dir": STEP, "files": [{"path": "a", "size": 2, "sha256": sha(b"aa")}]}))
    r = result()
    assert I.apply(src, r, "verify", path=str(path), store="result") is False
    assert (r["integrity"]["status"], r["integrity"]["path"], r["complete"]) == ("verified", str(path), True)
