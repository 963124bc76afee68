# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Making the backup of one step (checkpoint/backup_copy.py) on its own: report, progress lines, refusals.

Directory stores on this host; outcomes read back with os.walk / hashlib / json, never with the store.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup_copy as C
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_store import DirStore
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError

STEP = "global_step_7"
FILES = {"a.bin": b"a" * 1000, "sub/b.bin": b"b" * 2000, "sub/c.bin": b"c" * 3000}


@pytest.fixture
def stores(tmp_path):
    for rel, data in FILES.items():
        path = tmp_path / "ckpt" / STEP / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    original = DirStore(str(tmp_path / "ckpt"))
    return original, DirStore(str(tmp_path / "backup")), original.list(STEP), tmp_path / "backup"


def progress_of(bdir):
    with open(str(bdir / "rlark-backup" / (STEP + ".json"))) as fh:
        return json.load(fh)


def test_the_report_counts_what_was_copied_and_hashes_it(stores):
    original, store, listing, bdir = stores
    lines = []
    made = C.make(original, store, STEP, listing, batch_files=2, progress=lines.append, workers=1)
    assert (made["status"], made["copied"], made["skipped"], made["bytes_copied"]) == ("made", 3, 0, 6000)
    assert made["hashes"] == {rel: hashlib.sha256(data).hexdigest() for rel, data in FILES.items()}
    assert 0 <= made["seconds"] < 60
    assert lines == [
        "backup of %s to %s: 2/3 files, 0.0 MiB of 0.0 MiB copied" % (STEP, store.location(STEP)),
        "backup of %s to %s: 3/3 files, 0.0 MiB of 0.0 MiB copied" % (STEP, store.location(STEP)),
    ]
    state = progress_of(bdir)
    assert state["complete"] and state["schema"] == C.SCHEMA and state["step_dir"] == STEP
    assert state["source"] == original.location(STEP) and state["completed_at"].endswith("Z")
    assert {rel: e["size"] for rel, e in state["files"].items()} == {rel: len(d) for rel, d in FILES.items()}
    assert all(e["source_mtime"] == listing[rel][1] for rel, e in state["files"].items())


def test_a_second_run_says_what_was_already_there(stores):
    original, store, listing, _bdir = stores
    C.make(original, store, STEP, {"a.bin": listing["a.bin"]}, workers=1)
    lines = []
    made = C.make(original, store, STEP, listing, batch_files=16, progress=lines.append, workers=1)
    assert (made["copied"], made["skipped"], made["bytes_copied"]) == (2, 1, 5000)
    assert lines == ["backup of %s to %s: 2/2 files, 0.0 MiB of 0.0 MiB copied (1 already there)"
                     % (STEP, store.location(STEP))]  # fmt: skip
    assert set(made["hashes"]) == set(FILES)


def test_check_mode_reports_without_writing(stores):
    original, store, listing, bdir = stores
    made = C.make(original, store, STEP, listing, check_mode=True)
    assert made == {"status": "would-make", "copied": 3, "skipped": 0, "bytes_copied": 0, "seconds": 0.0,
                    "hashes": {}}  # fmt: skip
    assert not os.path.exists(str(bdir))


@pytest.mark.parametrize("listed", [1999, 2001])
def test_a_size_that_differs_from_the_listing_stops_the_copy(stores, listed):
    original, store, listing, bdir = stores
    listing = dict(listing, **{"sub/b.bin": (listed, listing["sub/b.bin"][1])})
    with pytest.raises(GateError) as err:
        C.make(original, store, STEP, listing, batch_files=1, workers=1)
    msg = str(err.value)
    assert "stopped at sub/b.bin (2 of 3 files copied, 0 were already there)" in msg, msg
    assert "changed while it was copied (2000 bytes read, %d listed)" % listed in msg, msg
    assert "%s/rlark-backup/%s.json: run again to continue" % (store.location(), STEP) in msg, msg
    state = progress_of(bdir)
    assert sorted(state["files"]) == ["a.bin", "sub/c.bin"] and not state["complete"]


@pytest.mark.parametrize("other", ["global_step_6", "global_step_8"])
def test_progress_from_another_step_is_not_trusted(stores, other):
    original, store, listing, bdir = stores
    C.make(original, store, STEP, listing, workers=1)
    state = progress_of(bdir)
    state["step_dir"] = other
    with open(str(bdir / "rlark-backup" / (STEP + ".json")), "w") as fh:
        json.dump(state, fh)
    assert C.make(original, store, STEP, listing, workers=1)["copied"] == 3


