# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Guarded writes under faults: a conflicting DELETE, and PATCH/DELETE answers lost after the server applied them."""

import copy
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import jobs
from rlark_fake_api import FakeApi, job, make_client, status, task_obj

UNAVAILABLE = status(503, "ServiceUnavailable", "etcd leader changed")
# The server applied the write; the client hears a 503 or a reset instead of the answer.
LOST_ANSWERS = pytest.mark.parametrize(
    "fault",
    [("apply-then-respond", UNAVAILABLE), ("apply-then-raise", ConnectionResetError(104, "Connection reset by peer"))],
    ids=["503-after-apply", "reset-after-apply"],
)
THROTTLED = (429, {"retry-after": "1"}, status(429, "TooManyRequests", "slow down")[2])


def seeded(**kw):
    api = FakeApi()
    api.add("jobs", job(**kw))
    for t in ("actor", "rollout", "env"):
        api.add("tasks", task_obj("demo", t))
    return api


def other_writer_once(api, method, change):
    """A hook that rewrites the Job (new resourceVersion) just before our first ``method`` reaches it."""
    state = {"done": False}

    def hook(seen_method, path, query):
        if seen_method == method and not state["done"]:
            state["done"] = True
            live = copy.deepcopy(api.get("jobs", "demo"))
            change(live)
            api.add("jobs", live)

    api.hooks.append(hook)


def add_agent_pvc(live):
    pod_spec = live["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]
    pod_spec["volumes"] = [{"name": "ckpt", "persistentVolumeClaim": {"claimName": ""}}]


def deletes(api):
    return [body for method, _path, _query, body in api.requests if method == "DELETE"]


def test_delete_conflict_rechecks_pvc_claims_and_keeps_the_job():
    """Someone adds an agent PVC between our read and our DELETE: the 409 re-reads and refuses."""
    api = seeded()
    other_writer_once(api, "DELETE", add_agent_pvc)
    client = make_client(api)
    with pytest.raises(jobs.Refused) as err:
        jobs.delete_job(client, "demo")
    assert [(f["id"], f["severity"]) for f in err.value.findings] == [("job-delete-pvc", "error")]
    assert api.get("jobs", "demo") is not None
    assert len(deletes(api)) == 1


def test_delete_conflict_deletes_again_with_the_new_precondition():
    api = seeded()
    other_writer_once(api, "DELETE", lambda live: live["metadata"].setdefault("labels", {}).update(team="x"))
    client = make_client(api)
    out = jobs.delete_job(client, "demo")
    assert out["changed"] and out["action"] == "deleted"
    assert api.get("jobs", "demo") is None
    sent = deletes(api)
    assert len(sent) == 2 and all(body.get("preconditions", {}).get("resourceVersion") for body in sent)
    assert sent[0]["preconditions"] != sent[1]["preconditions"]


@LOST_ANSWERS
def test_stop_applied_before_a_lost_answer_reports_changed(fault):
    api = seeded()
    api.fail_next(fault, method="PATCH")
    client = make_client(api)
    out = jobs.set_stopped(client, "demo", True)
    assert out["changed"] and out["action"] == "stopped", out
    assert out["job"]["spec"]["stopped"] is True
    assert api.get("jobs", "demo")["spec"]["stopped"] is True
    assert api.count("PATCH") == 1  # read back instead of re-sent
    assert client.retries == 1


def test_stop_throttled_with_429_is_resent_and_reports_changed():
    api = seeded()
    api.fail_next(THROTTLED, method="PATCH")
    client = make_client(api)
    out = jobs.set_stopped(client, "demo", True)
    assert out["changed"] and out["action"] == "stopped"
    assert api.count("PATCH") == 2 and api.get("jobs", "demo")["spec"]["stopped"] is True


def test_stop_503_before_apply_is_resent():
    api = seeded()
    api.fail_next(UNAVAILABLE, method="PATCH")
    client = make_client(api)
    out = jobs.set_stopped(client, "demo", True)
    assert out["changed"] and api.count("PATCH") == 2
    assert api.get("jobs", "demo")["spec"]["stopped"] is True


def test_update_applied_before_a_lost_answer_reports_changed():
    api = seeded()
    desired = job(phase=None)
    desired["spec"]["tasks"][0]["runScript"] = "python train.py runner.max_steps=20"
    api.fail_next(("apply-then-respond", UNAVAILABLE), method="PATCH")
    client = make_client(api)
    out = jobs.ensure_present(client, desired, update=True)
    assert out["changed"] and out["action"] == "updated"
    assert api.count("PATCH") == 1
    assert api.get("jobs", "demo")["spec"]["tasks"][0]["runScript"].endswith("max_steps=20")


@LOST_ANSWERS
def test_delete_applied_before_a_lost_answer_reports_changed(fault):
    api = seeded()
    api.fail_next(fault, method="DELETE")
    client = make_client(api)
    out = jobs.delete_job(client, "demo")
    assert out["changed"] and out["action"] == "deleted"
    assert api.get("jobs", "demo") is None
    assert len(deletes(api)) == 1


def test_delete_throttled_with_429_is_resent():
    api = seeded()
    api.fail_next(THROTTLED, method="DELETE")
    client = make_client(api)
    out = jobs.delete_job(client, "demo")
    assert out["changed"] and api.get("jobs", "demo") is None
    assert len(deletes(api)) == 2
