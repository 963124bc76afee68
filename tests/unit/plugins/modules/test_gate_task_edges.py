# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One rlark_ckpt_gate task on validated parameters, value by value (issue 26: mutants of checkpoint/gate_task.py)."""

import json
import os
import sys

import pytest

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "checkpoint")
)

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import gate_task as T
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.options import argument_spec

ROW = F.ROWS[0]


def params(**given):
    out = {name: spec.get("default") for name, spec in argument_spec().items()}
    out.update(given)
    return out


def seed(root, *steps):
    for step, case in steps:
        F.write_local(str(root), "global_step_%d" % step, F.tree(ROW, step, case), age=1000.0 / step)


@pytest.mark.parametrize(
    "given,problem",
    [
        ({}, ""),
        ({"hash_workers": 1}, ""),
        ({"hash_workers": 0}, "hash_workers must be at least 1, got 0"),
        ({"wait_timeout": 0, "wait_sleep": 0.01}, ""),
        ({"wait_timeout": -1}, "wait_timeout must not be negative and wait_sleep must be above 0"),
        ({"wait_sleep": 0}, "wait_timeout must not be negative and wait_sleep must be above 0"),
        ({"wait_sleep": -1.0}, "wait_timeout must not be negative and wait_sleep must be above 0"),
    ],
)
def test_option_problem(given, problem):
    assert T.option_problem(params(**given)) == problem
    if problem:
        assert T.gate_task(params(path="/nowhere", **given)) == {"failed": True, "changed": False, "msg": problem}


def test_task_failed_carries_its_result():
    exc = T.TaskFailed("m", changed=False, x=1)
    assert str(exc) == "m" and exc.result == {"changed": False, "x": 1, "msg": "m"}


def test_a_complete_step_is_no_change_and_no_failure(tmp_path):
    seed(tmp_path, (10, "complete"))
    r = T.gate_task(params(path=str(tmp_path), actor_world_size=2))
    assert r["changed"] is False and "failed" not in r and "msg" not in r and r["complete"] is True
    assert r["step"] == 10


def test_an_incomplete_step_fails_only_when_asked(tmp_path):
    seed(tmp_path, (10, "marker-missing"))
    r = T.gate_task(params(path=str(tmp_path), actor_world_size=2))
    assert r["failed"] is True and r["msg"].startswith("Checkpoint %s (step 10" % (tmp_path / "global_step_10"))
    r = T.gate_task(params(path=str(tmp_path), actor_world_size=2, fail_when_incomplete=False))
    assert "failed" not in r and r["complete"] is False and r["changed"] is False


