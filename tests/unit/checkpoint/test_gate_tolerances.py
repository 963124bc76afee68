# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate's tolerances pinned from both sides (issue 26: widening one turned a leftover marker complete),
and the structure rules' other survivors: what a stopped judgement still says."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource

ROW = F.ROWS[0]  # FSDP x embodied, W=2, full weights: one commit marker, full_weights.pt
STEP = 10
DATA_TIME = 1700000000  # whole seconds: every lag below is exact in an mtime


class FixedClock(LocalSource):
    def __init__(self, root, now):
        super().__init__(root)
        self._fixed = now

    def now(self):
        return self._fixed


def step_with_marker_lag(root, lag):
    """A complete step whose data all has mtime DATA_TIME and whose commit marker is ``lag`` s older."""
    F.write_local(str(root), "global_step_%d" % STEP, F.tree(ROW, STEP, "complete"))
    markers = set(ROW.markers(STEP))
    for rel, _content in ROW.files(STEP):
        mtime = DATA_TIME - lag if rel in markers else DATA_TIME
        os.utime(os.path.join(str(root), "global_step_%d" % STEP, rel), (mtime, mtime))


def verdict(root, now=DATA_TIME + 3600, **opts):
    params = dict(ROW.gate_params(), quiet_seconds=120)
    params.update(opts)
    r = run_gate(FixedClock(str(root), now), params)
    return r["complete"], sorted({f["id"] for f in r["findings"] if f["severity"] == "error"})


@pytest.mark.parametrize(
    "lag,complete",
    [
        (0.0, True),
        (1.0, True),
        (1.5, True),
        (2.0, True),  # exactly the tolerance: clock granularity, still this save's marker
        (2.5, False),  # past it: the marker is left over from an earlier save
        (3.0, False),
        (600.0, False),
    ],
)
def test_a_marker_older_than_its_data_is_stale_only_past_the_tolerance(tmp_path, lag, complete):
    step_with_marker_lag(tmp_path, lag)
    assert verdict(tmp_path) == (complete, [] if complete else ["stale-marker"])


@pytest.mark.parametrize(
    "age,too_recent",
    [
        (119, True),
        (119.5, True),
        (120, False),  # exactly quiet_seconds without a write: quiet
        (121, False),
    ],
)
def test_quiet_seconds_pinned_from_both_sides(tmp_path, age, too_recent):
    step_with_marker_lag(tmp_path, 0.0)
    complete, ids = verdict(tmp_path, now=DATA_TIME + age)
    assert (complete, ids) == ((False, ["write-too-recent"]) if too_recent else (True, []))


def test_quiet_seconds_zero_turns_the_quiet_check_off(tmp_path):
    step_with_marker_lag(tmp_path, 0.0)
    assert verdict(tmp_path, now=DATA_TIME, quiet_seconds=0) == (True, [])
    # Off means off, even for files stamped in the future (a storage clock ahead of ours).
    assert verdict(tmp_path, now=DATA_TIME - 10, quiet_seconds=0) == (True, [])
    assert verdict(tmp_path, now=DATA_TIME, quiet_seconds=1) == (False, ["write-too-recent"])


def test_the_quiet_message_says_how_long_ago(tmp_path):
    step_with_marker_lag(tmp_path, 0.0)
    r = run_gate(FixedClock(str(tmp_path), DATA_TIME + 119), dict(ROW.gate_params(), quiet_seconds=120))
    [found] = [f for f in r["findings"] if f["id"] == "write-too-recent"]
    assert "the newest file was written 119 s ago, less than quiet_seconds=120" in found["message"]


def test_a_step_without_a_layout_is_still_checked_for_quiet(tmp_path):
    # No layout stops judging, but the quiet-period rule still runs.
    F.write_local(str(tmp_path), "global_step_%d" % STEP, [("notes.txt", b"x", 0.0)])
    r = run_gate(FixedClock(str(tmp_path), DATA_TIME + 3600), {"quiet_seconds": 120})
    assert sorted(f["id"] for f in r["findings"]) == ["no-layout", "write-too-recent"]


def test_a_megatron_step_without_rank_directories_names_its_rule(tmp_path):
    row = next(r for r in F.ROWS if r.backend == "megatron")
    files = [f for f in F.tree(row, STEP, "complete") if "/mp_rank_" not in f[0]]
    F.write_local(str(tmp_path), "global_step_%d" % STEP, files)
    params = dict(row.gate_params(), quiet_seconds=120, tensor_parallel=None, pipeline_parallel=None)
    r = run_gate(LocalSource(str(tmp_path)), params)
    assert r["complete"] is False and r["rule"].startswith("Megatron x reasoning/agent: per actor/")
    assert [f["id"] for f in r["findings"]] == ["missing-entries"]


