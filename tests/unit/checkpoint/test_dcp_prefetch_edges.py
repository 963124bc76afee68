# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dcp_prefetch's edges (issue 26): when the forked reader's answer is taken, and when the caller reads itself.

Process state is read with ``os.waitpid`` (not through ``Prefetch``); the answers are compared with what
``dcp_metadata.parse`` says in-process.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import marshal
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dcp_format as DF
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_metadata as D
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_prefetch as P
from test_dcp_prefetch import _gone

ITEMS = [("__0_0.distcp", 0, 100), ("__1_0.distcp", 0, 64)]
NEEDS = {"__0_0.distcp": 100, "__1_0.distcp": 64}


def _seen(path):
    st = os.stat(path)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _marker(tmp_path, data=None):
    path = tmp_path / ".metadata"
    path.write_bytes(DF.metadata_bytes(ITEMS) if data is None else data)
    return str(path)


def test_marker_candidates_with_and_without_a_step_number():
    fixed = [d + "/.metadata" for d in P.MARKER_DIRS]
    assert P.marker_candidates(None) == fixed
    assert P.marker_candidates(1234) == fixed + ["actor/iter_0001234/.metadata", "critic/iter_0001234/.metadata"]
    assert P.marker_candidates(0)[-2:] == ["actor/iter_0000000/.metadata", "critic/iter_0000000/.metadata"]


def test_identity_is_inode_size_and_mtime_in_ns(tmp_path):
    path = _marker(tmp_path)
    assert P.identity(os.stat(path)) == _seen(path)


def test_a_marker_of_exactly_the_limit_is_answered(tmp_path, monkeypatch):
    path = _marker(tmp_path)
    size = os.path.getsize(path)
    monkeypatch.setattr(D, "METADATA_LIMIT", size)
    assert P.read_marker(path) == ((P.OK, NEEDS, size), _seen(path))


@pytest.mark.parametrize("over", [1, 2])
def test_a_marker_over_the_limit_is_left_to_the_caller(tmp_path, monkeypatch, over):
    """In-process such a file gets only the presence rules (dcp-metadata-unverified): the child must not parse it."""
    path = _marker(tmp_path)
    monkeypatch.setattr(D, "METADATA_LIMIT", os.path.getsize(path) - over)
    assert P.read_marker(path) is None


def test_an_invalid_marker_is_answered_with_its_reason(tmp_path):
    path = _marker(tmp_path, b"\x80\x04garbage")
    assert P.read_marker(path) == ((P.INVALID, "the pickle is truncated (9 bytes, no end marker)", 9), _seen(path))


def test_an_absent_marker_is_no_answer(tmp_path):
    assert P.read_marker(str(tmp_path / "absent")) is None


@pytest.mark.parametrize("inode_change", [1, -1])
def test_a_marker_written_to_while_read_is_no_answer(tmp_path, monkeypatch, inode_change):
    path = _marker(tmp_path)
    real = os.fstat
    calls = []

    def fstat(fd):
        st = real(fd)
        calls.append(st)
        if len(calls) == 2:
            return os.stat_result((st.st_mode, st.st_ino + inode_change, *st[2:]))
        return st

    monkeypatch.setattr(os, "fstat", fstat)
    assert P.read_marker(path) is None


def test_a_marker_shorter_than_its_stat_is_no_answer(tmp_path, monkeypatch):
    """A file whose bytes read are fewer than its size (a short read): the caller reads it itself."""
    path = _marker(tmp_path)
    real = os.fstat

    def fstat(fd):
        st = real(fd)
        return os.stat_result((*st[:6], st[6] + 1, *st[7:]))

    monkeypatch.setattr(os, "fstat", fstat)
    assert P.read_marker(path) is None


WELL = ((P.OK, {"a": 1}, 5), (1, 5, 7))


@pytest.mark.parametrize(
    "got,ok",
    [
        (WELL, True),
        (((P.INVALID, "why", 5), (1, 5, 7)), True),
        ([WELL[0], WELL[1]], False),
        ((WELL[0],), False),
        ((WELL[0], WELL[1], WELL[1]), False),
        (([P.OK, {"a": 1}, 5], WELL[1]), False),
        (((P.OK, {"a": 1}), WELL[1]), False),
        (((P.OK, {"a": 1}, 5, 5), WELL[1]), False),
        ((("other", {"a": 1}, 5), WELL[1]), False),
        ((WELL[0], [1, 5, 7]), False),
        ((WELL[0], (1, 5)), False),
        ((WELL[0], (1, 5, 7, 9)), False),
    ],
)
def test_only_well_formed_answers_are_kept(got, ok):
    assert P._well_formed(got) is ok


def _fed(tmp_path, payload, paths):
    """A Prefetch whose pipe holds ``payload`` (what a child would have written) and whose child is a real one."""
    read_fd, write_fd = os.pipe()
    os.write(write_fd, payload)
    os.close(write_fd)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the stand-in child only exits
        os._exit(0)
    return P.Prefetch(pid, read_fd, paths)


def test_answers_for_other_paths_or_malformed_are_dropped(tmp_path):
    answers = {"/a": WELL, "/b": ((P.OK, {}, 1), (1, 1)), "/c": WELL}
    pending = _fed(tmp_path, marshal.dumps(answers), ["/a", "/b"])
    assert pending.result("/a", [1, 5, 7]) == WELL[0]
    assert pending.answers == {"/a": WELL}
    assert pending.result("/c", (1, 5, 7)) is None
    assert pending.result("/a", (1, 5, 8)) is None
    pending.close()
    assert _gone(pending.pid)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\xff\x00garbage",
        marshal.dumps({"/a": WELL})[:-2],
        b"<\x01\x00\x00\x00[\x00\x00\x00\x00",
        marshal.dumps([WELL]),
    ],
    ids=["empty", "bad-type-code", "too-short", "unhashable", "list"],
)
def test_no_answer_when_the_child_wrote_nothing_usable(tmp_path, payload):
    pending = _fed(tmp_path, payload, ["/a"])
    assert pending.result("/a", (1, 5, 7)) is None
    assert pending.answers == {} and pending.done
    pending.close()
    assert _gone(pending.pid)


