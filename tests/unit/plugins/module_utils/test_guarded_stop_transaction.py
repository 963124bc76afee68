# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The guarded stop as a transaction: records checked first, pending record before the patch, the truth after
any fault, recovery by the next run. Records are read back with plain file reads and yaml."""

import errno
import os
import socket
import sys

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop import journal
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop.outcomes import refusal_outcome
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop.policy import (
    StopPolicy,
    gate_verdict,
    markers_reason,
)
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop.transaction import GuardedStop
from rlark_fake_api import FakeClock, make_client, status, task_obj
from test_jobs import seeded

RUN = "20261202T070000Z-guarded-stop-aaaaaa"
LATER = "20261202T080000Z-guarded-stop-bbbbbb"
HEAD = "demo-actor-0"
COMPLETE = {
    "complete": True,
    "newest_step": 40,
    "latest_complete_step": 40,
    "step": 40,
    "checkpoint": "/ckpt/global_step_40",
    "steps": [],
    "findings": [],
}
INCOMPLETE = dict(
    COMPLETE,
    complete=False,
    latest_complete_step=38,
    step=38,
    steps=[{"step": 40, "reasons": ["missing .metadata"]}],
    findings=[{"id": "dcp-metadata-missing", "severity": "error", "message": "missing .metadata"}],
)


def resource(api):
    tasks = [o for (plural, _ns, _n), o in api.objects.items() if plural == "tasks"]
    pods = [o for (plural, _ns, _n), o in api.objects.items() if plural == "pods"]
    return {"job": api.get("jobs", "demo"), "tasks": tasks, "pods": pods}


def pods_go_after(api, polls):
    """After ``polls`` reads of the Tasks following the stop, the agent has scaled down and removed the pods."""
    seen = {"n": 0}

    def hook(method, path, query):
        if method == "GET" and path.endswith("/tasks") and api.get("jobs", "demo")["spec"]["stopped"]:
            seen["n"] += 1
            if seen["n"] >= polls:
                for key in [k for k in api.objects if k[0] == "pods"]:
                    del api.objects[key]
                for key in [k for k in api.objects if k[0] == "tasks"]:
                    api.objects[key]["spec"]["kubernetes"]["workload"]["replicas"] = 0

    api.hooks.append(hook)


def make_stop(api, records, run_id=RUN, gate_result=None, log="Global Step: 40\n", check_mode=False, **options):
    clock = FakeClock()
    client = make_client(api, clock=clock, timeout=3600)
    asked = []

    gate_result = COMPLETE if gate_result is None else gate_result
    results = list(gate_result) if isinstance(gate_result, list) else [gate_result]

    def gate(wait):
        asked.append(wait)
        return dict(results[min(len(asked), len(results)) - 1], judged_at=1.0)

    def read_logs(export_dir):
        return lambda since=None, follow=False: None if follow else {HEAD: log}  # a source that cannot follow

    stop = GuardedStop(
        client, resource(api), run_id, StopPolicy(**options.pop("policy", {})), gate, read_logs,
        {"dir": str(records), "mode": 0o640, "identity": {"user": "ops"}}, HEAD,
        check_mode=check_mode, clock=clock, sleep=clock.sleep, interval=1, wait_timeout=60, **options,
    )  # fmt: skip
    stop.asked = asked
    return stop


def record(records, run_id=RUN):
    with open(os.path.join(str(records), "demo", run_id, "stop.yml")) as fh:
        return yaml.safe_load(fh)


def leftovers(records):
    """Hidden files or directories anywhere under the records root."""
    return sorted(
        os.path.join(root, n) for root, dirs, files in os.walk(str(records)) for n in dirs + files if n.startswith(".")
    )


def test_pending_record_and_logs_are_on_disk_before_the_patch_then_replaced_by_the_outcome(tmp_path):
    api = seeded()
    pods_go_after(api, 2)
    seen_at_patch = []

    def at_patch(method, path, query):
        if method == "PATCH":
            seen_at_patch.append(record(tmp_path)["outcome"])
            seen_at_patch.append(os.path.exists(os.path.join(str(tmp_path), "demo", RUN, "log-%s.log" % HEAD)))

    api.hooks.append(at_patch)
    out = make_stop(api, tmp_path).run()
    assert seen_at_patch == ["pending", True]
    assert out["outcome"] == "stopped" and out["step"] == 40 and out["record"].endswith("stop.yml")
    done = record(tmp_path)
    assert done["outcome"] == "stopped" and done["data"]["pods_gone_at"]
    assert done["data"]["transaction"]["run_id"] == RUN and done["data"]["transaction"]["patched_at"]
    assert api.get("jobs", "demo")["metadata"]["annotations"][journal.ANNOTATION] == RUN
    patch = next(body for method, _p, _q, body in api.requests if method == "PATCH")
    assert patch["spec"] == {"stopped": True} and set(patch["metadata"]) == {"resourceVersion", "annotations"}
    with open(os.path.join(str(tmp_path), "demo", RUN, "log-%s.log" % HEAD)) as fh:
        assert fh.read() == "Global Step: 40\n"
    assert leftovers(tmp_path) == []


def test_incomplete_checkpoint_is_refused_with_no_record_and_no_leftover(tmp_path):
    api = seeded()
    out = make_stop(api, tmp_path, gate_result=INCOMPLETE).run()
    assert out["outcome"] == "refused" and "global_step_40 is incomplete" in out["reason"]
    assert [(f["id"], f["severity"]) for f in out["findings"]] == [("dcp-metadata-missing", "error")]
    assert api.count("PATCH") == 0 and not os.path.exists(os.path.join(str(tmp_path), "demo"))
    assert leftovers(tmp_path) == []


def test_unwritable_records_location_refuses_before_the_gate(tmp_path):
    api = seeded()
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    stop = make_stop(api, blocker / "records")
    out = stop.run()
    assert out["outcome"] == "refused" and stop.asked == [], "the gate must not run"
    assert [(f["id"], f["severity"]) for f in out["findings"]] == [("records-unwritable", "error")]
    assert "rlark_records_dir" in out["reason"] and api.count("PATCH") == 0


def test_records_location_without_room_refuses_before_the_gate(tmp_path, monkeypatch):
    api = seeded()
    real = os.statvfs

    class Small:
        def __init__(self, stats):
            self.f_frsize, self.f_bavail = stats.f_frsize, (1 << 20) // stats.f_frsize

    monkeypatch.setattr(journal.os, "statvfs", lambda p: Small(real(p)))
    stop = make_stop(api, tmp_path, expected_log_bytes=1 << 20)
    out = stop.run()
    assert [(f["id"], f["severity"]) for f in out["findings"]] == [("records-no-room", "error")]
    assert "rlark_records_dir" in out["reason"] and "1.0 MiB free" in out["reason"]
    assert stop.asked == [] and api.count("PATCH") == 0 and os.listdir(str(tmp_path)) == []


def test_api_server_lost_after_the_patch_is_stopped_unconfirmed_never_refused(tmp_path):
    api = seeded()

    def lost(method, path, query):
        if api.count("PATCH") and method == "GET":
            raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")

    api.hooks.append(lost)
    out = make_stop(api, tmp_path, deadline=30).run()
    assert out["outcome"] == "stopped-unconfirmed" and "re-run the guarded stop" in out["reason"]
    assert api.get("jobs", "demo")["spec"]["stopped"] is True
    on_disk = record(tmp_path)
    assert on_disk["outcome"] == "stopped-unconfirmed" and on_disk["data"]["pods_gone_at"] is None
    assert leftovers(tmp_path) == []


def test_records_filesystem_full_after_the_patch_keeps_the_pending_record_and_says_so(tmp_path, monkeypatch):
    api = seeded()
    pods_go_after(api, 1)
    real = journal.replace_record

    def full(path, text, mode=0o640):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal, "replace_record", full)
    out = make_stop(api, tmp_path).run()
    assert out["outcome"] == "stopped-unconfirmed" and "No space left on device" in out["reason"]
    assert record(tmp_path)["outcome"] == "pending"
    # The next run (space freed) completes the record of this one.
    monkeypatch.setattr(journal, "replace_record", real)
    again = make_stop(api, tmp_path, run_id=LATER).run()
    assert again["outcome"] == "stopped" and again.get("recovered") is True and RUN in again["reason"]
    done = record(tmp_path)
    assert done["outcome"] == "stopped" and done["data"]["recovery"]["by_run"] == LATER
    assert done["data"]["recovery"]["left_as"] == "pending"
    assert not os.path.exists(os.path.join(str(tmp_path), "demo", LATER)), "recovery writes into the stop's record"
    assert leftovers(tmp_path) == []


def test_a_complete_record_makes_a_rerun_already_stopped(tmp_path):
    api = seeded()
    pods_go_after(api, 1)
    assert make_stop(api, tmp_path).run()["outcome"] == "stopped"
    again = make_stop(api, tmp_path, run_id=LATER).run()
    assert again["outcome"] == "already stopped" and "record is complete (stopped)" in again["reason"]
    assert api.count("PATCH") == 1


def test_a_job_stopped_by_someone_else_is_already_stopped_without_a_record(tmp_path):
    api = seeded(stopped=True)
    out = make_stop(api, tmp_path).run()
    assert out["outcome"] == "already stopped" and out["reason"] == "spec.stopped was already true; nothing to do"
    assert api.count("PATCH") == 0 and os.listdir(str(tmp_path)) == []


def test_stop_between_the_read_and_the_patch_is_someone_elses_and_leaves_no_record(tmp_path):
    api = seeded()

    def person(method, path, query):
        if method == "GET" and path.endswith("/jobs/demo") and not api.count("PATCH"):
            api.objects[("jobs", None, "demo")]["spec"]["stopped"] = True

    api.hooks.append(person)
    out = make_stop(api, tmp_path).run()
    assert out["outcome"] == "already stopped" and "someone else" in out["reason"]
    assert api.count("PATCH") == 0 and not os.path.exists(os.path.join(str(tmp_path), "demo", RUN))
    assert leftovers(tmp_path) == []


def test_check_mode_judges_and_writes_nothing(tmp_path):
    api = seeded()
    out = make_stop(api, tmp_path, check_mode=True).run()
    assert out["outcome"] == "would stop" and out["reason"] == "would stop at step 40"
    assert api.count("PATCH") == 0 and os.listdir(str(tmp_path)) == []
    refused = make_stop(api, tmp_path, gate_result=INCOMPLETE, check_mode=True).run()
    assert refused["outcome"] == "refused" and refused["reason"].startswith("would refuse: ")


def test_markers_missing_in_the_head_log_refuse_before_any_record(tmp_path):
    api = seeded()
    policy = {"done_markers": [{"name": "uploads finished", "regex": "upload done"}]}
    out = make_stop(api, tmp_path, policy=policy).run()
    assert out["outcome"] == "refused" and out["reason"] == "Not finished yet: uploads finished"
    assert api.count("PATCH") == 0 and leftovers(tmp_path) == [] and os.listdir(str(tmp_path)) == []


def test_next_checkpoint_waits_for_a_step_newer_than_the_complete_one(tmp_path):
    api = seeded()
    pods_go_after(api, 1)
    newer = dict(COMPLETE, newest_step=44, latest_complete_step=44, step=44)
    policy = {"when": "next_checkpoint", "next_checkpoint_timeout": 99}
    stop = make_stop(api, tmp_path, gate_result=[COMPLETE, newer], policy=policy)
    out = stop.run()
    assert out["outcome"] == "stopped" and out["step"] == 44
    assert [w["after_step"] for w in stop.asked] == [-1, 40] and stop.asked[1]["wait_timeout"] == 99.0
    assert stop.asked[0]["integrity"] == "off"


def test_progress_lines_while_the_api_server_does_not_answer_are_throttled(tmp_path):
    api = seeded()
    lines = []

    def lost(method, path, query):
        if api.count("PATCH"):
            raise socket.timeout("timed out")

    api.hooks.append(lost)
    out = make_stop(api, tmp_path, deadline=60, progress=lines.append).run()
    assert out["outcome"] == "stopped-unconfirmed"
    retries = [line for line in lines if line.startswith("waiting for the API server (rlark_stop_deadline 60 s)")]
    assert 1 <= len(retries) <= 7, retries


def test_an_unknown_when_names_the_variable():
    with pytest.raises(ValueError, match="rlark_stop_when"):
        StopPolicy(when="later")


NOW = {"after_step": -1, "newest_complete": True}
GATE_40_OF_42 = dict(COMPLETE, newest_step=42, steps=[{"step": 42, "reasons": [".metadata is missing"]}])


def test_gate_verdict_needs_the_newest_step_complete():
    ok, reason = gate_verdict(GATE_40_OF_42, NOW)
    assert not ok and "global_step_42 is incomplete" in reason and ".metadata is missing" in reason
    assert gate_verdict(COMPLETE, NOW) == (True, "")
    timed_out = dict(GATE_40_OF_42, timed_out=True, wait_msg="Waited 5 s for step 42.")
    assert gate_verdict(timed_out, NOW)[1].startswith("Waited 5 s for step 42. the newest checkpoint")
    assert gate_verdict({"skipped": True}, NOW) == (False, "the checkpoint gate did not run")
    assert gate_verdict({"failed": True, "msg": "no such bucket"}, NOW) == (False, "no such bucket")
    assert gate_verdict(COMPLETE, {"after_step": 40, "newest_complete": True})[0] is False
    assert gate_verdict(COMPLETE, {"after_step": 39, "newest_complete": True}) == (True, "")


def test_markers_reason_names_what_is_missing():
    markers = [{"name": "uploads", "regex": "upload done"}]
    assert markers_reason([], "anything") == ""
    assert markers_reason(markers, "x\nupload done\n") == ""
    assert markers_reason(markers, "x\n") == "Not finished yet: uploads"


def test_refusal_outcome_tells_a_stop_done_meanwhile():
    refused = refusal_outcome("d", "incomplete", check_mode=True, step=42, findings=[{"id": "x"}])
    assert refused["outcome"] == "refused" and refused["reason"] == "would refuse: incomplete"
    assert refused["step"] == 42 and refused["findings"] == [{"id": "x"}]
    meanwhile = refusal_outcome("d", "incomplete", stopped_now=True, check_mode=True)
    assert meanwhile["outcome"] == "already stopped" and meanwhile["reason"].startswith("stopped meanwhile")
    assert refusal_outcome("d", "x", stopped_before=True, stopped_now=True)["outcome"] == "refused"


def test_a_task_in_two_clusters_is_refused_before_any_record_or_patch(tmp_path):
    api = seeded()
    api.add("tasks", task_obj("demo", "actor", namespace="rlark-h100"))
    out = make_stop(api, tmp_path).run()
    assert out["outcome"] == "refused"
    assert [(f["id"], f["severity"]) for f in out["findings"]] == [("task-duplicate-namespaces", "error")]
    assert api.count("PATCH") == 0 and os.listdir(str(tmp_path)) == []


def test_a_task_copy_appearing_after_the_patch_fails_the_stop_with_the_truth(tmp_path):
    api = seeded()

    def copy_appears(method, path, query):
        if method == "PATCH" and ("tasks", "rlark-h100", "demo-actor") not in api.objects:
            api.add("tasks", task_obj("demo", "actor", namespace="rlark-h100"))

    api.hooks.append(copy_appears)
    out = make_stop(api, tmp_path).run()
    assert out["outcome"] == "failed" and "rlark-h100" in out["reason"]
    assert record(tmp_path)["outcome"] == "failed"


def test_a_missing_or_finished_job_is_refused_before_the_records_check(tmp_path):
    api = seeded()
    stop = make_stop(api, tmp_path / "not" / "checked")
    stop.job, stop.name = {}, "gone"
    out = stop.run()
    assert [(f["id"], f["severity"]) for f in out["findings"]] == [("job-not-found", "error")]
    assert out["reason"] == "Job gone does not exist." and stop.asked == []
    finished = seeded(phase="Succeeded")
    stop = make_stop(finished, tmp_path)
    out = stop.run()
    assert [(f["id"], f["severity"]) for f in out["findings"]] == [("job-terminal-phase", "error")]
    assert stop.asked == [] and finished.count("PATCH") == 0 and os.listdir(str(tmp_path)) == []


def test_a_restarted_api_server_answering_403_for_a_while_does_not_end_the_stop(tmp_path):
    api = seeded()
    pods_go_after(api, 2)
    forbidden = status(403, "Forbidden", 'jobs.rlinf.io "demo" is forbidden: RBAC not synced yet')
    armed = []

    def restarted(method, path, query):
        if method == "PATCH" and not armed:
            armed.append(True)
            api.fail_next(forbidden, method="GET", times=3)

    api.hooks.append(restarted)
    out = make_stop(api, tmp_path).run()
    assert out["outcome"] == "stopped", out["reason"]
    assert any("the API server answered" in line for line in out["stop"]["wait_log"])
    assert record(tmp_path)["outcome"] == "stopped"


def test_a_final_record_that_cannot_be_written_leaves_the_published_logs_as_they_were(tmp_path, monkeypatch):
    wal = journal.StopJournal(str(tmp_path), "demo", RUN)
    first = tmp_path / "first.log"
    first.write_text("a\n")
    wal.begin({"x": 1}, [{"pod": HEAD, "path": str(first)}])
    later = tmp_path / "later.log"
    later.write_text("a\nb\n")

    def full(path, text, mode=0o640):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal, "replace_record", full)
    with pytest.raises(OSError):
        wal.finish("stopped", {"x": 2}, [{"pod": HEAD, "path": str(later)}])
    published = tmp_path / "demo" / RUN / ("log-%s.log" % HEAD)
    assert published.read_text() == "a\n" and record(tmp_path)["outcome"] == "pending"
    assert leftovers(tmp_path) == []