def test_the_marker_is_compared_with_its_newest_predecessor_not_its_first(tmp_path):
    row = F.ROWS[2]  # FSDP x embodied without full weights: .metadata commits the two shards
    step_dir = os.path.join(str(tmp_path), "global_step_%d" % STEP)
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(row, STEP, "complete"))
    times = {
        "actor/dcp_checkpoint/__0_0.distcp": DATA_TIME - 100,
        "actor/dcp_checkpoint/__1_0.distcp": DATA_TIME,
        "actor/dcp_checkpoint/.metadata": DATA_TIME - 50,
    }
    assert sorted(rel for rel, _c in row.files(STEP)) == sorted(times)
    for rel, mtime in times.items():
        os.utime(os.path.join(step_dir, rel), (mtime, mtime))
    r = run_gate(FixedClock(str(tmp_path), DATA_TIME + 3600), dict(row.gate_params(), quiet_seconds=120))
    assert (r["complete"], [f["id"] for f in r["findings"]]) == (False, ["stale-marker"])
    assert "older than the data it commits (by 50 s)" in r["findings"][0]["message"]


def test_a_missing_marker_does_not_hide_a_stale_one_after_it(tmp_path):
    row = F.ROWS[5]  # FSDP x SAC: one trajectory_index.json marker per rank
    first, second = row.markers(STEP)
    step_dir = os.path.join(str(tmp_path), "global_step_%d" % STEP)
    F.write_local(str(tmp_path), "global_step_%d" % STEP, [f for f in F.tree(row, STEP, "complete") if f[0] != first])
    for rel, _content in row.files(STEP):
        if rel != first:
            mtime = DATA_TIME - 600 if rel == second else DATA_TIME
            os.utime(os.path.join(step_dir, rel), (mtime, mtime))
    r = run_gate(FixedClock(str(tmp_path), DATA_TIME + 3600), dict(row.gate_params(), quiet_seconds=120))
    stale = [f["path"] for f in r["findings"] if f["id"] == "stale-marker"]
    assert r["complete"] is False and stale == [second]


def test_an_ambiguous_megatron_grid_names_no_rule(tmp_path):
    row = F.ROWS[11]  # Megatron x reasoning, TP=2 x PP=2: without the sizes the rank directories are ambiguous
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(row, STEP, "complete"))
    auto = dict(tensor_parallel=None, pipeline_parallel=None, expert_parallel=None)
    r = run_gate(LocalSource(str(tmp_path)), dict(row.gate_params(), quiet_seconds=120, **auto))
    assert (r["complete"], r["rule"], [f["id"] for f in r["findings"]]) == (False, "", ["parallel-layout-ambiguous"])


def test_a_torch_dist_iteration_without_any_shard_misses_them(tmp_path):
    row = F.ROWS[15]  # Megatron torch_dist: the iteration holds some *.distcp, their number is not fixed
    files = [f for f in F.tree(row, STEP, "complete") if not f[0].endswith(".distcp")]
    F.write_local(str(tmp_path), "global_step_%d" % STEP, files)
    r = run_gate(LocalSource(str(tmp_path)), dict(row.gate_params(), quiet_seconds=120))
    assert r["complete"] is False and [f["id"] for f in r["findings"]] == ["missing-entries"]
    assert r["findings"][0]["message"].endswith("missing: actor/iter_%07d/*.distcp" % STEP)


def test_a_marker_stamped_at_the_epoch_is_stale_by_its_whole_age(tmp_path):
    # A copy that lost its mtimes: the lag is data minus marker, whatever their size.
    step_with_marker_lag(tmp_path, DATA_TIME)
    r = run_gate(FixedClock(str(tmp_path), DATA_TIME + 3600), dict(ROW.gate_params(), quiet_seconds=120))
    assert [f["id"] for f in r["findings"]] == ["stale-marker"]
    assert "(by %d s)" % DATA_TIME in r["findings"][0]["message"]


def test_a_write_stamped_in_the_future_is_too_recent_by_zero_seconds(tmp_path):
    # A storage clock ahead of ours: never a negative or wrapped age.
    step_with_marker_lag(tmp_path, 0.0)
    r = run_gate(FixedClock(str(tmp_path), DATA_TIME - 10), dict(ROW.gate_params(), quiet_seconds=120))
    [found] = r["findings"]
    assert found["id"] == "write-too-recent"
    assert "the newest file was written 0 s ago, less than quiet_seconds=120" in found["message"]


def test_messages_of_ignored_parallel_sizes_and_of_a_leftover_write(tmp_path):
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(ROW, STEP, "metadata-tmp"))
    params = dict(ROW.gate_params(), backend="auto", quiet_seconds=120, tensor_parallel=2)
    r = run_gate(LocalSource(str(tmp_path)), params)
    messages = {f["id"]: f["message"] for f in r["findings"]}
    assert messages["parallel-sizes-ignored"].startswith("tensor_parallel=2 apply to Megatron only")
    assert messages["leftover-tmp"] == (
        "actor/dcp_checkpoint/.metadata.tmp is an interrupted write (a save was cut off before its rename)"
    )
