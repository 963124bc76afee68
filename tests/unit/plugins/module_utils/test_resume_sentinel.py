# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The silent-restart sentinel's core: it decides on the first logged step and patches only the new Job."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import continuity, resume_sentinel
from rlark_fake_api import FakeApi, FakeClock, job, make_client
from test_continuity import run

RESUME = "Resuming training from checkpoint directory /c/global_step_6.\n"


def setup(logs):
    """A fake API with the original and the new Job; ``logs`` are the successive reads of the new head log."""
    api = FakeApi()
    api.add("jobs", job("orig", stopped=True))
    api.add("jobs", job("orig-r6"))
    clock = FakeClock()
    reads = iter(logs)
    last = {"text": ""}

    def read():
        last["text"] = next(reads, last["text"])
        return {"orig-r6-actor-0": last["text"]}

    return api, make_client(api, clock=clock), read, clock


def watch(client, read, clock, old):
    return resume_sentinel.watch(
        client, "orig-r6", "orig", 6, "/c/global_step_6", old, read, "orig-r6-actor-0", 60,
        clock=clock, sleep=clock.sleep,
    )  # fmt: skip


def old_run():
    return continuity.as_list(continuity.parse_metrics(run(1, 8)))


def test_a_restart_is_stopped_on_its_first_step_and_only_the_new_job_is_patched():
    api, client, read, clock = setup(["Cluster is ready\n", "Executing run script...\n", run(1, 1)])
    out = watch(client, read, clock, old_run())
    assert out["stopped"] and out["changed"] and out["first_step"] == 1
    assert [(f["id"], f["severity"]) for f in out["findings"]] == [("resume-restarted-from-scratch", "error")]
    assert out["saved_before_decision"] is False
    patches = [(m, p, b) for m, p, _q, b in api.requests if m == "PATCH"]
    assert [(p.rsplit("/", 1)[-1], b["spec"]) for _m, p, b in patches] == [("orig-r6", {"stopped": True})]
    assert api.get("jobs", "orig")["spec"]["stopped"] is True and api.get("jobs", "orig-r6")["spec"]["stopped"]


def test_a_correct_resume_is_left_running():
    api, client, read, clock = setup([RESUME, RESUME + run(7, 7)])
    out = watch(client, read, clock, old_run())
    assert out["decided"] and not out["stopped"] and out["findings"] == []
    assert not [r for r in api.requests if r[0] == "PATCH"]


def test_no_step_in_time_decides_nothing_and_stops_nothing():
    api, client, read, clock = setup([RESUME])
    out = watch(client, read, clock, old_run())
    assert out["timed_out"] and not out["decided"] and not out["stopped"]
    assert not [r for r in api.requests if r[0] == "PATCH"]


def test_the_original_is_never_watched():
    _api, client, read, _clock = setup([])
    with pytest.raises(ValueError):
        resume_sentinel.watch(client, "orig", "orig", 6, "/c/global_step_6", [], read, "orig-actor-0", 1)
