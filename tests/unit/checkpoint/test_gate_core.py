# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Gate behaviour beyond the matrix: step selection, odd names, bad input, payload checks, inference."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils import resume_decision
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import (
    incomplete_message,
    run_gate,
)
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError, LayoutError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.payloads import zip_tail_problem

ROW = F.ROWS[0]  # FSDP x embodied, W=2, full weights


def gate(path, **opts):
    params = dict(ROW.gate_params(), quiet_seconds=120)
    params.update(opts)
    return run_gate(LocalSource(str(path)), params)


def seed(root, *steps):
    for step, case in steps:
        F.write_local(str(root), "global_step_%d" % step, F.tree(ROW, step, case), age=1000.0 / (step + 1))


def test_latest_skips_a_partial_newest_step_and_says_so(tmp_path):
    seed(tmp_path, (10, "complete"), (20, "complete"), (30, "marker-missing"))
    lazy = gate(tmp_path)
    assert [s["name"] for s in lazy["steps"]] == ["global_step_20", "global_step_30"] and lazy["steps_found"] == 3
    r = gate(tmp_path, full_report=True)
    F.check_same_verdict(lazy, r)
    assert r["complete"] and r["step"] == 20 and r["latest_complete_step"] == 20 and r["newest_step"] == 30
    note = [p for p in r["findings"] if p["id"] == "newest-step-incomplete"]
    assert note and "global_step_30" in note[0]["message"] and note[0]["severity"] == "warning"
    assert r["checkpoint"].endswith("global_step_20")
    verdicts = {s["name"]: s["verdict"] for s in r["steps"]}
    assert verdicts == {"global_step_10": "unverified", "global_step_20": "complete", "global_step_30": "incomplete"}


def test_latest_walks_down_past_a_truncated_step(tmp_path):
    seed(tmp_path, (10, "complete"), (20, "truncated"), (30, "metadata-tmp"))
    r = gate(tmp_path)
    assert r["step"] == 10 and r["complete"]
    verdicts = {s["name"]: s["verdict"] for s in r["steps"]}
    assert verdicts["global_step_20"] == "incomplete" and verdicts["global_step_30"] == "incomplete"


def test_no_complete_step_reports_the_newest(tmp_path):
    seed(tmp_path, (10, "marker-missing"), (20, "metadata-tmp"))
    r = gate(tmp_path)
    assert not r["complete"] and r["step"] == 20 and r["latest_complete_step"] is None
    msg = incomplete_message(r)
    assert "\n" not in msg and "global_step_20" in msg and "interrupted write" in msg


def test_odd_names_are_reported_never_parsed(tmp_path):
    seed(tmp_path, (40, "complete"))
    F.write_local(str(tmp_path), "global_step_40_bak", F.tree(ROW, 40, "complete"), age=100)
    F.write_local(str(tmp_path), "global_step_", F.tree(ROW, 1, "complete"), age=100)
    os.makedirs(str(tmp_path / "best_model" / "actor"))
    r = gate(tmp_path)
    assert r["complete"] and r["step"] == 40
    verdicts = {s["name"]: s["verdict"] for s in r["steps"]}
    assert verdicts["global_step_40_bak"] == "unrecognized" and verdicts["global_step_"] == "unrecognized"
    assert "best_model" not in verdicts
    assert {p["path"] for p in r["findings"] if p["id"] == "unrecognized-step-name"} == {
        "global_step_40_bak",
        "global_step_",
    }


def test_only_odd_names_is_a_clear_error(tmp_path):
    F.write_local(str(tmp_path), "global_step_40_bak", F.tree(ROW, 40, "complete"), age=100)
    with pytest.raises(GateError, match="only names RLinf cannot resume from: global_step_40_bak"):
        gate(tmp_path)