def test_a_long_answer_is_read_whole(tmp_path):
    """More than one pipe read of 1 MiB: every chunk is kept."""
    answers = {"/p%d" % i: ((P.OK, {"x" * 200 + str(i): i}, 5), (i, 5, 7)) for i in range(8000)}
    payload = marshal.dumps(answers)
    assert len(payload) > 1 << 20
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - writes the answer as the real child does
        os.close(read_fd)
        while payload:
            payload = payload[os.write(write_fd, payload) :]
        os._exit(0)
    os.close(write_fd)
    pending = P.Prefetch(pid, read_fd, list(answers))
    assert pending.result("/p7999", (7999, 5, 7)) == (P.OK, {"x" * 200 + "7999": 7999}, 5)
    assert len(pending.answers) == 8000
    pending.close()
    assert _gone(pid)


def test_a_closed_reader_answers_nothing_and_is_reaped(tmp_path):
    path = _marker(tmp_path)
    pending = P.Prefetch.start(path)
    pending.close()
    assert pending.done and pending.reaped and _gone(pending.pid)
    assert pending.result(path, _seen(path)) is None
    pending.close()  # twice is harmless


def test_a_reader_reaped_elsewhere_counts_as_reaped(tmp_path):
    pending = P.Prefetch.start(_marker(tmp_path))
    os.waitpid(pending.pid, 0)
    pending.close()
    assert pending.reaped


def test_the_head_start_reads_every_candidate_of_its_step(tmp_path):
    step = tmp_path / "global_step_5"
    (step / "actor" / "iter_0000005").mkdir(parents=True)
    (step / "actor" / "iter_0000005" / ".metadata").write_bytes(DF.metadata_bytes(ITEMS))
    pending = P.Prefetch.start_step(str(step), 5)
    assert pending.step_path == str(step)
    assert pending.paths == frozenset(str(step) + "/" + rel for rel in P.marker_candidates(5))
    marker = str(step / "actor" / "iter_0000005" / ".metadata")
    assert pending.result(marker, _seen(marker)) == (P.OK, NEEDS, os.path.getsize(marker))
    assert list(pending.answers) == [marker]
    pending.close()


def test_no_head_start_where_forking_is_not_possible(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "fork")
    assert P.Prefetch.start_step(str(tmp_path), 5) is None


def test_no_reader_without_a_pipe(tmp_path, monkeypatch):
    def pipe():
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(os, "pipe", pipe)
    assert P.Prefetch.start(_marker(tmp_path)) is None


def test_no_reader_when_fork_fails_and_the_pipe_is_closed(tmp_path, monkeypatch):
    made = []
    real_pipe = os.pipe

    def pipe():
        fds = real_pipe()
        made.extend(fds)
        return fds

    def fork():
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "pipe", pipe)
    monkeypatch.setattr(os, "fork", fork)
    assert P.Prefetch.start(_marker(tmp_path)) is None
    for fd in made:
        with pytest.raises(OSError):
            os.fstat(fd)


def test_a_claim_asks_its_reader_for_its_path_and_version(tmp_path):
    path = _marker(tmp_path)
    pending = P.Prefetch.start(path)
    claim = P.Claim(pending, path, _seen(path))
    assert claim.result() == (P.OK, NEEDS, os.path.getsize(path))
    claim.close()
    assert _gone(pending.pid)


def test_close_all_stops_every_reader(tmp_path):
    readers = {n: P.Prefetch.start(_marker(tmp_path)) for n in ("a", "b")}
    P.close_all(readers)
    assert all(r.done and _gone(r.pid) for r in readers.values())


def test_a_pipe_that_cannot_be_read_is_no_answer(tmp_path, monkeypatch):
    pending = _fed(tmp_path, marshal.dumps({"/a": WELL}), ["/a"])

    def read(fd, n):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "read", read)
    assert pending.result("/a", (1, 5, 7)) is None
    monkeypatch.undo()
    assert pending.answers == {} and pending.done
    pending.close()
    assert _gone(pending.pid)


def test_the_answer_is_taken_without_waiting_for_the_child_to_exit(tmp_path):
    """A child with a large heap exits slowly after its answer: result() must not wait for it, close() does."""
    read_fd, write_fd = os.pipe()
    hold_r, hold_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - answers, then stays until the test lets it go
        os.close(read_fd)
        os.close(hold_w)
        os.write(write_fd, marshal.dumps({"/a": WELL}))
        os.close(write_fd)
        os.read(hold_r, 1)
        os._exit(0)
    os.close(write_fd)
    os.close(hold_r)
    pending = P.Prefetch(pid, read_fd, ["/a"])
    assert pending.result("/a", (1, 5, 7)) == WELL[0]
    assert pending.reaped is False and not _gone(pid)
    os.close(hold_w)  # the child's read returns: it exits
    pending.close()
    assert pending.reaped and _gone(pid)


def test_an_unknown_format_is_no_answer_of_the_reader_either(tmp_path):
    """The caller salvages shard names from the bytes itself (dcp_check's fallback): read_marker leaves it."""
    assert P.read_marker(_marker(tmp_path, b"RLARKSIM-DCP\x00__0_0.distcp")) is None
