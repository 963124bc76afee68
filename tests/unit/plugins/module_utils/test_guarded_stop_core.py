# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Guarded-stop core: permission check, stop with log tail, gate wait, record outcome fields, selection."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import access, module_runner, stop_logs, stop_record
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import waiting
from ansible_collections.rlark.ops.plugins.module_utils.findings import Refused
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import LogSourceError
from rlark_fake_api import FakeApi, FakeClock, job, make_client
from test_jobs import seeded


class ReviewClient:
    """Answers SelfSubjectReview / SelfSubjectAccessReview like the API server, from a set of allowed verbs."""

    def __init__(self, allowed, username="rlark-viewer"):
        self.allowed = allowed
        self.username = username
        self.asked = []
        self.api_calls = 0
        self.retries = 0

    def request(self, method, path, body=None, content_type=None, **kw):
        self.api_calls += 1
        assert method == "POST"
        if path == access.SELF_REVIEWS:
            return {"status": {"userInfo": {"username": self.username, "groups": ["rlark:viewers"]}}}
        attrs = body["spec"]["resourceAttributes"]
        self.asked.append(attrs)
        return {"status": {"allowed": (attrs["verb"], attrs["resource"]) in self.allowed}}


def test_access_denial_names_identity_verb_and_rbac_file():
    client = ReviewClient({("get", "jobs"), ("list", "tasks"), ("list", "pods")})
    out = access.check_job_access(client, "demo")
    assert [d["verb"] for d in out["denied"]] == ["patch"]
    assert [f["id"] for f in out["findings"]] == ["permission-denied"]
    assert out["findings"][0]["severity"] == "error"
    assert "rlark-viewer" in out["msg"] and "patch jobs.rlinf.io" in out["msg"] and access.RBAC_DOC in out["msg"]
    patch = next(a for a in client.asked if a["verb"] == "patch")
    assert patch == {"group": "rlinf.io", "resource": "jobs", "verb": "patch", "name": "demo"}


def test_access_allowed_has_no_message():
    everything = {(v, r) for v, r, _named in access.GUARDED_STOP_CHECKS}
    out = access.check_job_access(ReviewClient(everything, "rlark-operator"), "demo")
    assert out["denied"] == [] and out["findings"] == [] and out["msg"] == ""
    assert out["identity"]["username"] == "rlark-operator"


def test_access_check_without_a_job_only_asks_who_acts(monkeypatch):
    client = ReviewClient(set(), "rlark-operator")
    client.close = lambda: None
    monkeypatch.setattr(module_runner, "client_from_params", lambda params, timeout=60, log=None: client)
    out = module_runner.run_core({"job": None, "timeout": 5}, access.access_check, 5)
    assert out["identity"] == {"username": "rlark-operator", "groups": ["rlark:viewers"]} and not out.get("failed")
    assert client.asked == [], "no access review without a Job"


def test_merge_log_keeps_lines_a_window_dropped():
    assert stop_logs.merge_log("a\nb\n", "a\nb\nc\n") == "a\nb\nc\n"
    assert stop_logs.merge_log("a\nb\nc\n", "b\nc\nd\n") == "a\nb\nc\nd\n"
    assert stop_logs.merge_log("a\nb\nc\n", "b\nc\n") == "a\nb\nc\n"
    assert stop_logs.merge_log("", "x\n") == "x\n"
    assert stop_logs.merge_log("x\n", "") == "x\n"
    gap = stop_logs.merge_log("a\nb\n", "y\nz\n")
    assert gap.startswith("a\nb\n") and gap.endswith("y\nz\n") and "not available" in gap


def test_stop_reads_logs_before_the_patch_and_tails_until_the_pods_are_gone():
    api = seeded()
    clock = FakeClock()
    client = make_client(api, clock=clock)
    lines = ["Global Step: 5/10"]
    events = []

    def read():
        # A windowed source (RLark's gateway): only the last two lines.
        events.append(("read", api.get("jobs", "demo")["spec"]["stopped"]))
        return {"demo-actor-0": "\n".join(lines[-2:]) + "\n"}

    polls = {"n": 0}

    def scale_down(method, path, query):
        # The trainer writes while its pods go away; they are gone after the third poll.
        if method == "GET" and "/tasks" in path and api.get("jobs", "demo")["spec"]["stopped"]:
            polls["n"] += 1
            lines.append("Saving checkpoint at step %d." % (5 + polls["n"]))
            if polls["n"] == 3:
                for key in [k for k in api.objects if k[0] == "pods"]:
                    del api.objects[key]
                for key in [k for k in api.objects if k[0] == "tasks"]:
                    api.objects[key]["spec"]["kubernetes"]["workload"]["replicas"] = 0

    api.hooks.append(scale_down)
    out = stop_logs.stop_with_logs(
        client, "demo", read, "demo-actor-0", timeout=60, interval=1, clock=clock, sleep=clock.sleep
    )
    assert events[0] == ("read", False), "the first read must come before the stop patch"
    assert out["changed"] and out["action"] == "stopped" and "pods_gone_at" in out
    assert out["head_log"].splitlines() == ["Global Step: 5/10"] + [
        "Saving checkpoint at step %d." % s for s in (6, 7, 8)
    ]
    assert out["head_last_line_seen_at"].endswith("Z") and not out.get("failed")
    assert any("Pod CR(s) remaining" in line for line in out["wait_log"])


def test_unreadable_logs_refuse_before_the_patch():
    api = seeded()
    client = make_client(api)

    def read():
        raise LogSourceError("gateway down")

    with pytest.raises(LogSourceError):
        stop_logs.stop_with_logs(client, "demo", read, "demo-actor-0")
    assert api.get("jobs", "demo")["spec"]["stopped"] is False
    assert api.count("PATCH") == 0