def test_explicit_step_and_single_step_path(tmp_path):
    seed(tmp_path, (10, "complete"), (20, "marker-missing"))
    assert gate(tmp_path, step="10")["complete"]
    r = gate(tmp_path, step=20, full_report=True)
    assert not r["complete"] and r["latest_complete_step"] == 10
    lazy = gate(tmp_path, step=20)  # only step 20 is walked: the newest complete one is not looked for
    assert not lazy["complete"] and lazy["latest_complete_step"] is None and lazy["newest_step"] == 20
    assert [s["name"] for s in lazy["steps"]] == ["global_step_20"]
    single = gate(tmp_path / "global_step_10")
    assert single["complete"] and [s["name"] for s in single["steps"]] == ["global_step_10"]
    with pytest.raises(GateError, match="no step 99 under"):
        gate(tmp_path, step=99)


@pytest.mark.parametrize(
    "make,fragment",
    [
        (lambda p: p / "absent", "does not exist"),
        (lambda p: (p / "file.txt").write_text("x") and p / "file.txt", "is a file, not a directory"),
        (lambda p: p, "no global_step_* directory under"),
    ],
)
def test_bad_paths_are_one_message_naming_the_path(tmp_path, make, fragment):
    path = make(tmp_path)
    with pytest.raises(GateError) as err:
        gate(path)
    assert fragment in str(err.value) and str(tmp_path) in str(err.value)


