# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate's flat summary and the wait on it, value by value (issue 26: mutants of gate_summary.py and waiting.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import waiting
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate_summary import summarize


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def gate(newest, latest, complete=True, **extra):
    out = {
        "complete": complete,
        "newest_step": newest,
        "latest_complete_step": latest,
        "step": latest,
        "checkpoint": "/ckpt/global_step_%s" % latest,
        "steps": [{"step": newest, "reasons": ["missing 2 required entries"]}],
        "findings": [],
    }
    out.update(extra)
    return out


# -- gate_summary.summarize -------------------------------------------------------------------------------


@pytest.mark.parametrize("result", [None, {}, {"skipped": True, "complete": True}, {"changed": False}])
def test_a_gate_that_did_not_run(result):
    view = summarize(result)
    assert view["ran"] is False and view["complete"] is False and view["newest_complete"] is False
    assert view["step"] is None and view["newest_step"] is None and view["latest_complete_step"] is None
    assert view["reason"] == "the checkpoint gate did not run" and len(view) == 7
    assert summarize({"skipped": True, "msg": "skipped: no checkpoint"})["reason"] == "skipped: no checkpoint"


def test_a_complete_newest_step_copies_the_result():
    result = gate(
        6,
        6,
        runner="embodied",
        backend="fsdp",
        world_size=2,
        rule="r",
        files=4,
        bytes=40,
        newest_mtime=1.5,
    )
    assert summarize(result) == {
        "ran": True,
        "complete": True,
        "step": 6,
        "checkpoint": "/ckpt/global_step_6",
        "newest_step": 6,
        "newest_complete": True,
        "latest_complete_step": 6,
        "runner": "embodied",
        "backend": "fsdp",
        "world_size": 2,
        "rule": "r",
        "files": 4,
        "bytes": 40,
        "newest_mtime": 1.5,
        "reason": "",
    }
    assert summarize(gate(6, 6, complete=1))["complete"] is True
    assert summarize(gate(6, 6, complete=0))["complete"] is False


def test_no_step_names_the_root():
    view = summarize(gate(None, None, complete=False))
    assert view["newest_complete"] is False
    assert view["reason"] == "no global_step_* checkpoint found under /ckpt/global_step_None"
    assert summarize(gate(None, None, checkpoint=None))["reason"] == (
        "no global_step_* checkpoint found under the checkpoint root"
    )


def test_an_incomplete_newest_step_says_its_own_reasons_else_the_findings():
    view = summarize(gate(6, 3))
    assert view["newest_complete"] is False
    assert view["reason"] == (
        "the newest checkpoint global_step_6 is incomplete (a save is running or was cut off): "
        "missing 2 required entries"
    )
    other = gate(6, 3, findings=[{"message": "first"}, {"message": ""}, {"id": "x"}, {"message": "second"}])
    other["steps"] = [{"step": 3, "reasons": ["about step 3"]}, {"step": 6, "reasons": []}]
    assert summarize(other)["reason"].endswith("cut off): first; second")
    other["steps"] = [{"step": 6, "reasons": ["", 7]}]
    assert summarize(other)["reason"].endswith("cut off): 7")
    bare = gate(6, None, steps=None)
    assert summarize(bare)["reason"].endswith("cut off): see the gate result")


def test_a_newest_complete_step_that_fails_later_checks():
    view = summarize(gate(6, 6, complete=False, findings=[{"message": "a"}, {"id": "b"}, {"message": "c"}]))
    assert view["newest_complete"] is True and view["complete"] is False
    assert view["reason"] == "a; ; c"
    assert summarize(gate(6, 6, complete=False))["reason"] == "incomplete"
    assert summarize(gate(6, 6, complete=False, findings=None))["reason"] == "incomplete"


# -- waiting ----------------------------------------------------------------------------------------------


