# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The guarded stop's policy on its own (issue 26's surviving mutants of guarded_stop/policy.py): its defaults,
how it reads the role's values, the gate waits it asks for, and its verdict on a gate result."""

import json

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop.policy import (
    StopPolicy,
    gate_verdict,
    markers_reason,
)

COMPLETE_0 = {"complete": True, "step": 0, "newest_step": 0, "latest_complete_step": 0, "findings": []}


def test_defaults():
    p = StopPolicy()
    got = (p.when, p.save_window_seconds, p.next_checkpoint_timeout, p.next_checkpoint_poll, p.done_markers)
    assert got == ("now", 0.0, 3600.0, 0.25, []) and p.accept_truncated_logs is False


@pytest.mark.parametrize("given, window", [(None, 0.0), (0, 0.0), (-5, 0.0), (30, 30.0), ("12.5", 12.5)])
def test_the_save_window_is_never_negative(given, window):
    assert StopPolicy(save_window_seconds=given).save_window_seconds == window


@pytest.mark.parametrize("given, timeout", [(None, 0.0), (0, 0.0), (-1, 0.0), (10, 10.0)])
def test_the_next_checkpoint_timeout_is_never_negative(given, timeout):
    assert StopPolicy(next_checkpoint_timeout=given).next_checkpoint_timeout == timeout


@pytest.mark.parametrize("given, poll", [(None, 0.25), (0, 0.25), (2, 2.0)])
def test_the_next_checkpoint_poll_defaults_to_a_quarter_second(given, poll):
    assert StopPolicy(next_checkpoint_poll=given).next_checkpoint_poll == poll


def test_an_unknown_when_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^rlark_stop_when must be one of now, next_checkpoint, not 'later'$"):
        StopPolicy(when="later")


def test_at_now_the_first_wait_is_the_verdict_within_the_save_window():
    # when as the role hands it over, decoded from JSON: an equal string, not the same object
    p = StopPolicy(when=json.loads('"now"'), save_window_seconds=30)
    assert p.first_wait() == {"after_step": -1, "newest_complete": True, "wait_timeout": 30.0, "wait_sleep": 1.0}


def test_at_the_next_checkpoint_the_first_wait_is_one_look_without_integrity():
    p = StopPolicy(when="next_checkpoint", save_window_seconds=30)
    assert p.first_wait() == {
        "after_step": -1,
        "newest_complete": True,
        "wait_timeout": 0.0,
        "wait_sleep": 1.0,
        "integrity": "off",
        "backup": None,
    }


@pytest.mark.parametrize("first, newer_than", [({}, -1), (dict(COMPLETE_0, step=40, latest_complete_step=40), 40)])
def test_the_next_wait_is_for_a_complete_step_newer_than_the_first_look_found(first, newer_than):
    p = StopPolicy(when="next_checkpoint", next_checkpoint_timeout=600, next_checkpoint_poll=2)
    assert p.next_wait(first) == {
        "after_step": newer_than,
        "newest_complete": True,
        "wait_timeout": 600.0,
        "wait_sleep": 2.0,
    }


def test_a_wait_without_fields_takes_any_complete_newest_step_step_0_included():
    assert gate_verdict(COMPLETE_0, {}) == (True, "")
    ok, reason = gate_verdict(dict(COMPLETE_0, complete=False, newest_step=10, latest_complete_step=0), {})
    assert ok is False and reason


def test_markers_hold_or_say_what_is_missing():
    assert markers_reason([], "") == ""
    assert markers_reason(["uploads finished"], "step 3\nuploads finished\n") == ""
    reason = markers_reason(["uploads finished"], "step 3\n")
    assert reason.startswith("Not finished yet: ") and "uploads finished" in reason


def test_a_query_marker_is_judged_on_the_live_objects_given():
    live = {"job": {"status": {"phase": "Running"}}}
    assert markers_reason(["query: job.status.phase == 'Running'"], "", live=live) == ""
    assert markers_reason(["query: job.status.phase == 'Running'"], "").startswith("Not finished yet: ")