def test_permission_denied_names_the_path(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    real_stat = os.stat

    def deny(path, *a, **kw):
        if str(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", deny)
    with pytest.raises(GateError, match="permission denied reading %s" % locked):
        gate(locked)


def test_unreadable_subdirectory_makes_the_step_incomplete(tmp_path, monkeypatch):
    seed(tmp_path, (10, "complete"))
    real_open = os.open
    target = str(tmp_path / "global_step_10" / "actor" / "dcp_checkpoint")

    def deny(path, flags, *a, **kw):
        if path == target:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", deny)
    r = gate(tmp_path)
    assert not r["complete"]
    assert any(
        p["id"] == "unreadable" and "permission denied reading %s" % target in p["message"] for p in r["findings"]
    )


@pytest.mark.parametrize(
    "opts,fragment",
    [
        ({"runner": "ppo"}, "unknown runner 'ppo'"),
        ({"backend": "deepspeed"}, "unknown backend 'deepspeed'"),
        ({"backend": "fsdp", "tensor_parallel": 2}, "inconsistent with backend fsdp"),
        ({"backend": "megatron", "actor_world_size": 6, "tensor_parallel": 4}, "not a multiple"),
        ({"backend": "megatron", "runner": "sac"}, "FSDP workers only"),
        ({"runner": "embodied", "critic": True}, "only reasoning/agent save a critic"),
        ({"step": "last"}, "step must be a number, global_step_N or 'latest'"),
        ({"actor_world_size": 0}, "actor_world_size must be at least 1"),
    ],
)
def test_inconsistent_parameters_are_refused(tmp_path, opts, fragment):
    seed(tmp_path, (10, "complete"))
    params = {"quiet_seconds": 120}
    params.update(opts)
    if "backend" in opts and opts.get("backend") != "fsdp":
        params.setdefault("runner", "reasoning")
    with pytest.raises(LayoutError, match=fragment):
        run_gate(LocalSource(str(tmp_path)), params)


def test_world_size_with_holes_asks_for_the_parameter(tmp_path):
    files = [f for f in F.tree(ROW, 10, "complete") if not f[0].endswith("__1_0.distcp")]
    files.append(("actor/dcp_checkpoint/__2_0.distcp", b"\0" * 8, 3700.0))
    F.write_local(str(tmp_path), "global_step_10", files)
    r = run_gate(LocalSource(str(tmp_path)), {"quiet_seconds": 120})
    assert not r["complete"]
    amb = [p for p in r["findings"] if p["id"] == "world-size-ambiguous"]
    assert amb and "actor_world_size" in amb[0]["hint"]
    assert "Pass the parameter" in incomplete_message(r)


def test_stale_shards_from_a_larger_run_with_an_old_marker(tmp_path):
    """W=2 save cut off after its shards: the old W=4 .metadata must not complete it."""
    big = F.Row("big", "embodied", "fsdp", world=4, full_weights=False)
    old = F.tree(big, 10, "complete")
    F.write_local(str(tmp_path), "global_step_10", old, age=7200)
    small = F.Row("small", "embodied", "fsdp", world=2, full_weights=False)
    new_shards = [f for f in F.tree(small, 10, "complete") if f[0].endswith(".distcp")]
    F.write_local(str(tmp_path), "global_step_10", new_shards)
    r = run_gate(LocalSource(str(tmp_path)), {"actor_world_size": 2, "full_weights": False, "quiet_seconds": 120})
    ids = {p["id"] for p in r["findings"]}
    assert not r["complete"] and {"stale-marker", "stale-shards"} <= ids
    r = run_gate(LocalSource(str(tmp_path)), {"full_weights": False, "quiet_seconds": 120})
    assert not r["complete"]


def test_trailing_part_seen_in_siblings_counts_as_missing(tmp_path):
    """Reasoning runs write data/data.pt last: without it a step only looks like an embodied one."""
    row = F.ROWS[9]  # FSDP x reasoning
    F.write_local(str(tmp_path), "global_step_10", F.tree(row, 10, "complete"), age=1000)
    F.write_local(str(tmp_path), "global_step_20", F.tree(row, 20, "missing", drop="data/data.pt"))
    r = run_gate(LocalSource(str(tmp_path)), {"quiet_seconds": 120})
    assert r["step"] == 10 and r["runner"] == "reasoning"
    s20 = next(s for s in r["steps"] if s["step"] == 20)
    assert s20["verdict"] == "incomplete" and any("data/data.pt" in x for x in s20["reasons"])


def test_megatron_two_part_names_need_pp_or_ep(tmp_path):
    row = F.ROWS[11]  # Megatron reasoning TP2 PP2
    F.write_local(str(tmp_path), "global_step_10", F.tree(row, 10, "complete"))
    r = run_gate(LocalSource(str(tmp_path)), {"quiet_seconds": 120})
    assert not r["complete"]
    assert [p for p in r["findings"] if p["id"] == "parallel-layout-ambiguous"]
    assert run_gate(LocalSource(str(tmp_path)), {"quiet_seconds": 120, "pipeline_parallel": 2})["complete"]
    # the same names read as expert ranks describe another grid: the pipeline files are then stale/missing
    r = run_gate(LocalSource(str(tmp_path)), {"quiet_seconds": 120, "expert_parallel": 2, "pipeline_parallel": 1})
    assert r["complete"]  # mp_rank_TT_EEE with EP=2 names the same files: both readings are consistent


def test_megatron_extra_tp_ranks_are_stale_not_counted(tmp_path):
    row = F.ROWS[13]  # Megatron coding TP2 PP2 EP2
    F.write_local(str(tmp_path), "global_step_10", F.tree(row, 10, "stale-shards"))
    r = run_gate(LocalSource(str(tmp_path)), dict(row.gate_params(), quiet_seconds=120))
    assert r["complete"] and [p for p in r["findings"] if p["id"] == "stale-shards"]
    r = run_gate(LocalSource(str(tmp_path)), dict(row.gate_params(), quiet_seconds=120, tensor_parallel=3))
    assert not r["complete"] and any("mp_rank_02_001_000" in m for m in r["missing"])


def test_verify_payloads_off_skips_content_checks(tmp_path):
    F.write_local(str(tmp_path), "global_step_10", F.tree(ROW, 10, "truncated"))
    assert not gate(tmp_path)["complete"]
    r = gate(tmp_path, verify_payloads=False)
    assert r["complete"] and r["steps"][0]["verdict"] == "complete" and not r["steps"][0]["payloads_verified"]


def test_invalid_json_marker(tmp_path):
    row = F.ROWS[7]  # DAgger: trajectory_index.json last
    files = [
        (rel, b'{"broken' if rel.endswith("rank_1/trajectory_index.json") else d, a)
        for rel, d, a in F.tree(row, 10, "complete")
    ]
    F.write_local(str(tmp_path), "global_step_10", files)
    r = run_gate(LocalSource(str(tmp_path)), dict(row.gate_params(), quiet_seconds=120))
    assert not r["complete"] and [p for p in r["findings"] if p["id"] == "invalid-json"]


def test_zip_tail_checks():
    whole = F.zip_payload()
    assert zip_tail_problem(whole, len(whole)) is None
    assert zip_tail_problem(whole[-100:], len(whole)) is None
    assert "no zip end-of-central-directory" in zip_tail_problem(whole[:-1], len(whole) - 1)
    assert "no zip end-of-central-directory" in zip_tail_problem(b"", 0)
    cut = whole[: len(whole) // 2]
    assert zip_tail_problem(cut, len(cut))
    # an EOCD signature inside data that does not end the file is not an end record
    fake = b"PK\x05\x06" + b"\0" * 30
    assert zip_tail_problem(fake, len(fake))


def test_layout_expansion_counts():
    exp = L.expect(40, "reasoning", "megatron", None, grid=(8, 4, 1), features={"dist_opt"}, critic=True)
    payloads = [r for r, _k in exp.entries if r.endswith((".pt", ".txt"))]
    assert len(payloads) == 2 * (8 * 4 * 2 + 1) + 1
    assert "actor/iter_0000040/mp_rank_07_003/distrib_optim.pt" in payloads
    assert exp.markers == ["data/data.pt"]
    exp = L.expect(3, "coding", "megatron", None, grid=(2, 1, 4))
    assert "actor/iter_0000003/mp_rank_01_003/model_optim_rng.pt" in [r for r, _k in exp.entries]
    exp = L.expect(5, "embodied", "fsdp", 3)
    assert [r for r, _k in exp.entries] == [
        "actor/dcp_checkpoint/__0_0.distcp",
        "actor/dcp_checkpoint/__1_0.distcp",
        "actor/dcp_checkpoint/__2_0.distcp",
        "actor/dcp_checkpoint/.metadata",
        "actor/model_state_dict/full_weights.pt",
    ]
    assert exp.markers == ["actor/model_state_dict/full_weights.pt"]


def test_infer_grid():
    assert L.infer_grid(["mp_rank_00", "mp_rank_01"]) == ((2, 1, 1), None)
    names = ["mp_rank_%02d_%03d_%03d" % (t, p, e) for t in range(2) for p in range(3) for e in range(2)]
    assert L.infer_grid(names) == ((2, 3, 2), None)
    grid, why = L.infer_grid(["mp_rank_00_000", "mp_rank_00_001"])
    assert grid is None and "pipeline_parallel or expert_parallel" in why
    assert L.infer_grid(["mp_rank_00_000", "mp_rank_00_001"], pp=2)[0] == (1, 2, 1)
    assert L.infer_grid(["mp_rank_00_000", "mp_rank_00_001"], ep=2)[0] == (1, 1, 2)
    assert L.infer_grid(["mp_rank_00", "mp_rank_02"])[0] is None


def test_missing_entries_are_also_a_finding_and_the_message_says_them_once(tmp_path):
    seed(tmp_path, (10, "marker-missing"))
    r = gate(tmp_path)
    found = [p for p in r["findings"] if p["id"] == "missing-entries"]
    assert found and found[0]["severity"] == "error" and "full_weights.pt" in found[0]["message"]
    msg = incomplete_message(r)
    assert "1 required entry is missing (actor/model_state_dict/full_weights.pt)" in msg
    assert found[0]["message"] not in msg


def test_parallel_sizes_on_a_detected_fsdp_step_are_a_warning(tmp_path):
    seed(tmp_path, (10, "complete"))
    r = run_gate(LocalSource(str(tmp_path)), {"quiet_seconds": 120, "tensor_parallel": 2})
    assert r["complete"] and r["backend"] == "fsdp"
    assert [p["severity"] for p in r["findings"] if p["id"] == "parallel-sizes-ignored"] == ["warning"]


def test_newest_first_walks_only_the_newest_complete_step(tmp_path):
    seed(tmp_path, *[(s, "complete") for s in range(10, 110, 10)])
    src = LocalSource(str(tmp_path))
    walked, probed = [], []
    real_walk, real_probe = src.walk, src.probe
    src.walk = lambda n: walked.append(n) or real_walk(n)
    src.probe = lambda n: probed.append(n) or real_probe(n)
    r = run_gate(src, dict(ROW.gate_params(), quiet_seconds=120))
    assert r["complete"] and r["step"] == 100 and walked == ["global_step_100"] and len(probed) == 9


def test_newest_first_sees_a_trailing_part_only_older_siblings_have(tmp_path):
    """Step 30 lacks data/data.pt that steps 10 and 20 have: cut off, though alone it looks embodied."""
    row = next(r for r in F.ROWS if r.id == "fsdp-reasoning")
    for step in (10, 20):
        F.write_local(str(tmp_path), "global_step_%d" % step, F.tree(row, step, "complete"), age=500)
    cut = [f for f in F.tree(row, 30, "complete") if f[0] != "data/data.pt"]
    F.write_local(str(tmp_path), "global_step_30", cut)
    r = run_gate(LocalSource(str(tmp_path)), {"quiet_seconds": 120})
    assert r["step"] == 20 and r["newest_step"] == 30 and r["complete"]
    assert "missing-trailing-part" in r["steps"][-1]["reasons"][-1]


@pytest.mark.parametrize("full_report", [False, True])
def test_a_step_that_does_not_exist_is_no_step_and_global_step_names_are_steps(tmp_path, full_report):
    """Issue 32, item 3: step 999 is "no step 999 under <root> (newest N)", never "not complete";
    ``global_step_10`` means step 10, as RLinf names its directory."""
    seed(tmp_path, (10, "complete"), (20, "complete"))
    with pytest.raises(GateError) as err:
        gate(tmp_path, step=999, full_report=full_report)
    assert str(err.value).count("no step 999 under %s (newest 20)" % tmp_path) == 1, str(err.value)
    assert "not complete" not in str(err.value) and "incomplete" not in str(err.value)
    named = gate(tmp_path, step="global_step_10", full_report=full_report)
    assert named["complete"] and named["step"] == 10
    refusal = resume_decision.resume_gate_refusal({"failed": True, "msg": str(err.value)}, 999, "demo")
    assert refusal.count("Cannot resume demo from step 999, nothing was created: no step 999 under") == 1, refusal
    assert "not complete" not in refusal and refusal.count("rlark_resume_step") == 1, refusal


def test_a_complete_step_whose_required_backup_fails_says_so_not_that_the_save_failed():
    r = {
        "checkpoint": "/ckpt/global_step_10",
        "step": 10,
        "runner": "embodied",
        "backend": "fsdp",
        "missing": [],
        "findings": [
            {"id": "backup-missing", "severity": "error", "message": "the backup holds no copy of global_step_10"}
        ],
    }
    msg = incomplete_message(r)
    assert "is complete, but its required backup does not hold it" in msg and "did not finish" not in msg
    assert "rlark_checkpoint_backup_make=true" in msg and "rlark_checkpoint_backup_required=false" in msg
    r["missing"] = ["actor/model_state_dict/full_weights.pt"]  # the step itself is incomplete: that comes first
    assert "is incomplete" in incomplete_message(r) and "did not finish" in incomplete_message(r)