def test_describe_wait():
    assert waiting.describe_wait() == "the newest checkpoint to be complete and quiet"
    assert waiting.describe_wait(0, False) == "a complete checkpoint newer than global_step_0"
    assert waiting.describe_wait(-1, False) == "the checkpoint gate"
    assert waiting.describe_wait(None, False) == "the checkpoint gate"
    assert waiting.describe_wait(3, True) == (
        "a complete checkpoint newer than global_step_3 and the newest checkpoint to be complete and quiet"
    )


def test_satisfied_needs_a_complete_step_strictly_newer():
    assert waiting.satisfied(gate(4, 4), newer_than=3) == (True, "newest global_step_4, newest complete global_step_4")
    assert waiting.satisfied(gate(3, 3), newer_than=3) == (False, "newest global_step_3, newest complete global_step_3")
    assert waiting.satisfied(gate(0, 0), newer_than=0)[0] is False
    assert waiting.satisfied(gate(0, 0), newer_than=-1)[0] is True
    assert waiting.satisfied(gate(0, 0), newer_than=None)[0] is True
    assert waiting.satisfied(gate(6, None, complete=False), newer_than=0, newest_complete=False) == (
        False,
        "newest global_step_6, newest complete none",
    )
    assert waiting.satisfied(gate(None, None), newer_than=-1, newest_complete=False) == (
        True,
        "newest none, newest complete none",
    )
    assert waiting.satisfied({}) == (False, "the checkpoint gate did not run")


def test_satisfied_newest_complete_needs_both():
    assert waiting.satisfied(gate(6, 3), newer_than=2, newest_complete=False)[0] is True
    done, state = waiting.satisfied(gate(6, 3), newer_than=2)
    assert done is False and state.startswith("newest global_step_6, newest complete global_step_3 (the newest")
    done, state = waiting.satisfied(gate(6, 6, complete=False), newer_than=-1)
    assert (done, state) == (False, "newest global_step_6, newest complete global_step_6 (incomplete)")
    # The reason is never empty when the newest step is complete and the result is not: "not quiet yet" is a guard.
    assert waiting.satisfied(gate(6, 6, complete=True), newer_than=-1) == (
        True,
        "newest global_step_6, newest complete global_step_6",
    )


def test_not_ready_reason():
    assert waiting.not_ready_reason(gate(6, 6)) == ""
    assert waiting.not_ready_reason(gate(6, 3)).startswith("the newest checkpoint global_step_6 is incomplete")
    assert waiting.not_ready_reason(dict(gate(6, 3), wait_msg="W.", timed_out=False)).startswith("the newest")
    assert waiting.not_ready_reason(dict(gate(6, 3), wait_msg="W.", timed_out=True)).startswith("W. the newest")
    assert waiting.not_ready_reason(dict(gate(6, 3), timed_out=True)).startswith(" the newest")
    # newer_than is not met though the newest step is complete: the summary has no reason of its own
    assert waiting.not_ready_reason(gate(3, 3), newer_than=3) == "the newest checkpoint is not complete"
    assert waiting.not_ready_reason(gate(3, 3), newer_than=2) == ""


def test_wait_for_gate_fields_on_success():
    clock = Clock()
    lines = []
    results = iter([gate(6, 3), gate(7, 7)])

    def judge():
        clock.now += 2.004
        return next(results)

    before = time.time()
    out = waiting.wait_for_gate(judge, newer_than=3, timeout=30, interval=0.5, progress=lines.append, clock=clock)
    assert out["timed_out"] is False and "wait_msg" not in out
    assert out["wait_for"] == (
        "a complete checkpoint newer than global_step_3 and the newest checkpoint to be complete and quiet"
    )
    assert out["latest_complete_step"] == 7 and out["newest_step"] == 7
    assert out["waited_seconds"] == 4.01
    assert before <= out["judged_at"] <= time.time()
    assert lines == out["wait_log"] and len(lines) == 2
    assert lines[0] == "   2.0s %s: newest global_step_6, newest complete global_step_3" % out["wait_for"]


