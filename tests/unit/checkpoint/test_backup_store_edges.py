# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint/backup_store.py: the backup's stores read directly (issue 26)."""

import datetime
import hashlib
import io
import json
import os

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup_store
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.backup_store import (
    DirStore,
    HashingReader,
    ListedStore,
    S3Store,
    read_listing,
)
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError


def write(path, data=b"", mtime=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def copy_src(tmp_path):
    with open(str(tmp_path / "src"), "rb") as fh, open(str(tmp_path / "dst"), "wb", buffering=0) as out:
        return backup_store.copy_hashing(fh, out)


def test_the_hashing_reader_hashes_and_counts_what_it_hands_out(monkeypatch):
    monkeypatch.setattr(backup_store, "CHUNK", 4)
    reader = HashingReader(io.BytesIO(b"0123456789"))
    assert reader.read(3) == b"012"
    assert reader.read() == b"3456"  # no size: one CHUNK
    assert reader.read(None) == b"789"
    assert reader.read(0) == b""
    assert reader.read(-1) == b""
    assert (reader.count, reader.digest.hexdigest()) == (10, hashlib.sha256(b"0123456789").hexdigest())
    reader = HashingReader(io.BytesIO(b"abcde"))
    buf = bytearray(3)
    assert (reader.readinto(buf), bytes(buf)) == (3, b"abc")
    assert (reader.readinto(buf), bytes(buf[:2])) == (2, b"de")
    assert reader.readinto(buf) == 0
    assert (reader.count, reader.digest.hexdigest()) == (5, hashlib.sha256(b"abcde").hexdigest())


def test_a_write_is_repeated_until_every_byte_is_out():
    class Slow:
        def __init__(self):
            self.got = b""

        def write(self, view):
            self.got += bytes(view[:2])
            return min(2, len(view))

    out = Slow()
    backup_store._write_all(out, memoryview(b"12345"))
    assert out.got == b"12345"


def test_the_kernel_copy_repeats_until_done_or_nothing_moves(tmp_path, monkeypatch):
    calls = []

    def copy_file_range(src, dst, count, off_src, off_dst):
        calls.append((count, off_src, off_dst))
        return min(count, 3) if len(calls) < 3 else 0

    monkeypatch.setattr(backup_store.os, "copy_file_range", copy_file_range, raising=False)
    assert backup_store._kernel_copy(1, 2, 10, 8) == 6
    assert calls == [(8, 10, 10), (5, 13, 13), (2, 16, 16)]
    calls.clear()
    assert backup_store._kernel_copy(1, 2, 0, 3) == 3 and calls == [(3, 0, 0)]
    assert backup_store._kernel_copy(1, 2, 0, 0) == 0


def test_copy_hashing_copies_and_hashes_every_byte(tmp_path, monkeypatch):
    data = os.urandom(5000)
    write(str(tmp_path / "src"), data)
    monkeypatch.setattr(backup_store, "WINDOW", 1024)
    with open(str(tmp_path / "src"), "rb") as fh, open(str(tmp_path / "dst"), "wb", buffering=0) as out:
        assert backup_store.copy_hashing(fh, out) == (hashlib.sha256(data).hexdigest(), 5000)
    with open(str(tmp_path / "dst"), "rb") as fh:
        assert fh.read() == data
    out = io.BytesIO()
    assert backup_store.copy_hashing(io.BytesIO(data), out) == (hashlib.sha256(data).hexdigest(), 5000)
    assert out.getvalue() == data


def test_the_disk_is_asked_to_write_each_full_writeback_span_of_the_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(backup_store, "WINDOW", 1024)
    monkeypatch.setattr(backup_store, "WRITEBACK", 2048)
    hints = []
    monkeypatch.setattr(backup_store.os, "posix_fadvise", lambda fd, off, n, advice: hints.append((off, n, advice)))
    for size, expected in (
        (2047, []),
        (2048, [(0, 2048)]),
        (6143, [(0, 2048), (2048, 2048)]),
        (6144, [(0, 2048), (2048, 2048), (4096, 2048)]),
    ):
        data = os.urandom(size)
        write(str(tmp_path / "src"), data)
        hints.clear()
        assert copy_src(tmp_path) == (hashlib.sha256(data).hexdigest(), size)
        assert hints == [(off, n, backup_store.os.POSIX_FADV_DONTNEED) for off, n in expected], size
        with open(str(tmp_path / "dst"), "rb") as fh:
            assert fh.read() == data


def test_a_span_is_what_was_copied_since_the_last_hint_at_least_writeback_long(tmp_path, monkeypatch):
    monkeypatch.setattr(backup_store, "WINDOW", 1024)
    hints = []
    monkeypatch.setattr(backup_store.os, "posix_fadvise", lambda fd, off, n, advice: hints.append((off, n)))
    write(str(tmp_path / "src"), os.urandom(7168))
    for writeback, expected in ((3072, [(0, 3072), (3072, 3072)]), (1500, [(0, 2048), (2048, 2048), (4096, 2048)])):
        monkeypatch.setattr(backup_store, "WRITEBACK", writeback)
        hints.clear()
        copy_src(tmp_path)
        assert hints == expected, writeback


def test_by_default_the_disk_is_asked_to_write_every_8_mib(tmp_path, monkeypatch):
    hints = []
    monkeypatch.setattr(backup_store.os, "posix_fadvise", lambda fd, off, n, advice: hints.append((off, n)))
    for size, expected in (((8 << 20) - 1, []), (17 << 20, [(0, 8 << 20), (8 << 20, 8 << 20)])):
        data = os.urandom(size)
        write(str(tmp_path / "src"), data)
        hints.clear()
        assert copy_src(tmp_path) == (hashlib.sha256(data).hexdigest(), len(data))
        assert hints == expected, size


def test_a_refused_or_missing_writeback_hint_leaves_the_copy_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(backup_store, "WINDOW", 1024)
    monkeypatch.setattr(backup_store, "WRITEBACK", 1024)
    data = os.urandom(3000)
    write(str(tmp_path / "src"), data)

    def refuse(fd, off, n, advice):
        raise OSError(backup_store.errno.ESPIPE, "no")

    monkeypatch.setattr(backup_store.os, "posix_fadvise", refuse)
    assert copy_src(tmp_path) == (hashlib.sha256(data).hexdigest(), 3000)
    monkeypatch.delattr(backup_store.os, "posix_fadvise")
    assert copy_src(tmp_path) == (hashlib.sha256(data).hexdigest(), 3000)
    with open(str(tmp_path / "dst"), "rb") as fh:
        assert fh.read() == data


def test_copy_hashing_writes_itself_where_the_kernel_cannot(tmp_path, monkeypatch):
    data = os.urandom(3000)
    write(str(tmp_path / "src"), data)
    monkeypatch.setattr(backup_store, "WINDOW", 1024)

    def refuse(*args):
        raise OSError(backup_store.errno.EXDEV, "cross-device")

    monkeypatch.setattr(backup_store.os, "copy_file_range", refuse, raising=False)
    with open(str(tmp_path / "src"), "rb") as fh, open(str(tmp_path / "dst"), "wb", buffering=0) as out:
        assert backup_store.copy_hashing(fh, out) == (hashlib.sha256(data).hexdigest(), 3000)
    with open(str(tmp_path / "dst"), "rb") as fh:
        assert fh.read() == data


def test_a_kernel_failure_after_the_first_window_or_of_another_kind_is_raised(tmp_path, monkeypatch):
    write(str(tmp_path / "src"), b"x" * 3000)
    monkeypatch.setattr(backup_store, "WINDOW", 1024)
    real = backup_store._kernel_copy
    for fail_at, code in ((1024, backup_store.errno.EXDEV), (0, backup_store.errno.EIO)):

        def copy(src, dst, off, n, fail_at=fail_at, code=code):
            if off == fail_at:
                raise OSError(code, "no")
            return real(src, dst, off, n)

        monkeypatch.setattr(backup_store, "_kernel_copy", copy)
        with pytest.raises(OSError) as raised:
            copy_src(tmp_path)
        assert raised.value.errno == code


def test_a_short_copy_is_refused_with_its_counts(tmp_path, monkeypatch):
    write(str(tmp_path / "src"), b"x" * 100)
    monkeypatch.setattr(backup_store, "_kernel_copy", lambda src, dst, off, n: n - 1)
    with pytest.raises(GateError) as raised:
        copy_src(tmp_path)
    assert str(raised.value) == "%s: 99 of 100 bytes written at offset 0" % (tmp_path / "src")


def test_a_file_that_grows_while_copied_is_refused(tmp_path, monkeypatch):
    write(str(tmp_path / "src"), b"x" * 100)
    real = backup_store._kernel_copy

    def copy(src, dst, off, n):
        if not off:  # once: the writer appends while the first window is copied
            with open(str(tmp_path / "src"), "ab") as grow:
                grow.write(b"y")
        return real(src, dst, off, n)

    monkeypatch.setattr(backup_store, "_kernel_copy", copy)
    monkeypatch.setattr(backup_store, "WINDOW", 1 << 20)
    with pytest.raises(GateError) as raised:
        copy_src(tmp_path)
    assert str(raised.value) == "%s changed while it was copied (size or mtime moved)" % (tmp_path / "src")


def test_a_dir_store_names_its_places(tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    store = DirStore("b/")
    assert (store.root, store.host, store.kind) == (str(tmp_path / "b"), None, "dir")
    assert store.location() == str(tmp_path / "b")
    assert store.location("global_step_1") == str(tmp_path / "b" / "global_step_1")
    assert store.step_path("global_step_1") == str(tmp_path / "b" / "global_step_1")
    assert store.step_path("global_step_1", "a/w.pt") == str(tmp_path / "b" / "global_step_1" / "a" / "w.pt")
    remote = DirStore("/srv/b", host="bk1")
    assert (remote.location(), remote.location("global_step_1")) == ("bk1:/srv/b", "bk1:/srv/b/global_step_1")
    assert DirStore("/srv/b", host="").host is None


def test_a_dir_store_lists_regular_files_but_its_own_part_files(tmp_path):
    step = tmp_path / "global_step_1"
    write(str(step / "a" / "w.pt"), b"123", mtime=100)
    write(str(step / "r.pt"), b"1", mtime=200)
    write(str(step / "a" / "x.pt.77.rlark-part"), b"12")
    os.symlink("r.pt", str(step / "link.pt"))
    store = DirStore(str(tmp_path))
    assert store.list("global_step_1") == {"a/w.pt": (3, 100.0), "r.pt": (1, 200.0)}
    assert store.list("global_step_9") == {}


def test_a_dir_store_that_cannot_be_read_is_a_gate_error(tmp_path, monkeypatch):
    write(str(tmp_path / "global_step_1" / "a" / "w.pt"))
    store = DirStore(str(tmp_path))
    real = os.scandir

    def scandir(path):
        if path.endswith("/a"):
            raise FileNotFoundError(2, "gone")
        return real(path)

    monkeypatch.setattr(backup_store.os, "scandir", scandir)
    with pytest.raises(FileNotFoundError):  # a subdirectory vanishing is no empty step
        store.list("global_step_1")

    def denied(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(backup_store.os, "scandir", denied)
    with pytest.raises(GateError) as raised:
        store.list("global_step_1")
    assert str(raised.value) == "cannot read %s/: Permission denied" % (tmp_path / "global_step_1")


def test_a_dir_store_put_is_atomic_and_leaves_no_part_file(tmp_path):
    store = DirStore(str(tmp_path))
    digest, count = store.put("global_step_1", "a/w.pt", io.BytesIO(b"hello"))
    assert (digest, count) == (hashlib.sha256(b"hello").hexdigest(), 5)
    with store.open("global_step_1", "a/w.pt") as fh:
        assert fh.read() == b"hello"
    assert os.listdir(str(tmp_path / "global_step_1" / "a")) == ["w.pt"]

    class Broken(io.BytesIO):
        def readinto(self, buf):
            raise OSError(5, "I/O error")

    with pytest.raises(OSError):
        store.put("global_step_1", "a/v.pt", Broken(b"x"))
    assert os.listdir(str(tmp_path / "global_step_1" / "a")) == ["w.pt"]


def test_a_dir_store_progress_round_trips_and_unreadable_is_none(tmp_path):
    store = DirStore(str(tmp_path))
    assert store.read_progress("global_step_1") is None
    store.write_progress("global_step_1", {"b": 1, "a": [2]})
    path = tmp_path / "rlark-backup" / "global_step_1.json"
    assert path.read_text() == '{"a": [2], "b": 1}'
    assert store.read_progress("global_step_1") == {"a": [2], "b": 1}
    assert os.listdir(str(tmp_path / "rlark-backup")) == ["global_step_1.json"]
    path.write_text("{not json")
    assert store.read_progress("global_step_1") is None


def test_a_listed_store_reads_the_listing_and_asks_for_the_hash_it_lacks():
    listing = {"root": "/srv/b", "steps": {"global_step_7": {"w.pt": [3, 10.0, "abc"], "r.pt": [1, 20.0, None]}}}
    store = ListedStore(listing, "bk1")
    assert (store.kind, store.location(), store.location("global_step_7")) == (
        "dir",
        "bk1:/srv/b",
        "bk1:/srv/b/global_step_7",
    )
    assert store.list("global_step_7") == {"w.pt": (3, 10.0), "r.pt": (1, 20.0)}
    assert store.list("global_step_8") == {}
    assert store.sha256("global_step_7", "w.pt") == "abc"
    for rel in ("r.pt", "absent.pt"):
        with pytest.raises(GateError) as raised:
            store.sha256("global_step_7", rel)
        assert str(raised.value) == (
            "the listing read on rlark_checkpoint_backup_host bk1 has no sha256 of global_step_7/%s (the backup host "
            "hashes the step named by rlark_checkpoint_step, or its newest step): set rlark_checkpoint_step=7" % rel
        )
    short = ListedStore({"steps": {"global_step_7": {"w.pt": [3, 10.0]}}}, "bk1")
    assert short.root == ""
    with pytest.raises(GateError):
        short.sha256("global_step_7", "w.pt")
    assert ListedStore({}, "h").steps == {}


def test_read_listing_hashes_the_step_asked_for_or_the_newest(tmp_path):
    write(str(tmp_path / "global_step_1" / "w.pt"), b"one", mtime=50)
    write(str(tmp_path / "global_step_2" / "w.pt"), b"two", mtime=100)
    write(str(tmp_path / "global_step_10" / "w.pt"), b"ten", mtime=200)
    write(str(tmp_path / "global_step_x" / "w.pt"), b"x")
    write(str(tmp_path / "global_step_3"), b"a file")
    os.makedirs(str(tmp_path / "other"))
    got = read_listing(str(tmp_path), sha256=True)
    assert got == {
        "root": str(tmp_path),
        "steps": {
            "global_step_1": {"w.pt": [3, 50.0, None]},
            "global_step_2": {"w.pt": [3, 100.0, None]},
            "global_step_10": {"w.pt": [3, 200.0, hashlib.sha256(b"ten").hexdigest()]},
        },
        "hashed": "global_step_10",
    }
    assert list(got["steps"]) == ["global_step_1", "global_step_2", "global_step_10"]  # by number, not by name
    got = read_listing(str(tmp_path), step=2, sha256=True)
    assert (
        got["hashed"] == "global_step_2"
        and got["steps"]["global_step_2"]["w.pt"][2] == hashlib.sha256(b"two").hexdigest()
    )
    assert got["steps"]["global_step_10"]["w.pt"][2] is None
    assert read_listing(str(tmp_path), step="2")["hashed"] == ""  # without sha256 nothing is hashed
    assert read_listing(str(tmp_path / "absent"), sha256=True) == {
        "root": str(tmp_path / "absent"),
        "steps": {},
        "hashed": "",
    }
    with pytest.raises(GateError) as raised:
        read_listing(str(tmp_path / "global_step_3"))
    assert str(raised.value) == "cannot read %s: Not a directory" % (tmp_path / "global_step_3")


class Source:
    """An S3Source as the store uses it: pages, its client and _call."""

    def __init__(self, pages=()):
        self.bucket = "b"
        self.root = "bk/"
        self._pages = list(pages)
        self.calls = []
        self.client = self
        self.fail_on = None
        self.objects = {}

    def uri(self, key=""):
        return "s3://b/" + key

    def pages(self, prefix):
        self.calls.append(("pages", prefix))
        return self._pages

    def open_file(self, name, rel):
        return ("open", name, rel)

    def _call(self, what, fn, **kwargs):
        return fn(**kwargs)

    def _record(self, name, kwargs):
        self.calls.append((name, {k: v for k, v in kwargs.items() if k != "Body"}, kwargs.get("Body")))
        if name == self.fail_on:
            raise OSError(5, "failed")

    def put_object(self, **kwargs):
        self._record("put", kwargs)

    def create_multipart_upload(self, **kwargs):
        self._record("create", kwargs)
        return {"UploadId": "U"}

    def upload_part(self, **kwargs):
        self._record("part", kwargs)
        return {"ETag": "e%d" % kwargs["PartNumber"]}

    def complete_multipart_upload(self, **kwargs):
        self._record("complete", kwargs)

    def abort_multipart_upload(self, **kwargs):
        self._record("abort", kwargs)
        raise RuntimeError("abort fails too: suppressed")

    def get_object(self, **kwargs):
        return {"Body": io.BytesIO(self.objects[kwargs["Key"]])}


def test_an_s3_store_lists_objects_but_directory_markers():
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    rows = [("bk/global_step_1/a/", 0), ("bk/global_step_1/a/w.pt", 3), ("bk/global_step_1/v-", 1)]
    source = Source([{"Contents": [{"Key": k, "Size": n, "LastModified": when} for k, n in rows]}, {}])
    store = S3Store(source)
    assert (store.kind, store.root, store.location(), store.location("global_step_1")) == (
        "s3",
        "bk/",
        "s3://b/bk/",
        "s3://b/bk/global_step_1/",
    )
    assert store.list("global_step_1") == {"a/w.pt": (3, when.timestamp()), "v-": (1, when.timestamp())}
    assert source.calls == [("pages", "bk/global_step_1/")]
    assert store.open("global_step_1", "w.pt") == ("open", "global_step_1", "w.pt")


def test_an_s3_store_puts_below_a_chunk_in_one_request_and_above_in_parts(monkeypatch):
    monkeypatch.setattr(backup_store, "CHUNK", 4)
    source = Source()
    store = S3Store(source)
    where = {"Bucket": "b", "Key": "bk/global_step_1/w.pt"}
    assert store.put("global_step_1", "w.pt", io.BytesIO(b"abc")) == (hashlib.sha256(b"abc").hexdigest(), 3)
    assert source.calls == [("put", where, b"abc")]
    source.calls.clear()
    assert store.put("global_step_1", "w.pt", io.BytesIO(b"abcdefghi")) == (hashlib.sha256(b"abcdefghi").hexdigest(), 9)
    assert source.calls == [
        ("create", where, None),
        ("part", dict(where, UploadId="U", PartNumber=1), b"abcd"),
        ("part", dict(where, UploadId="U", PartNumber=2), b"efgh"),
        ("part", dict(where, UploadId="U", PartNumber=3), b"i"),
        ("complete", dict(where, UploadId="U", MultipartUpload={"Parts": [
            {"PartNumber": 1, "ETag": "e1"}, {"PartNumber": 2, "ETag": "e2"}, {"PartNumber": 3, "ETag": "e3"}]}), None),
    ]  # fmt: skip
    source.calls.clear()
    assert store.put("global_step_1", "w.pt", io.BytesIO(b"abcd"))[1] == 4  # exactly one chunk: one part
    assert [c[0] for c in source.calls] == ["create", "part", "complete"]
    source.calls.clear()
    source.fail_on = "part"
    with pytest.raises(OSError):
        store.put("global_step_1", "w.pt", io.BytesIO(b"abcdefghi"))
    assert [c[0] for c in source.calls] == ["create", "part", "abort"]
    assert source.calls[-1][1] == dict(where, UploadId="U")


def test_an_s3_store_progress_round_trips_and_unreadable_is_none():
    source = Source()
    store = S3Store(source)
    assert store.read_progress("global_step_1") is None
    store.write_progress("global_step_1", {"b": 1, "a": 2})
    assert source.calls == [("put", {"Bucket": "b", "Key": "bk/rlark-backup/global_step_1.json"}, b'{"a": 2, "b": 1}')]
    source.objects["bk/rlark-backup/global_step_1.json"] = b'{"a": 2}'
    assert store.read_progress("global_step_1") == {"a": 2}
    source.objects["bk/rlark-backup/global_step_1.json"] = b"{bad"
    assert store.read_progress("global_step_1") is None


def test_open_store_picks_the_listing_the_path_or_s3(monkeypatch):
    assert isinstance(backup_store.open_store({"listing": {"root": "/r"}, "host": "h", "path": "/p"}), ListedStore)
    store = backup_store.open_store({"path": "/p", "host": "h"})
    assert isinstance(store, DirStore) and (store.root, store.host) == ("/p", "h")
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import s3

    made = {}

    class FakeSource:
        def __init__(self, bucket, **kwargs):
            made.update(kwargs, bucket=bucket)
            self.root = "r/"

    monkeypatch.setattr(s3, "S3Source", FakeSource)
    store = backup_store.open_store({"s3": {"bucket": "bk", "prefix": None, "access_key": "AK"}})
    assert isinstance(store, S3Store) and store.root == "r/"
    assert made == {
        "bucket": "bk",
        "prefix": "",
        "endpoint_url": None,
        "region": None,
        "access_key": "AK",
        "secret_key": None,
    }


def test_sha256_of_streams_one_file(tmp_path):
    write(str(tmp_path / "global_step_1" / "w.pt"), b"data")
    assert (
        backup_store.sha256_of(DirStore(str(tmp_path)), "global_step_1", "w.pt") == hashlib.sha256(b"data").hexdigest()
    )


def test_progress_json_is_sorted(tmp_path):
    DirStore(str(tmp_path)).write_progress("s", {"z": 1, "a": 1})
    assert list(json.loads((tmp_path / "rlark-backup" / "s.json").read_text())) == ["a", "z"]


def test_an_s3_upload_turns_multipart_at_8_mib_exactly():
    mib8 = 8 * 1024 * 1024
    for size, requests, bodies in (
        (mib8 - 1, ["put"], [mib8 - 1]),
        (mib8, ["create", "part", "complete"], [None, mib8, None]),
        (mib8 + 1, ["create", "part", "part", "complete"], [None, mib8, 1, None]),
    ):
        source = Source()
        data = b"x" * size
        assert S3Store(source).put("global_step_1", "w.pt", io.BytesIO(data)) == (
            hashlib.sha256(data).hexdigest(),
            size,
        )
        assert [c[0] for c in source.calls] == requests
        assert [None if c[2] is None else len(c[2]) for c in source.calls] == bodies


def test_a_read_of_minus_one_is_one_chunk_not_the_whole_file(monkeypatch):
    monkeypatch.setattr(backup_store, "CHUNK", 4)
    reader = HashingReader(io.BytesIO(b"0123456789"))
    assert reader.read(0) == b""  # zero is a size, not "a chunk"
    assert reader.read(-1) == b"0123"
    assert reader.read(-2) == b"4567"


def test_a_source_whose_reads_end_before_its_size_is_refused(tmp_path, monkeypatch):
    write(str(tmp_path / "src"), b"x" * 3000)
    monkeypatch.setattr(backup_store, "WINDOW", 1024)
    real = os.preadv

    def preadv(fd, buffers, off):
        return 0 if off >= 1024 else real(fd, buffers, off)

    monkeypatch.setattr(backup_store.os, "preadv", preadv)
    with pytest.raises(GateError) as raised:
        copy_src(tmp_path)
    assert str(raised.value) == "%s changed while it was copied (size or mtime moved)" % (tmp_path / "src")


def test_a_file_whose_mtime_moves_back_while_copied_is_refused(tmp_path, monkeypatch):
    write(str(tmp_path / "src"), b"x" * 100, mtime=1000)
    real = backup_store._kernel_copy

    def copy(src, dst, off, n):
        os.utime(str(tmp_path / "src"), (500, 500))  # same size, an older mtime
        return real(src, dst, off, n)

    monkeypatch.setattr(backup_store, "_kernel_copy", copy)
    with pytest.raises(GateError) as raised:
        copy_src(tmp_path)
    assert str(raised.value) == "%s changed while it was copied (size or mtime moved)" % (tmp_path / "src")


class NoFileno:
    """A stream with no ``fileno`` attribute at all (not even one that raises), e.g. a download body."""

    def __init__(self, data):
        self._data = io.BytesIO(data)

    def read(self, size=-1):
        return self._data.read(size)

    def readinto(self, buf):
        return self._data.readinto(buf)


def test_a_stream_without_fileno_is_copied_through_python(tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 5)
    with open(str(tmp_path / "dst"), "wb", buffering=0) as out:
        got = backup_store.copy_hashing(NoFileno(data), out)
    assert got == (hashlib.sha256(data).hexdigest(), len(data))
    assert (tmp_path / "dst").read_bytes() == data


def test_every_byte_is_on_disk_before_the_fsync_of_a_put(tmp_path, monkeypatch):
    """The part file is written unbuffered: its fsync makes the whole file durable (no tail left in a buffer)."""
    monkeypatch.setattr(backup_store, "CHUNK", 65536)
    data = os.urandom(3 * 65536 + 5)  # whole windows, then a tail smaller than any write buffer
    sizes = []
    real = os.fsync

    def fsync(fd):
        sizes.append(os.fstat(fd).st_size)
        return real(fd)

    monkeypatch.setattr(backup_store.os, "fsync", fsync)
    store = DirStore(str(tmp_path / "backup"))
    assert store.put("global_step_1", "a/b.bin", NoFileno(data)) == (hashlib.sha256(data).hexdigest(), len(data))
    assert sizes == [len(data)]
    assert (tmp_path / "backup" / "global_step_1" / "a" / "b.bin").read_bytes() == data


def test_a_progress_path_that_cannot_be_read_is_no_progress(tmp_path):
    store = DirStore(str(tmp_path))
    os.makedirs(str(tmp_path / backup_store.PROGRESS_DIR / "global_step_1.json"))  # a directory: IsADirectoryError
    assert store.read_progress("global_step_1") is None
