# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The forked ``.metadata`` reader: same answer as reading in-process, and never a verdict of its own."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
import dcp_format as DF
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_metadata as D
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_prefetch as P
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource

STEP = 40
TORCH_DIST = next(r for r in F.ROWS if r.backend == "megatron_torch_dist")
META = "actor/iter_%07d/.metadata" % STEP


def _gone(pid):
    """True when ``pid`` is no child of this process any more (reaped), read from waitpid, not from Prefetch."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _collected(pending):
    """Wait until the child has answered (the answers are kept), without asking for any one file."""
    pending.result("", (0, 0, 0))
    return pending


@pytest.fixture
def started(monkeypatch):
    """Every reader the gate forks, so a test can see that the fork path ran and was cleaned up."""
    seen = []
    real = P.Prefetch.start.__func__

    def start(cls, *paths):
        pending = real(cls, *paths)
        seen.append((paths, pending))
        return pending

    monkeypatch.setattr(P.Prefetch, "start", classmethod(start))
    return seen


def test_the_child_answers_what_an_in_process_read_answers(tmp_path):
    items = [("__0_0.distcp", 0, 100), ("__0_0.distcp", 100, 28), ("__1_0.distcp", 0, 64)]
    path = tmp_path / ".metadata"
    path.write_bytes(DF.metadata_bytes(items))
    pending = P.Prefetch.start(str(path))
    assert pending is not None
    st = os.stat(path)
    answer = pending.result(str(path), (st.st_ino, st.st_size, st.st_mtime_ns))
    assert answer == (P.OK, {"__0_0.distcp": 128, "__1_0.distcp": 64}, st.st_size)
    assert (answer, (st.st_ino, st.st_size, st.st_mtime_ns)) == P.read_marker(str(path))
    pending.close()
    assert pending.done and _gone(pending.pid)


def test_an_answer_for_another_version_of_the_file_is_not_used(tmp_path):
    """The child read one version; the file was replaced before the walk stat-ed it: no answer, the caller reads."""
    path = tmp_path / ".metadata"
    path.write_bytes(DF.metadata_bytes(DF.shard_items(["__0_0.distcp"])))
    read = os.stat(path)
    pending = _collected(P.Prefetch.start(str(path)))
    (tmp_path / "new").write_bytes(DF.metadata_bytes(DF.shard_items(["__0_0.distcp", "__1_0.distcp"])))
    os.replace(tmp_path / "new", path)
    now = os.stat(path)
    assert pending.result(str(path), (now.st_ino, now.st_size, now.st_mtime_ns)) is None
    assert pending.result(str(path), (read.st_ino, read.st_size, read.st_mtime_ns))[0] == P.OK


def test_a_cut_off_marker_is_invalid_through_the_child_too(tmp_path):
    path = tmp_path / ".metadata"
    path.write_bytes(DF.metadata_bytes(DF.shard_items(["__0_0.distcp"]))[:200])
    st = os.stat(path)
    answer = P.Prefetch.start(str(path)).result(str(path), (st.st_ino, st.st_size, st.st_mtime_ns))
    assert answer[0] == P.INVALID and "truncated" in answer[1]


def test_the_gate_reads_the_markers_ahead_once_and_leaves_no_process_behind(tmp_path, started):
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(TORCH_DIST, STEP, "shard-truncated"))
    r = run_gate(LocalSource(str(tmp_path)), dict(TORCH_DIST.gate_params(), quiet_seconds=120))
    cut = [p for p in r["findings"] if p["id"] == "truncated-shard"]
    assert not r["complete"] and cut and cut[0]["severity"] == "error"
    assert cut[0]["path"] == "actor/iter_%07d/__1_0.distcp" % STEP and cut[0]["missing_bytes"] == 5
    # one reader, started before the walk for every place a marker can be; the walk took its answer
    step_dir = str(tmp_path / "global_step_40")
    assert [paths for paths, _p in started] == [tuple(step_dir + "/" + rel for rel in P.marker_candidates(STEP))]
    assert started[0][1].answers[str(tmp_path / "global_step_40" / META)][0][0] == P.OK
    assert all(pending.done and _gone(pending.pid) for _paths, pending in started)


def test_a_marker_no_head_start_covers_gets_its_own_reader(tmp_path, started, monkeypatch):
    monkeypatch.setattr(P, "MARKER_DIRS", ())
    monkeypatch.setattr(P, "ITER_COMPONENTS", ())
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(TORCH_DIST, STEP, "shard-truncated"))
    r = run_gate(LocalSource(str(tmp_path)), dict(TORCH_DIST.gate_params(), quiet_seconds=120))
    assert [p["missing_bytes"] for p in r["findings"] if p["id"] == "truncated-shard"] == [5]
    assert [paths for paths, _p in started] == [(), (str(tmp_path / "global_step_40" / META),)]
    assert all(pending.done and _gone(pending.pid) for _paths, pending in started)


def test_a_marker_replaced_after_the_head_start_read_it_is_judged_as_it_is_now(tmp_path):
    """The child read the marker; it was rewritten before the walk stat-ed it: the gate judges the new bytes."""
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(TORCH_DIST, STEP, "complete"))
    marker = tmp_path / "global_step_40" / META
    source = LocalSource(str(tmp_path))
    source.head_start("global_step_40")  # run_gate keeps a head start already running for the step it walks
    head = _collected(source.head)
    assert head.answers[str(marker)][0][0] == P.OK  # the child read the whole marker
    data = marker.read_bytes()
    (tmp_path / "cut").write_bytes(data[: len(data) // 2])
    os.utime(tmp_path / "cut", (os.stat(marker).st_atime, os.stat(marker).st_mtime))  # same age, other file
    os.replace(tmp_path / "cut", marker)
    r = run_gate(source, dict(TORCH_DIST.gate_params(), quiet_seconds=120))
    bad = [(p["id"], p["severity"], p["path"]) for p in r["findings"] if p["id"] == "invalid-dcp-metadata"]
    assert not r["complete"] and bad == [("invalid-dcp-metadata", "error", META)]
    assert source.head is None and _gone(head.pid)


def test_a_head_start_for_another_step_is_stopped(tmp_path):
    for step in (10, 40):
        F.write_local(str(tmp_path), "global_step_%d" % step, F.tree(TORCH_DIST, step, "complete"))
    source = LocalSource(str(tmp_path))
    source.head_start("global_step_40")
    first = source.head
    source.head_start("global_step_10")
    assert source.head.step_path == str(tmp_path / "global_step_10") and first.done and _gone(first.pid)
    second = source.head
    source.end_head_start()
    assert source.head is None and second.done and _gone(second.pid)


def test_every_marker_the_layouts_write_is_read_ahead():
    """The head start opens the places markers can be: every DCP .metadata of every row of the table."""
    for row in F.ROWS:
        markers = {f[0] for f in F.tree(row, STEP, "complete") if f[0].endswith("/.metadata")}
        assert markers <= set(P.marker_candidates(STEP)), row.id


def test_a_reader_nobody_needs_is_stopped(tmp_path, started):
    """The step fails on its structure (common.pt missing), so the payload check never asks the child."""
    files = [f for f in F.tree(TORCH_DIST, STEP, "complete") if not f[0].endswith("/common.pt")]
    F.write_local(str(tmp_path), "global_step_%d" % STEP, files)
    r = run_gate(LocalSource(str(tmp_path)), dict(TORCH_DIST.gate_params(), quiet_seconds=120))
    assert not r["complete"] and r["missing"] == ["actor/iter_%07d/common.pt" % STEP]
    assert started and all(pending.done and _gone(pending.pid) for _paths, pending in started)


def test_a_child_that_dies_changes_nothing(tmp_path, started, monkeypatch):
    """The child exits without an answer: the gate reads the marker itself and finds the same cut."""
    monkeypatch.setattr(P, "read_marker", lambda path: os._exit(3))
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(TORCH_DIST, STEP, "shard-truncated"))
    r = run_gate(LocalSource(str(tmp_path)), dict(TORCH_DIST.gate_params(), quiet_seconds=120))
    cut = [p for p in r["findings"] if p["id"] == "truncated-shard"]
    assert started and started[0][1].done and started[0][1].answers == {}
    assert cut and cut[0]["severity"] == "error" and cut[0]["missing_bytes"] == 5


def test_no_fork_while_other_threads_run(tmp_path):
    path = tmp_path / ".metadata"
    path.write_bytes(DF.metadata_bytes(DF.shard_items(["__0_0.distcp"])))
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        assert P.Prefetch.start(str(path)) is None
    finally:
        release.set()
        worker.join()


def test_the_full_report_reads_in_process(tmp_path, started):
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(TORCH_DIST, STEP, "complete"))
    r = run_gate(LocalSource(str(tmp_path)), dict(TORCH_DIST.gate_params(), quiet_seconds=120, full_report=True))
    assert r["complete"] and started == []


def test_unknown_formats_are_left_to_the_caller(tmp_path):
    path = tmp_path / ".metadata"
    path.write_bytes(b"RLARKSIM-DCP\x00__0_0.distcp")
    st = os.stat(path)
    assert P.Prefetch.start(str(path)).result(str(path), (st.st_ino, st.st_size, st.st_mtime_ns)) is None
    with pytest.raises(D.UnknownFormat):
        D.parse(path.read_bytes())