@pytest.mark.parametrize(
    "entry, size, mtime, present, expected",
    [
        (None, 5, 1.0, 5, False),
        ({}, 5, 1.0, 5, False),
        ({"size": 5, "source_mtime": 1.0}, 5, 1.0, 5, True),
        ({"size": 5, "source_mtime": 1.0}, 6, 1.0, 5, False),
        ({"size": 5, "source_mtime": 1.0}, 5, 2.0, 5, False),
        ({"size": 5, "source_mtime": 1.0}, 5, 1.0, 4, False),
        ({"size": 5, "source_mtime": 1.0}, 5, 1.0, None, False),
        ({"size": 5, "source_mtime": 1.0}, 4, 1.0, 4, False),  # the recorded size alone differs
        ({"size": 4, "source_mtime": 1.0}, 5, 1.0, 5, False),
        ({"size": 5, "source_mtime": 1.0}, 5, 1.0, 6, False),  # the copy alone is longer
        ({"size": 5, "source_mtime": 2.0}, 5, 1.0, 5, False),  # the original is older than recorded
    ],
)
def test_already_copied(entry, size, mtime, present, expected):
    assert C.already_copied(entry, size, mtime, present) is expected


def test_sizes_in_progress_lines():
    assert C._gib(1024**3) == "1.00 GiB" and C._gib(3 * 1024**3 // 2) == "1.50 GiB"
    assert C._gib(100 * 1024**3) == "100.00 GiB"
    assert C._gib(1024**3 - 1) == "1024.0 MiB" and C._gib(5 * 1024**2) == "5.0 MiB"


@pytest.mark.parametrize("cpus, workers", [(None, 1), (1, 1), (2, 2), (3, 3), (4, 4), (16, 4)])
def test_default_workers(monkeypatch, cpus, workers):
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    assert C.default_workers(None) == workers


def test_times_are_kept_to_the_millisecond(stores, monkeypatch):
    original, store, listing, bdir = stores
    clock = iter([1000.0])
    monkeypatch.setattr(C.time, "time", lambda: next(clock, 2001.23456))
    made = C.make(original, store, STEP, listing, workers=1)
    assert made["seconds"] == 1001.235
    assert {e["copied_at"] for e in progress_of(bdir)["files"].values()} == {2001.235}


def test_a_failure_still_records_the_copy_that_was_running_beside_it(stores):
    import threading

    original, store, listing, bdir = stores
    b_done = threading.Event()
    put = store.put

    def put_slow_failure(step_name, rel, fh):
        if rel == "a.bin":  # fails only once sub/b.bin, copied beside it, is finished
            assert b_done.wait(30)
            raise OSError(28, "No space left on device")
        out = put(step_name, rel, fh)
        if rel == "sub/b.bin":
            b_done.set()
        return out

    store.put = put_slow_failure
    with pytest.raises(GateError, match=r"stopped at a\.bin .*No space left on device"):
        C.make(original, store, STEP, listing, batch_files=16, workers=2)
    assert "sub/b.bin" in progress_of(bdir)["files"] and "a.bin" not in progress_of(bdir)["files"]


def test_an_unexpected_error_is_raised_and_the_step_is_not_marked_complete(stores):
    original, store, listing, bdir = stores
    put = store.put

    def put_or_break(step_name, rel, fh):
        if rel == "sub/b.bin":
            raise ValueError("a bug in a store")
        return put(step_name, rel, fh)

    store.put = put_or_break
    with pytest.raises(ValueError, match="a bug in a store"):
        C.make(original, store, STEP, listing, batch_files=1, workers=1)
    assert not progress_of(bdir)["complete"]


def test_a_progress_write_every_batch_files_by_default(tmp_path):
    for i in range(17):
        path = tmp_path / "ckpt" / STEP / ("f%02d.bin" % i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * 10)
    original, store = DirStore(str(tmp_path / "ckpt")), DirStore(str(tmp_path / "backup"))
    lines = []
    C.make(original, store, STEP, original.list(STEP), progress=lines.append, workers=1)
    assert [line.split(": ")[1].split(" files")[0] for line in lines] == ["16/17", "17/17"]


@pytest.mark.parametrize(
    "batch_bytes, batches",
    [(2500, ["2/3", "3/3"]), (3000, ["2/3", "3/3"]), (3001, ["3/3"])],  # a.bin + sub/b.bin are 3000 bytes
)
def test_a_progress_write_every_batch_bytes_whatever_batch_files_says(stores, monkeypatch, batch_bytes, batches):
    original, store, listing, _bdir = stores
    monkeypatch.setattr(C, "BATCH_BYTES", batch_bytes)  # passed, reached exactly, not reached (name order)
    lines = []
    C.make(original, store, STEP, listing, batch_files=16, progress=lines.append, workers=1)
    assert [line.split(": ")[1].split(" files")[0] for line in lines] == batches


def test_the_byte_batch_is_the_256_mib_the_docs_promise():
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "checkpoint-gate.md")) as fh:
        assert "after every batch of files or 256 MiB" in " ".join(fh.read().split())
    assert C.BATCH_BYTES == 256 * 2**20