def test_gate_errors_and_os_errors_are_failed_results(tmp_path, monkeypatch):
    r = T.gate_task(params(path=str(tmp_path / "absent")))
    assert sorted(r) == ["changed", "failed", "msg"] and r["failed"] is True and r["changed"] is False
    assert r["msg"].startswith("checkpoint path: %s" % (tmp_path / "absent"))
    seed(tmp_path, (10, "complete"))

    def boom(*a, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(T, "apply_integrity", boom)
    r = T.gate_task(params(path=str(tmp_path), actor_world_size=2, integrity="write"))
    assert r == {"failed": True, "changed": False, "msg": "integrity manifest: [Errno 28] No space left on device"}


def test_integrity_write_is_a_change(tmp_path):
    seed(tmp_path, (10, "complete"))
    r = T.gate_task(params(path=str(tmp_path), actor_world_size=2, integrity="write", hash_workers=1))
    assert r["changed"] is True and r["integrity"]["status"] == "written" and "failed" not in r
    r = T.gate_task(params(path=str(tmp_path), actor_world_size=2, integrity="write"), check_mode=True)
    assert r["changed"] is False and r["integrity"]["status"] == "would-write"
    r = T.gate_task(params(path=str(tmp_path), actor_world_size=2, integrity="verify"))
    assert r["changed"] is False and r["integrity"]["status"] == "verified" and r["complete"] is True
    r = T.gate_task(params(path=str(tmp_path), actor_world_size=2))
    assert "integrity" not in r


def test_the_backup_is_applied_only_when_asked(tmp_path, monkeypatch):
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup

    calls = []

    def fake(source, result, spec, manifest=None, check_mode=False, progress=None):
        calls.append((spec, manifest, check_mode))
        return spec.get("copied", False)

    monkeypatch.setattr(backup, "apply", fake)
    seed(tmp_path, (10, "complete"))
    assert T.gate_task(params(path=str(tmp_path), actor_world_size=2))["changed"] is False and calls == []
    r = T.gate_task(params(path=str(tmp_path), actor_world_size=2, backup={"copied": True}), check_mode=True)
    assert r["changed"] is True and calls == [({"copied": True}, None, True)]
    r = T.gate_task(params(path=str(tmp_path), actor_world_size=2, backup={"copied": False}, integrity="write"))
    assert r["changed"] is True  # the integrity manifest was written, the backup copied nothing


def test_open_source_without_boto3(monkeypatch):
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import s3

    def missing():
        raise ImportError("No module named 'boto3'")

    monkeypatch.setattr(s3, "import_boto3", missing)
    r = T.gate_task(params(s3={"bucket": "b"}))
    assert r == {"failed": True, "msg": T.BOTO3_MISSING, "exception": "No module named 'boto3'"}


def test_judge_without_a_wait_runs_the_gate_once(tmp_path, monkeypatch):
    seed(tmp_path, (10, "complete"))
    monkeypatch.setattr(T, "wait_for_gate", None, raising=False)
    p = params(path=str(tmp_path), actor_world_size=2)
    r, why = T.judge(p, T.open_source(p), {"actor_world_size": 2, "quiet_seconds": 120})
    assert why == "" and r["step"] == 10 and "wait_for" not in r


def test_judge_waits_when_only_after_step_is_set(tmp_path):
    seed(tmp_path, (10, "complete"))
    p = params(path=str(tmp_path), actor_world_size=2, after_step=0)
    r, why = T.judge(p, T.open_source(p), {"actor_world_size": 2, "quiet_seconds": 120})
    assert why == "" and r["wait_for"].startswith("a complete checkpoint newer than global_step_0")
    p = params(path=str(tmp_path), actor_world_size=2, after_step=10)
    r, why = T.judge(p, T.open_source(p), {"actor_world_size": 2, "quiet_seconds": 120})
    assert why == (
        "Waited for a complete checkpoint newer than global_step_10 and the newest checkpoint to be complete and "
        "quiet, not there yet (wait_timeout=0): newest global_step_10, newest complete global_step_10"
    )


def test_judge_with_a_timeout(tmp_path):
    seed(tmp_path, (10, "marker-missing"))
    p = params(path=str(tmp_path), actor_world_size=2, wait_timeout=1, wait_sleep=0.05, newest_complete=True)
    r, why = T.judge(p, T.open_source(p), {"actor_world_size": 2, "quiet_seconds": 120})
    assert r["timed_out"] is True and why.startswith("Timed out after 1s waiting for the newest checkpoint")
    p = params(path=str(tmp_path), actor_world_size=2, wait_timeout=1, wait_sleep=0.05, newest_complete=False)
    r, why = T.judge(p, T.open_source(p), {"actor_world_size": 2, "quiet_seconds": 120})
    assert why == "" and r["timed_out"] is False and r["wait_for"] == "the checkpoint gate"


def test_judge_nothing_saved_yet_fails_with_both_messages(tmp_path):
    p = params(path=str(tmp_path), wait_timeout=1, wait_sleep=0.05)
    with pytest.raises(T.TaskFailed) as e:
        T.judge(p, T.open_source(p), {"quiet_seconds": 120})
    assert str(e.value).startswith("Timed out after 1s waiting for the newest checkpoint to be complete and quiet")
    assert str(e.value).endswith(
        "nothing has been saved there (check runner.logger.log_path / runner.output_dir and the experiment name)"
    )
    assert e.value.result["changed"] is False and e.value.result["timed_out"] is True and "msg" in e.value.result
    r = T.gate_task(p)
    assert r["failed"] is True and r["changed"] is False and r["msg"] == str(e.value)


def test_judge_a_layout_error_ends_the_wait(tmp_path, monkeypatch):
    seed(tmp_path, (10, "complete"))
    calls = []

    def refuse(source, options):
        calls.append(1)
        raise layouts.LayoutError("bad layout")

    monkeypatch.setattr(T, "run_gate", refuse)
    p = params(path=str(tmp_path), wait_timeout=5, wait_sleep=0.01)
    with pytest.raises(layouts.LayoutError):
        T.judge(p, T.open_source(p), {"quiet_seconds": 120})
    assert calls == [1]
    assert T.gate_task(p) == {"failed": True, "changed": False, "msg": "bad layout"}


def test_judge_checks_the_options_before_waiting(tmp_path):
    p = params(path=str(tmp_path), wait_timeout=600)
    with pytest.raises(layouts.LayoutError):
        T.judge(p, T.open_source(p), {"step": "x"})


def test_a_wait_not_met_fails_a_complete_step_with_its_reason(tmp_path):
    seed(tmp_path, (10, "complete"))
    p = params(path=str(tmp_path), actor_world_size=2, after_step=10)
    r = T.gate_task(p)
    assert r["complete"] is True and r["failed"] is True and r["changed"] is False
    assert r["msg"] == (
        "Waited for a complete checkpoint newer than global_step_10 and the newest checkpoint to be complete and "
        "quiet, not there yet (wait_timeout=0): newest global_step_10, newest complete global_step_10"
    )
    r = T.gate_task(dict(p, fail_when_incomplete=False))
    assert r["complete"] is True and "failed" not in r and "msg" not in r


def test_integrity_off_never_reaches_the_integrity_code(tmp_path, monkeypatch):
    """Off as the module receives it (parsed from JSON, not an interned literal): no manifest is hashed or read."""
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import integrity

    def reached(*a, **kw):
        raise AssertionError("integrity.apply called with integrity=off")

    monkeypatch.setattr(integrity, "apply", reached)
    seed(tmp_path, (10, "complete"))
    off = json.loads('"off"')
    r = T.gate_task(params(path=str(tmp_path), actor_world_size=2, integrity=off))
    assert r["complete"] is True and r["changed"] is False and "integrity" not in r
