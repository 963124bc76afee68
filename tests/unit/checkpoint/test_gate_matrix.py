# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every row of the completeness table x every failure case, on disk and through the S3 reader."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.s3 import S3Source
from fake_s3 import SERVER_NOW, FakeS3

STEP = 40


def matrix():
    for row in F.ROWS:
        for case in F.CASES:
            if not F.applicable(row, case):
                continue
            if case == "missing":
                for rel in row.required(STEP):
                    yield pytest.param(row, case, rel, id="%s-missing-%s" % (row.id, rel))
            else:
                yield pytest.param(row, case, None, id="%s-%s" % (row.id, case))


def gate_on(source, row, **extra):
    params = dict(row.gate_params(), step=STEP, quiet_seconds=120)
    params.update(extra)
    return run_gate(source(), params)


def check_matrix_case(source, row, case, drop, checkpoint):
    """One case's verdicts from a fresh ``source()`` per gate run: full report, newest first, and "latest"."""
    result = gate_on(source, row, full_report=True)
    F.check_case(result, row, STEP, case, drop)
    F.check_same_verdict(gate_on(source, row), result, named=True)
    latest = dict(step="latest")
    F.check_same_verdict(gate_on(source, row, **latest), gate_on(source, row, full_report=True, **latest))
    assert result["checkpoint"] == checkpoint
    if case == "too-recent":
        assert {p["id"] for p in result["findings"]} == {"write-too-recent"}
    summary = {s["step"]: s for s in result["steps"]}
    assert summary[STEP - 20]["verdict"] in ("complete", "unverified")
    assert result["latest_complete_step"] == (STEP if result["complete"] else STEP - 20)


@pytest.mark.parametrize("row,case,drop", list(matrix()))
def test_matrix_on_disk(tmp_path, row, case, drop):
    # an older complete sibling: optional parts written last (data_state.json) are known from it
    F.write_local(str(tmp_path), "global_step_%d" % (STEP - 20), F.tree(row, STEP - 20, "complete"), age=86400)
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(row, STEP, case, drop))
    checkpoint = os.path.join(str(tmp_path), "global_step_%d" % STEP)
    check_matrix_case(lambda: LocalSource(str(tmp_path)), row, case, drop, checkpoint)


def s3_objects(row, case, drop, prefix):
    """The on-disk matrix's two steps as objects, each modified as long before the server's clock as
    write_local's mtimes are before now (so stale markers and too-recent writes are what they are on disk)."""
    objects, modified = {}, {}
    for step, files, age in (
        (STEP - 20, F.tree(row, STEP - 20, "complete"), 86400),
        (STEP, F.tree(row, STEP, case, drop), 0),
    ):
        for rel, data, file_age in files:
            key = "%sglobal_step_%d/%s" % (prefix, step, rel)
            objects[key] = data
            modified[key] = SERVER_NOW - datetime.timedelta(seconds=age + file_age)
    return FakeS3(objects, page=7, modified=modified)  # a step's objects span several pages


@pytest.mark.parametrize("row,case,drop", list(matrix()))
def test_matrix_through_the_s3_reader(row, case, drop):
    """The same cases read by S3Source (its listings, aggregation per step and ranged GETs) from an in-memory
    ListObjectsV2. tests/integration/test_ckpt_gate_s3.py runs the representative rows on versitygw."""
    client = s3_objects(row, case, drop, "run/checkpoints/")
    checkpoint = "s3://bucket/run/checkpoints/global_step_%d/" % STEP
    check_matrix_case(lambda: S3Source("bucket", "run/checkpoints", client=client), row, case, drop, checkpoint)


@pytest.mark.parametrize("row", F.ROWS, ids=[r.id for r in F.ROWS])
def test_auto_detection_of_complete_rows(tmp_path, row):
    """runner/backend auto and no sizes: detected, complete (mp_rank_TT_NNN needs PP or EP given)."""
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(row, STEP, "complete"))
    extra = {}
    if row.megatron and (row.pp > 1 or row.ep > 1) and not (row.pp > 1 and row.ep > 1):
        extra["pipeline_parallel"] = row.pp
    result = run_gate(LocalSource(str(tmp_path)), dict(extra, quiet_seconds=120, full_weights=row.full_weights))
    assert result["complete"], result["findings"]
    family = {"agent": "reasoning", "offline": "embodied", "coding": "embodied"}.get(row.runner, row.runner)
    if row.megatron and row.runner == "sft":
        family = "sft"
    assert result["runner"] == family
    expected_backend = "fsdp" if row.backend == "fsdp2" else row.backend
    assert result["backend"] == expected_backend
    if not row.megatron:
        assert result["world_size"] == row.world


@pytest.mark.parametrize("row", [r for r in F.ROWS if not r.megatron], ids=lambda r: r.id)
def test_stale_shards_without_world_size_are_refused_as_ambiguous(tmp_path, row):
    """Extra, far older shards from a larger run and no actor_world_size: the gate never guesses from the count.

    It refuses with world-size-ambiguous naming where the old generation starts; given actor_world_size the
    same tree is complete with a stale-shards warning (test_matrix_on_disk, case stale-shards).
    """
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(row, STEP, "stale-shards"))
    result = run_gate(
        LocalSource(str(tmp_path)), {"runner": row.runner, "quiet_seconds": 120, "full_weights": row.full_weights}
    )
    assert not result["complete"]
    assert [(p["id"], p["severity"]) for p in result["findings"]] == [("world-size-ambiguous", "error")]
    assert "ranks >= %d are far older than the others" % row.world in result["findings"][0]["message"]
    given = run_gate(
        LocalSource(str(tmp_path)),
        {"runner": row.runner, "quiet_seconds": 120, "full_weights": row.full_weights, "actor_world_size": row.world},
    )
    assert given["complete"] and given["world_size"] == row.world, given["findings"]
    assert "stale-shards" in {p["id"] for p in given["findings"]}


def test_marker_missing_without_parameters_is_incomplete(tmp_path):
    row = F.ROWS[0]
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(row, STEP, "marker-missing"))
    result = run_gate(LocalSource(str(tmp_path)), {"quiet_seconds": 120})
    assert not result["complete"]
    assert "actor/model_state_dict/full_weights.pt" in result["missing"]