def test_stop_not_ready_by_the_logs_read_before_the_patch_sends_nothing():
    api = seeded()
    client = make_client(api)
    seen = []

    def ready(head_log):
        seen.append(head_log)
        return "Not finished yet: upload done"

    out = stop_logs.stop_with_logs(client, "demo", lambda: {"demo-actor-0": "saving\n"}, "demo-actor-0", ready=ready)
    assert seen == ["saving\n"] and out["msg"] == "Not finished yet: upload done"
    assert "patched_at" not in out and out["head_log"] == "saving\n"
    assert api.get("jobs", "demo")["spec"]["stopped"] is False and api.count("PATCH") == 0


def test_stop_pods_that_never_go_fail_with_what_was_awaited_and_keep_the_logs():
    api = seeded()
    clock = FakeClock()
    client = make_client(api, clock=clock, timeout=600)
    out = stop_logs.stop_with_logs(
        client,
        "demo",
        lambda: {"demo-actor-0": "x\n"},
        "demo-actor-0",
        timeout=5,
        interval=1,
        clock=clock,
        sleep=clock.sleep,
    )
    assert out["failed"] and "Pod CRs of Job demo" in out["msg"] and "Timed out after 5s" in out["msg"]
    assert out["head_log"] == "x\n" and out["action"] == "stopped"


def test_check_mode_stop_is_a_dry_run_without_log_reads():
    api = seeded()
    client = make_client(api)

    def read():
        raise AssertionError("check mode must not read logs")

    out = stop_logs.stop_with_logs(client, "demo", read, "demo-actor-0", check_mode=True)
    assert out["changed"] and api.get("jobs", "demo")["spec"]["stopped"] is False
    patch = next(r for r in api.requests if r[0] == "PATCH")
    assert patch[2].get("dryRun") == "All"


def test_stop_of_a_succeeded_job_is_refused():
    api = FakeApi()
    api.add("jobs", job(phase="Succeeded"))
    with pytest.raises(Refused):
        stop_logs.stop_with_logs(make_client(api), "demo", lambda: {}, "demo-actor-0")


def gate(newest, latest, complete=True):
    return {
        "complete": complete,
        "newest_step": newest,
        "latest_complete_step": latest,
        "step": latest,
        "steps": [{"step": newest, "reasons": ["missing 2 required entries"]}],
        "findings": [],
    }


def test_gate_wait_next_checkpoint_waits_for_a_newer_complete_step():
    results = iter([gate(6, 3, False), gate(6, 3, False), gate(6, 6)])
    clock = FakeClock()
    out = waiting.wait_for_gate(lambda: next(results), newer_than=3, timeout=30, interval=0.5, clock=clock)
    assert not out["timed_out"] and out["latest_complete_step"] == 6
    assert "newer than global_step_3" in out["wait_for"]
    assert len(out["wait_log"]) == 2 and "global_step_6" in out["wait_log"][-1]


def test_gate_wait_timeout_says_what_was_awaited():
    clock = FakeClock()

    def judge():
        clock.now += 1
        return gate(6, 3, False)

    out = waiting.wait_for_gate(judge, newer_than=-1, newest_complete=True, timeout=3, interval=1, clock=clock)
    assert out["timed_out"] and "newest checkpoint to be complete" in out["wait_msg"]
    assert "Timed out after 3s" in out["wait_msg"] and "missing 2 required entries" in out["wait_msg"]


def test_not_ready_reason_lets_only_the_awaited_checkpoint_through():
    clock = FakeClock()

    def judge():
        clock.now += 1
        return gate(6, 3, False)

    waited = waiting.wait_for_gate(judge, newer_than=3, timeout=2, interval=1, clock=clock)
    reason = waiting.not_ready_reason(waited, newer_than=3)
    assert reason.startswith("Timed out after 2s") and "newer than global_step_3" in reason
    assert "missing 2 required entries" in reason
    assert waiting.not_ready_reason(gate(6, 6), newer_than=3) == ""
    assert waiting.not_ready_reason(gate(6, 3), newer_than=3, newest_complete=False) != ""


def test_gate_wait_judge_once_is_no_timeout():
    out = waiting.wait_for_gate(lambda: gate(6, 3, False), timeout=0, clock=FakeClock())
    assert out["timed_out"] is False and out["newest_step"] == 6


def test_lost_work_counts_steps_logged_after_the_checkpoint():
    log = "Saving checkpoint at step 6.\nGlobal Step: 6/10\nGlobal Step: 7/10\n"
    assert stop_record.lost_work(log, 6)["steps_after_checkpoint"] == 1
    assert stop_record.lost_work("Global Step: 6/10\n", 6)["steps_after_checkpoint"] == 0
    assert stop_record.lost_work("", 6)["steps_after_checkpoint"] is None
    # An earlier run of the same Job in the same log file does not count.
    earlier = "Global Step: 11/20\nSaving checkpoint at step 3.\nGlobal Step: 3/20\nGlobal Step: 4/20\n"
    assert stop_record.lost_work(earlier, 3)["steps_after_checkpoint"] == 1


def test_outcome_fields_never_read_like_a_stop_when_it_failed():
    out = stop_record.outcome_fields(
        "failed", "pods stayed", {"username": "op"}, {"jobs": ["demo"]}, {"patched_at": "t", "head_log": ""}, 6
    )
    assert out["outcome"] == "failed" and out["reason"] == "pods stayed" and out["identity"]["username"] == "op"
    assert out["collection_version"] not in ("", "unknown")
    with pytest.raises(ValueError):
        stop_record.outcome_fields("stopped-ish")
