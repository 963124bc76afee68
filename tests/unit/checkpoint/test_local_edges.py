# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint/local.py: the local source and its one-pass walk of a step, read directly (issue 26)."""

import errno
import os
import threading

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import local
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource, walk_step


def write(path, data=b"", mtime=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


@pytest.mark.parametrize(
    "code, text",
    [
        (errno.EACCES, "permission denied reading /x"),
        (errno.EPERM, "permission denied reading /x"),
        (errno.ENOENT, "/x does not exist"),
        (errno.ENOTDIR, "/x is not a directory"),
        (errno.EIO, "cannot read /x: I/O failure"),
        (errno.ELOOP, "cannot read /x: I/O failure"),  # numbered above ENOTDIR (20), as EIO (5) is below
    ],
)
def test_each_oserror_is_named(code, text):
    assert local._describe_oserror("/x", OSError(code, "I/O failure")) == text


def test_an_oserror_without_its_text_is_named_by_itself():
    exc = OSError(errno.EIO, "")
    assert local._describe_oserror("/x", exc) == "cannot read /x: %s" % exc
    assert local._describe_oserror("/x", OSError("no errno")) == "cannot read /x: no errno"  # errno None


def test_the_path_must_be_a_readable_directory(tmp_path, monkeypatch):
    with pytest.raises(GateError) as raised:
        LocalSource(str(tmp_path / "missing"))
    assert str(raised.value) == "checkpoint path: %s does not exist" % (tmp_path / "missing")
    write(str(tmp_path / "file"))
    with pytest.raises(GateError) as raised:
        LocalSource(str(tmp_path / "file"))
    assert str(raised.value) == (
        "checkpoint path %s is a file, not a directory: pass the checkpoints root or a global_step_N directory"
        % (tmp_path / "file")
    )
    asked = []

    def access(path, mode):
        asked.append((path, mode))
        return mode != os.R_OK | os.X_OK

    monkeypatch.setattr(local.os, "access", access)
    with pytest.raises(GateError) as raised:
        LocalSource(str(tmp_path))
    assert str(raised.value) == "checkpoint path: permission denied reading %s" % tmp_path
    assert asked == [(str(tmp_path), os.R_OK | os.X_OK)]


def test_a_root_or_one_step_resolved_to_an_absolute_path(tmp_path, monkeypatch):
    os.makedirs(str(tmp_path / "ckpts" / "global_step_7"))
    monkeypatch.chdir(str(tmp_path))
    root = LocalSource("ckpts/")
    assert (root.path, root.root, root.single_step, root.others, root.head) == (
        str(tmp_path / "ckpts"),
        str(tmp_path / "ckpts"),
        None,
        [],
        None,
    )
    assert root.describe() == str(tmp_path / "ckpts") and root.kind == "local"
    assert root.location("global_step_7") == str(tmp_path / "ckpts" / "global_step_7")
    step = LocalSource("ckpts/global_step_7")
    assert (step.path, step.root, step.single_step) == (
        str(tmp_path / "ckpts" / "global_step_7"),
        str(tmp_path / "ckpts"),
        "global_step_7",
    )
    assert step.step_names() == ["global_step_7"]
    monkeypatch.setenv("HOME", str(tmp_path))
    assert LocalSource("~/ckpts").path == str(tmp_path / "ckpts")


def test_step_names_are_the_step_directories_and_others_the_rest(tmp_path):
    for name in ("global_step_1", "global_step_20", "misc"):
        os.makedirs(str(tmp_path / name))
    write(str(tmp_path / "global_step_3"))  # a file with a step's name is no step
    write(str(tmp_path / "latest_checkpointed_iteration.txt"))
    source = LocalSource(str(tmp_path))
    source.others = ["stale"]
    assert sorted(source.step_names()) == ["global_step_1", "global_step_20"]
    assert sorted(source.others) == ["global_step_3", "latest_checkpointed_iteration.txt", "misc"]
    assert sorted(source.step_names()) == ["global_step_1", "global_step_20"]
    assert len(source.others) == 3  # listed afresh, not appended twice
    assert sorted(f.name for f in source.scan()) == ["global_step_1", "global_step_20"]


def test_a_root_that_cannot_be_listed_is_a_gate_error(tmp_path, monkeypatch):
    source = LocalSource(str(tmp_path))

    def scandir(path):
        raise OSError(errno.EACCES, "denied")

    monkeypatch.setattr(local.os, "scandir", scandir)
    with pytest.raises(GateError) as raised:
        source.step_names()
    assert str(raised.value) == "checkpoint path: permission denied reading %s" % tmp_path


class FakePrefetch:
    started = []

    def __init__(self, step_path, paths=()):
        self.step_path = step_path
        self.paths = frozenset(paths)
        self.closed = 0

    @classmethod
    def start_step(cls, path, step):
        cls.started.append((path, step))
        return cls(path)

    @classmethod
    def start(cls, *paths):
        cls.started.append(paths)
        return cls(None, paths)

    def close(self):
        self.closed += 1


@pytest.fixture
def fake_prefetch(monkeypatch):
    FakePrefetch.started = []
    monkeypatch.setattr(local, "Prefetch", FakePrefetch)
    return FakePrefetch


def test_one_head_start_per_step_and_each_closed_once(tmp_path, fake_prefetch):
    source = LocalSource(str(tmp_path))
    source.end_head_start()  # none yet: nothing to close
    source.head_start("global_step_300")
    first = source.head
    assert fake_prefetch.started == [(str(tmp_path / "global_step_300"), 300)]
    source.head_start("global_step_300")  # the same step: kept, not started again
    assert source.head is first and first.closed == 0 and len(fake_prefetch.started) == 1
    source.head_start("global_step_200")
    assert first.closed == 1 and source.head is not first
    assert fake_prefetch.started[1] == (str(tmp_path / "global_step_200"), 200)
    second = source.head
    source.head_start("global_step_300")  # a step sorting after the running one: that one closed, a new one
    assert second.closed == 1 and fake_prefetch.started[2] == (str(tmp_path / "global_step_300"), 300)
    third = source.head
    source.end_head_start()
    assert (third.closed, source.head) == (1, None)
    source.end_head_start()
    assert third.closed == 1


def test_a_walk_takes_the_head_start_of_its_own_step_only(tmp_path, fake_prefetch, monkeypatch):
    seen = []
    monkeypatch.setattr(local, "walk_step", lambda *args, **kw: seen.append(args + (kw,)))
    source = LocalSource(str(tmp_path))
    source.walk("global_step_2")
    source.head = FakePrefetch(str(tmp_path / "global_step_2"))
    for name in ("global_step_2", "global_step_1", "global_step_3"):  # its own step, one sorting before, one after
        source.walk(name)
    assert seen == [
        (str(tmp_path / "global_step_2"), "global_step_2", {"prefetch": True, "head": None}),
        (str(tmp_path / "global_step_2"), "global_step_2", {"prefetch": True, "head": source.head}),
        (str(tmp_path / "global_step_1"), "global_step_1", {"prefetch": True, "head": None}),
        (str(tmp_path / "global_step_3"), "global_step_3", {"prefetch": True, "head": None}),
    ]


def test_a_step_path_that_is_no_directory_is_named_without_opening_it(tmp_path):
    """O_DIRECTORY: a FIFO where a step directory was is refused at once, never opened for reading (that blocks)."""
    fifo = str(tmp_path / "global_step_1")
    os.mkfifo(fifo)
    got = []
    walker = threading.Thread(target=lambda: got.append(walk_step(fifo, "global_step_1")), daemon=True)
    walker.start()
    walker.join(5)
    blocked = walker.is_alive()
    if blocked:  # a writer lets the blocked open return, so the thread ends with the test
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        walker.join()
    assert not blocked
    assert (got[0].errors, got[0].files) == (["%s is not a directory" % fifo], 0)


def test_list_dir_names_files_and_real_directories(tmp_path, monkeypatch):
    step = tmp_path / "global_step_1"
    write(str(step / "actor" / "dcp_checkpoint" / "__0_0.distcp"))
    write(str(step / "actor" / "extra.pt"))
    os.symlink(str(step / "actor" / "dcp_checkpoint"), str(step / "actor" / "link"))
    write(str(step / "rng.pt"))
    source = LocalSource(str(tmp_path))
    files, dirs = source.list_dir("global_step_1", "actor")
    assert (sorted(files), dirs) == (["extra.pt", "link"], ["dcp_checkpoint"])  # a link to a directory is no dir
    assert source.list_dir("global_step_1", "") == (["rng.pt"], ["actor"])
    assert source.list_dir("global_step_1", "absent") == ([], [])
    assert source.list_dir("global_step_9", "") == ([], [])
    real_is_dir = os.DirEntry.is_dir

    class Entry:
        def __init__(self, entry):
            self.name = entry.name
            self.entry = entry

        def is_dir(self, follow_symlinks=True):
            if self.name == "extra.pt":
                raise OSError(errno.EIO, "gone")
            return real_is_dir(self.entry, follow_symlinks=follow_symlinks)

    real_scandir = os.scandir

    class Listing:
        def __init__(self, path):
            self.it = real_scandir(path)

        def __enter__(self):
            return [Entry(e) for e in self.it.__enter__()]

        def __exit__(self, *exc):
            return self.it.__exit__(*exc)

    monkeypatch.setattr(local.os, "scandir", Listing)
    files, dirs = source.list_dir("global_step_1", "actor")
    assert (sorted(files), dirs) == (["link"], ["dcp_checkpoint"])  # the unreadable entry is skipped, not the rest


def test_list_files_is_every_regular_file_with_its_size(tmp_path):
    step = tmp_path / "global_step_1"
    write(str(step / "a" / "b" / "c.bin"), b"12345")
    write(str(step / "a" / "d.bin"), b"1")
    write(str(step / "top.bin"), b"")
    os.symlink(str(step / "top.bin"), str(step / "a" / "link.bin"))
    os.symlink(str(step / "a" / "b"), str(step / "linkdir"))
    source = LocalSource(str(step))
    assert sorted(source.list_files("global_step_1")) == [("a/b/c.bin", 5), ("a/d.bin", 1), ("top.bin", 0)]


def test_files_are_read_whole_up_to_a_limit_or_by_their_tail(tmp_path, monkeypatch):
    write(str(tmp_path / "global_step_1" / "sub" / "f.bin"), b"0123456789")
    source = LocalSource(str(tmp_path))
    with source.open_file("global_step_1", "sub/f.bin") as handle:
        assert handle.read() == b"0123456789"
    assert source.read_all("global_step_1", "sub/f.bin", 4) == b"0123"
    assert source.read_tail("global_step_1", "sub/f.bin", 3) == (b"789", 10)
    assert source.read_tail("global_step_1", "sub/f.bin", 10) == (b"0123456789", 10)
    assert source.read_tail("global_step_1", "sub/f.bin", 11) == (b"0123456789", 10)
    monkeypatch.setattr(local.time, "time", lambda: 1234.5)
    assert source.now() == 1234.5


def test_an_iter_directory_is_decided_by_one_marker_or_its_first_shard_or_rank(tmp_path):
    it = tmp_path / "global_step_1" / "actor" / "iter_0000001"
    source = LocalSource(str(tmp_path))
    assert source.iter_dir_names("global_step_1", "actor/iter_0000001") == ([], [])  # absent
    os.makedirs(str(it))
    write(str(it / "other.bin"))
    assert source.iter_dir_names("global_step_1", "actor/iter_0000001") == ([], [])
    write(str(it / "__0_0.distcp"))
    assert source.iter_dir_names("global_step_1", "actor/iter_0000001") == (["__0_0.distcp"], [])
    os.remove(str(it / "__0_0.distcp"))
    os.makedirs(str(it / "mp_rank_00"))
    assert source.iter_dir_names("global_step_1", "actor/iter_0000001") == ([], ["mp_rank_00"])
    os.symlink("nowhere", str(it / "common.pt"))  # a marker counts even as a dangling link
    write(str(it / "metadata.json"))
    assert source.iter_dir_names("global_step_1", "actor/iter_0000001") == (["common.pt"], [])
    write(str(it / ".metadata"))
    assert source.iter_dir_names("global_step_1", "actor/iter_0000001") == ([".metadata"], [])


def listing_of(names, entry):
    """A stand-in for ``os.scandir`` that lists ``names`` in this order."""

    class Listing:
        def __init__(self, path):
            self.path = path

        def __enter__(self):
            return [entry(n) for n in names]

        def __exit__(self, *exc):
            return False

    return Listing


def test_an_iter_directory_listing_stops_at_its_first_shard_or_rank(tmp_path, monkeypatch):
    it = tmp_path / "global_step_1" / "it"
    os.makedirs(str(it))
    source = LocalSource(str(tmp_path))

    class Entry:
        def __init__(self, name):
            self.name = name

    for names, expected in (
        (["x", "b.distcp", "mp_rank_01", "c.distcp"], (["b.distcp"], [])),
        (["mp_rank_01", "mp_rank_00", "a.distcp"], ([], ["mp_rank_01"])),
    ):
        monkeypatch.setattr(local.os, "scandir", listing_of(names, Entry))
        assert source.iter_dir_names("global_step_1", "it") == expected


def test_a_probe_is_the_shallow_listing(tmp_path):
    write(str(tmp_path / "global_step_1" / "actor" / "dcp_checkpoint" / "__0_0.distcp"))
    facts = LocalSource(str(tmp_path)).probe("global_step_1")
    assert facts.name == "global_step_1" and facts.dirs == {"actor", "actor/dcp_checkpoint"}


def test_a_walk_counts_every_file_and_keeps_the_newest_mtime(tmp_path):
    step = tmp_path / "global_step_5"
    write(str(step / "rng.pt"), b"123", mtime=100)
    write(str(step / "actor" / "dcp_checkpoint" / "__0_0.distcp"), b"12345", mtime=300)
    write(str(step / "actor" / "dcp_checkpoint" / "__1_0.distcp"), b"1234567", mtime=200)
    write(str(step / "actor" / "dcp_checkpoint" / ".metadata.tmp"), b"", mtime=50)
    write(str(step / "actor" / "weights.bin"), b"1", mtime=250)
    os.makedirs(str(step / "actor" / "empty"))
    facts = walk_step(str(step), "global_step_5")
    assert (facts.name, facts.files, facts.bytes, facts.newest, facts.errors) == ("global_step_5", 5, 16, 300.0, [])
    assert facts.entries == {
        "rng.pt": 100.0,
        "actor/dcp_checkpoint/__0_0.distcp": 300.0,
        "actor/dcp_checkpoint/__1_0.distcp": 200.0,
        "actor/dcp_checkpoint/.metadata.tmp": 50.0,
        "actor/weights.bin": 250.0,
    }
    assert facts.sizes == {"actor/dcp_checkpoint": {"__0_0.distcp": 5, "__1_0.distcp": 7}}
    assert facts.leftovers == ["actor/dcp_checkpoint/.metadata.tmp"]
    assert facts.dirs == {"actor", "actor/dcp_checkpoint", "actor/empty"}
    assert facts.index == {
        "": {"rng.pt", "actor"},
        "actor": {"dcp_checkpoint", "empty", "weights.bin"},
        "actor/dcp_checkpoint": {"__0_0.distcp", "__1_0.distcp", ".metadata.tmp"},
        "actor/empty": set(),
    }
    assert facts.prefetched == {}


def test_the_newest_mtime_of_a_later_directory_wins_only_when_newer(tmp_path):
    step = tmp_path / "global_step_1"
    write(str(step / "a.pt"), mtime=500)
    write(str(step / "sub" / "b.pt"), mtime=400)  # walked after the top: older, the newest stays
    assert walk_step(str(step), "global_step_1").newest == 500.0
    write(str(step / "sub" / "b.pt"), mtime=600)
    assert walk_step(str(step), "global_step_1").newest == 600.0
    write(str(step / "sub" / "b.pt"), mtime=500)
    assert walk_step(str(step), "global_step_1").newest == 500.0


def test_a_link_to_a_directory_is_counted_as_a_file_never_walked(tmp_path):
    step = tmp_path / "global_step_1"
    write(str(step / "real" / "x.pt"), b"12")
    os.symlink("real", str(step / "link"))
    facts = walk_step(str(step), "global_step_1")
    assert facts.dirs == {"real"}
    assert sorted(facts.entries) == ["link", "real/x.pt"]
    assert facts.index[""] == {"real", "link"}


def test_mtimes_before_the_epoch_are_times_too(tmp_path):
    step = tmp_path / "global_step_1"
    write(str(step / "a.pt"), mtime=-0.5)
    assert walk_step(str(step), "global_step_1").newest == -0.5


@pytest.mark.parametrize("mtime", [-1.5, -86400.0])
def test_a_step_written_wholly_before_1970_reports_its_own_newest_time(tmp_path, mtime):
    step = tmp_path / "global_step_1"
    write(str(step / "a.pt"), mtime=mtime)
    write(str(step / "sub" / "b.pt"), mtime=mtime - 10)
    assert walk_step(str(step), "global_step_1").newest == mtime


def test_an_mtime_of_zero_is_a_time_and_a_step_without_files_has_none(tmp_path):
    step = tmp_path / "global_step_1"
    write(str(step / "a.pt"), mtime=0)
    facts = walk_step(str(step), "global_step_1")
    assert (facts.files, facts.newest) == (1, 0.0)
    os.makedirs(str(tmp_path / "global_step_2" / "actor"))
    facts = walk_step(str(tmp_path / "global_step_2"), "global_step_2")
    assert (facts.files, facts.bytes, facts.newest, facts.dirs) == (0, 0, None, {"actor"})
    assert facts.index == {"": {"actor"}, "actor": set()}


def test_a_replay_buffer_rank_keeps_only_its_json_and_tmp(tmp_path):
    step = tmp_path / "global_step_1"
    rank = step / "actor" / "replay_buffer" / "rank_0"
    for name in ("t.pt", "m.json", "w.tmp", "n.txt"):
        write(str(rank / name), b"12", mtime=10)
    write(str(step / "actor" / "replay_buffer" / "state.pt"), b"1", mtime=10)
    facts = walk_step(str(step), "global_step_1")
    assert (facts.files, facts.bytes) == (5, 9)
    assert sorted(facts.entries) == [
        "actor/replay_buffer/rank_0/m.json",
        "actor/replay_buffer/rank_0/w.tmp",
        "actor/replay_buffer/state.pt",
    ]
    assert facts.entries["actor/replay_buffer/rank_0/m.json"] == 10.0
    assert facts.leftovers == ["actor/replay_buffer/rank_0/w.tmp"]
    assert facts.index["actor/replay_buffer/rank_0"] == {"m.json", "w.tmp"}
    assert facts.sizes == {}


def test_only_names_ending_in_tmp_are_leftovers(tmp_path):
    step = tmp_path / "global_step_1"
    write(str(step / "a.tmp.pt"))
    write(str(step / "b.tmpx"))
    write(str(step / "tmp"))
    facts = walk_step(str(step), "global_step_1")
    assert facts.leftovers == []
    write(str(step / "z.tmp"))
    write(str(step / "sub" / "y.tmp"))
    facts = walk_step(str(step), "global_step_1")
    assert (facts.leftovers, facts.files) == (["z.tmp", "sub/y.tmp"], 5)


def test_megatron_rank_directories_index_only_their_subdirectories(tmp_path):
    step = tmp_path / "global_step_1"
    rank = step / "actor" / "iter_0000001" / "mp_rank_00"
    write(str(rank / "model_optim_rng.pt"))
    os.makedirs(str(rank / "sub"))
    write(str(step / "mp_rank_00" / "top.pt"))  # the step's own child: "/" + rel makes it a rank too
    write(str(step / "actor" / "xmp_rank_00" / "w.pt"))  # not a rank directory
    facts = walk_step(str(step), "global_step_1")
    assert facts.index["actor/iter_0000001/mp_rank_00"] == {"sub"}
    assert facts.index["mp_rank_00"] == set()
    assert facts.index["actor/xmp_rank_00"] == {"w.pt"}
    assert "actor/iter_0000001/mp_rank_00/model_optim_rng.pt" in facts.entries


def test_what_the_walk_cannot_read_is_named_and_the_rest_counted(tmp_path, monkeypatch):
    step = tmp_path / "global_step_1"
    write(str(step / "a.pt"), b"12")
    write(str(step / "locked" / "b.pt"), b"1")
    write(str(step / "broken" / "c.pt"), b"123")
    os.symlink("nowhere", str(step / "dangling.pt"))  # its stat fails: the directory is split one by one
    real_open = os.open

    def fake_open(path, flags, *args):
        if path.endswith("/locked"):
            raise OSError(errno.EACCES, "denied")
        return real_open(path, flags, *args)

    real_scandir = os.scandir

    def fake_scandir(fd):
        if os.readlink("/proc/self/fd/%d" % fd).endswith("/broken"):
            raise OSError(errno.EIO, "bad sector")
        return real_scandir(fd)

    monkeypatch.setattr(local.os, "open", fake_open)
    monkeypatch.setattr(local.os, "scandir", fake_scandir)
    facts = walk_step(str(step), "global_step_1")
    assert sorted(facts.errors) == sorted(
        [
            "cannot read %s/broken: bad sector" % step,
            "%s/dangling.pt does not exist" % step,
            "permission denied reading %s/locked" % step,
        ]
    )
    assert (facts.files, facts.bytes, sorted(facts.entries)) == (1, 2, ["a.pt"])
    assert facts.index[""] == {"a.pt", "locked", "broken"}
    assert facts.dirs == set()  # the step's directories are those it could list


def test_the_one_by_one_split_keeps_directories_and_the_readable_files(tmp_path):
    step = tmp_path / "global_step_1"
    write(str(step / "a.pt"), b"12")
    write(str(step / "z.pt"), b"1234")
    os.makedirs(str(step / "d"))
    os.symlink("nowhere", str(step / "m.pt"))
    os.symlink("d", str(step / "ld"))  # a link to a directory is a file here too
    errors = []
    listing = sorted(os.scandir(str(step)), key=lambda e: e.name)
    dirs, names, stats = local._split_one_by_one(listing, "P", errors)
    assert (dirs, names) == (["d"], ["a.pt", "ld", "z.pt"])
    assert [st.st_size for st in stats[::2]] == [2, 4]
    del listing[2]  # the link: what follows is the split of the rest
    assert errors == ["P/m.pt does not exist"]
    with pytest.raises(OSError):
        local._split(listing)
    del listing[2]
    assert [x if i < 2 else [st.st_size for st in x] for i, x in enumerate(local._split(listing))] == [
        ["d"],
        ["a.pt", "z.pt"],
        [2, 4],
    ]


def test_a_dcp_marker_is_claimed_from_the_head_start_or_a_new_reader(tmp_path, fake_prefetch):
    step = tmp_path / "global_step_1"
    write(str(step / ".metadata"), b"m")
    write(str(step / "actor" / "dcp_checkpoint" / ".metadata"), b"mm")
    facts = walk_step(str(step), "global_step_1")
    assert facts.prefetched == {} and fake_prefetch.started == []  # without prefetch nothing is started
    facts = walk_step(str(step), "global_step_1", prefetch=True)
    assert sorted(facts.prefetched) == [".metadata", "actor/dcp_checkpoint/.metadata"]
    claim = facts.prefetched["actor/dcp_checkpoint/.metadata"]
    assert claim.path == str(step) + "/actor/dcp_checkpoint/.metadata"
    assert claim.reader.paths == {claim.path}
    assert claim.seen == local.identity(os.stat(claim.path))
    assert sorted(fake_prefetch.started) == sorted([(str(step) + "/.metadata",), (claim.path,)])
    fake_prefetch.started = []
    head = FakePrefetch(str(step), [str(step) + "/actor/dcp_checkpoint/.metadata"])
    facts = walk_step(str(step), "global_step_1", prefetch=True, head=head)
    assert facts.prefetched["actor/dcp_checkpoint/.metadata"].reader is head
    assert facts.prefetched[".metadata"].reader is not head
    assert fake_prefetch.started == [(str(step) + "/.metadata",)]


def test_no_claim_when_no_reader_starts_or_the_marker_vanished(tmp_path, monkeypatch):
    step = tmp_path / "global_step_1"
    write(str(step / ".metadata"), b"m")
    monkeypatch.setattr(local.Prefetch, "start", classmethod(lambda cls, *paths: None))
    assert walk_step(str(step), "global_step_1", prefetch=True).prefetched == {}
    os.remove(str(step / ".metadata"))
    os.symlink("nowhere", str(step / ".metadata"))
    monkeypatch.setattr(local.Prefetch, "start", classmethod(lambda cls, *paths: pytest.fail("started")))
    facts = walk_step(str(step), "global_step_1", prefetch=True)
    assert facts.prefetched == {}
    assert facts.errors == ["%s/.metadata does not exist" % step]


def test_the_claim_is_of_the_marker_whatever_sorts_before_or_after_it_in_the_listing(tmp_path, fake_prefetch):
    step = tmp_path / "global_step_1"
    write(str(step / "z.pt"), b"zz")
    write(str(step / ".a"), b"aaa")
    write(str(step / ".metadata"), b"m")
    by_name = {e.name: e for e in os.scandir(str(step))}
    listing = [by_name["z.pt"], by_name[".a"], by_name[".metadata"]]  # one sorting after the marker, one before
    facts = walk_step(str(tmp_path / "empty"), "global_step_1")
    local._claim_marker(facts, str(step), "", listing, None)
    claim = facts.prefetched[".metadata"]
    assert claim.seen == local.identity(os.stat(str(step / ".metadata")))
    assert claim.path == str(step) + "/.metadata"


def test_a_directory_that_cannot_be_listed_does_not_end_the_walk(tmp_path, monkeypatch):
    step = tmp_path / "global_step_1"
    write(str(step / "top.pt"), b"1")
    write(str(step / "d1" / "a.pt"), b"22")
    write(str(step / "d2" / "b.pt"), b"22")
    real_scandir = os.scandir
    calls = []

    def fake_scandir(fd):
        calls.append(fd)
        if len(calls) == 2:  # the first subdirectory walked, whichever it is
            raise OSError(errno.EIO, "bad sector")
        return real_scandir(fd)

    monkeypatch.setattr(local.os, "scandir", fake_scandir)
    facts = walk_step(str(step), "global_step_1")
    assert len(calls) == 3 and len(facts.errors) == 1
    assert (facts.files, facts.bytes) == (2, 3)