def test_wait_for_gate_timeouts():
    clock = Clock()

    def judge():
        clock.now += 1
        return gate(6, 3)

    out = waiting.wait_for_gate(judge, timeout=2, interval=1, clock=clock)
    assert out["timed_out"] is True and out["wait_msg"].startswith("Timed out after 2s waiting for the newest")
    assert out["newest_step"] == 6 and out["waited_seconds"] == 2.0
    one = waiting.wait_for_gate(judge, timeout=1, interval=1, clock=clock)
    assert one["timed_out"] is True and one["wait_msg"].startswith("Timed out after 1s")
    once = waiting.wait_for_gate(judge, timeout=-5, clock=clock)
    assert once["timed_out"] is False and once["wait_msg"].startswith("Timed out after 0s")
    assert once["waited_seconds"] == 1.0
    none = waiting.wait_for_gate(lambda: {}, timeout=0, clock=clock)
    assert none["timed_out"] is False and none["wait_for"] == "the newest checkpoint to be complete and quiet"


def test_wait_for_gate_with_the_real_clock_judges_once_without_timeout():
    out = waiting.wait_for_gate(lambda: gate(6, 6), timeout=0)
    assert out["timed_out"] is False and out["complete"] is True
    assert 0 <= out["waited_seconds"] < 5


def test_defaults_wait_for_no_step_number():
    """Without newer_than any complete newest step will do, step 0 included."""
    assert waiting.satisfied(gate(0, 0)) == (True, "newest global_step_0, newest complete global_step_0")
    assert waiting.satisfied(gate(0, 0), newest_complete=False)[0] is True
    assert waiting.not_ready_reason(gate(0, 0)) == ""
    assert waiting.not_ready_reason(gate(0, 0), newest_complete=False) == ""


def test_an_older_complete_step_is_not_newer():
    assert waiting.satisfied(gate(6, 2), newer_than=3, newest_complete=False) == (
        False,
        "newest global_step_6, newest complete global_step_2",
    )


def test_wait_for_gate_defaults_judge_once_and_poll_each_second(monkeypatch):
    intervals = []

    class Recording(waiting.Waiter):
        def __init__(self, timeout, interval=None, **kwargs):
            intervals.append((timeout, interval))
            super().__init__(timeout, interval=interval, **kwargs)

    monkeypatch.setattr(waiting, "Waiter", Recording)
    clock = Clock()
    calls = []

    def judge():
        calls.append(1)
        clock.now += 1
        return gate(6, 3)

    out = waiting.wait_for_gate(judge, clock=clock)
    assert intervals == [(0.0, 1.0)] and calls == [1] and out["timed_out"] is False


def test_waited_seconds_count_from_the_start():
    clock = Clock()
    clock.now = 3.0
    results = iter([gate(6, 3), gate(7, 7)])

    def judge():
        clock.now += 2.004
        return next(results)

    out = waiting.wait_for_gate(judge, timeout=30, interval=0.5, clock=clock)
    assert out["waited_seconds"] == 4.01


def test_the_newest_steps_own_reasons_only():
    """Only the entry of the newest step itself gives the reasons (a result read back from JSON, steps above 256)."""
    import json

    result = gate(300, 290, findings=[{"message": "from the findings"}])
    result["steps"] = [{"step": 290, "reasons": ["r290"]}, {"step": 300, "reasons": ["r300"]}]
    assert summarize(json.loads(json.dumps(result)))["reason"].endswith("cut off): r300")
    result["steps"] = [{"step": 290, "reasons": ["r290"]}, {"step": None, "reasons": ["odd"]}]
    assert summarize(result)["reason"].endswith("cut off): from the findings")
    result["steps"] = [{"step": 301, "reasons": ["r301"]}]
    assert summarize(result)["reason"].endswith("cut off): from the findings")


def test_a_complete_newest_step_above_256_read_back_from_json():
    import json

    view = summarize(json.loads(json.dumps(gate(300, 300))))
    assert view["newest_complete"] is True and view["reason"] == ""