def test_one_progress_line_for_many_files_in_one_batch(tmp_path):
    for i in range(300):  # more than CPython's cached small ints: counts are compared by value
        path = tmp_path / "ckpt" / STEP / ("f%03d.bin" % i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    original, store = DirStore(str(tmp_path / "ckpt")), DirStore(str(tmp_path / "backup"))
    listing = original.list(STEP)
    C.make(original, store, STEP, {n: listing[n] for n in ("f000.bin", "f001.bin")}, workers=1)
    lines = []
    made = C.make(original, store, STEP, listing, batch_files=257, progress=lines.append, workers=1)
    assert (made["copied"], made["skipped"]) == (298, 2)
    assert [line.split(": ")[1].split(" files")[0] for line in lines] == ["257/298", "298/298"]


def test_copies_not_started_when_one_fails_are_not_made(stores):
    import threading

    original, store, listing, bdir = stores
    seen = threading.Event()
    put = store.put

    class Full(OSError):
        @property
        def strerror(self):
            seen.set()  # make() reads it as it takes the failure, just before it cancels what has not started
            return "No space left on device"

    def put_failing_first(step_name, rel, fh):
        if rel == "a.bin":
            raise Full()
        assert seen.wait(30)
        return put(step_name, rel, fh)  # writes and fsyncs: sub/c.bin is cancelled meanwhile

    store.put = put_failing_first
    with pytest.raises(GateError, match=r"stopped at a\.bin .*No space left on device"):
        C.make(original, store, STEP, listing, workers=1)
    # sub/b.bin may have started before the failure was taken (then it finishes); sub/c.bin cannot have
    assert not {"a.bin", "sub/c.bin"} & set(progress_of(bdir)["files"])
    assert not os.path.exists(str(bdir / STEP / "sub" / "c.bin")), "a copy not started is not made"


def test_a_given_worker_count_is_used_as_given(stores, monkeypatch):
    original, store, listing, _bdir = stores
    asked = []
    monkeypatch.setattr(C, "default_workers", lambda st: asked.append(st) or 1)
    assert C.make(original, store, STEP, listing, workers=1)["copied"] == 3 and asked == []
    assert C.make(original, DirStore(store.root + "-2"), STEP, listing)["copied"] == 3 and len(asked) == 1


class _OutOfOrderPool:
    """A ThreadPoolExecutor stand-in that runs each copy when it is submitted, except ``held``: left queued, so
    the failure's cancel() reaches it while the copy submitted after it has finished (the race of two workers
    where the later one starts its file first), deterministically."""

    held = "sub/b.bin"

    def __init__(self, max_workers=None):
        self.max_workers = max_workers

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, rel):
        from concurrent.futures import Future

        future = Future()
        if rel != self.held:
            try:
                future.set_result(fn(rel))
            except Exception as exc:  # a Future carries whatever the copy raised
                future.set_exception(exc)
        return future


def test_a_copy_finished_after_a_cancelled_one_is_still_recorded(stores, monkeypatch):
    import concurrent.futures

    original, store, listing, bdir = stores
    (bdir / STEP / "a.bin").mkdir(parents=True)  # not ours where a.bin must go: the first copy fails
    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", _OutOfOrderPool)
    with pytest.raises(GateError, match=r"stopped at a\.bin \(1 of 3 files copied, 0 were already there\)"):
        C.make(original, store, STEP, listing, batch_files=16, workers=2)
    state = progress_of(bdir)
    assert sorted(state["files"]) == ["sub/c.bin"] and not state["complete"]
    assert state["files"]["sub/c.bin"]["sha256"] == hashlib.sha256(FILES["sub/c.bin"]).hexdigest()
    assert not os.path.exists(str(bdir / STEP / "sub" / "b.bin")), "the cancelled copy never ran"
    monkeypatch.undo()
    os.rmdir(str(bdir / STEP / "a.bin"))
    made = C.make(original, store, STEP, listing, workers=1)
    assert (made["copied"], made["skipped"]) == (2, 1), "the finished copy is not made again"
