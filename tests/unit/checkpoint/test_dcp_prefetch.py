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


@pytest.fixture
def started(monkeypatch):
    """Every Prefetch the gate starts, so a test can see that the fork path ran and was cleaned up."""
    seen = []
    real = P.Prefetch.start.__func__

    def start(cls, path):
        pending = real(cls, path)
        seen.append((path, pending))
        return pending

    monkeypatch.setattr(P.Prefetch, "start", classmethod(start))
    return seen


def test_the_child_answers_what_an_in_process_read_answers(tmp_path):
    items = [("__0_0.distcp", 0, 100), ("__0_0.distcp", 100, 28), ("__1_0.distcp", 0, 64)]
    path = tmp_path / ".metadata"
    path.write_bytes(DF.metadata_bytes(items))
    pending = P.Prefetch.start(str(path))
    assert pending is not None
    answer = pending.result()
    assert answer == (P.OK, {"__0_0.distcp": 128, "__1_0.distcp": 64}, path.stat().st_size)
    assert answer == P.parsed_or_none(str(path))
    assert pending.result() is answer and _gone(pending.pid)


def test_a_cut_off_marker_is_invalid_through_the_child_too(tmp_path):
    path = tmp_path / ".metadata"
    path.write_bytes(DF.metadata_bytes(DF.shard_items(["__0_0.distcp"]))[:200])
    answer = P.Prefetch.start(str(path)).result()
    assert answer[0] == P.INVALID and "truncated" in answer[1]


def test_the_gate_uses_the_child_and_leaves_no_process_behind(tmp_path, started):
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(TORCH_DIST, STEP, "shard-truncated"))
    r = run_gate(LocalSource(str(tmp_path)), dict(TORCH_DIST.gate_params(), quiet_seconds=120))
    cut = [p for p in r["findings"] if p["id"] == "truncated-shard"]
    assert not r["complete"] and cut and cut[0]["severity"] == "error"
    assert cut[0]["path"] == "actor/iter_%07d/__1_0.distcp" % STEP and cut[0]["missing_bytes"] == 5
    assert [path.endswith(META) for path, _p in started] == [True]
    assert started[0][1].answer[0] == P.OK  # the payload check took the child's answer
    assert all(pending.done and _gone(pending.pid) for _path, pending in started)


def test_a_reader_nobody_needs_is_stopped(tmp_path, started):
    """The step fails on its structure (common.pt missing), so the payload check never asks the child."""
    files = [f for f in F.tree(TORCH_DIST, STEP, "complete") if not f[0].endswith("/common.pt")]
    F.write_local(str(tmp_path), "global_step_%d" % STEP, files)
    r = run_gate(LocalSource(str(tmp_path)), dict(TORCH_DIST.gate_params(), quiet_seconds=120))
    assert not r["complete"] and r["missing"] == ["actor/iter_%07d/common.pt" % STEP]
    assert started and all(pending.done and _gone(pending.pid) for _path, pending in started)


def test_a_child_that_dies_changes_nothing(tmp_path, started, monkeypatch):
    """The child exits without an answer: the gate reads the marker itself and finds the same cut."""
    monkeypatch.setattr(P, "parsed_or_none", lambda path: os._exit(3))
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(TORCH_DIST, STEP, "shard-truncated"))
    r = run_gate(LocalSource(str(tmp_path)), dict(TORCH_DIST.gate_params(), quiet_seconds=120))
    cut = [p for p in r["findings"] if p["id"] == "truncated-shard"]
    assert started and started[0][1].answer is None
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
    assert P.Prefetch.start(str(path)).result() is None
    with pytest.raises(D.UnknownFormat):
        D.parse(path.read_bytes())
