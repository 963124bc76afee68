# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""jobs.py against the in-memory API: guarded writes, refusals, conflicts, waits."""

import copy
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import jobs
from ansible_collections.rlark.ops.plugins.module_utils.waiter import Waiter, WaitTimeout
from rlark_fake_api import FakeApi, FakeClock, job, make_client, pod_obj, task_obj


def seeded(**kw):
    api = FakeApi()
    api.add("jobs", job(**kw))
    for t in ("actor", "rollout", "env"):
        api.add("tasks", task_obj("demo", t))
        api.add("pods", pod_obj("demo-" + t))
    return api


def test_stop_is_a_guarded_merge_patch_of_stopped_only():
    api = seeded()
    client = make_client(api)
    out = jobs.set_stopped(client, "demo", True)
    assert out["changed"] and out["action"] == "stopped"
    method, path, query, body = api.requests[-1]
    assert method == "PATCH" and path.endswith("/jobs/demo")
    assert body == {
        "metadata": {"resourceVersion": out["before"]["metadata"]["resourceVersion"]},
        "spec": {"stopped": True},
    }
    assert query["fieldValidation"] == "Strict"
    assert api.get("jobs", "demo")["spec"]["stopped"] is True
    assert client.api_calls == 2


def test_stop_twice_is_unchanged_and_writes_nothing():
    api = seeded(stopped=True, phase="Stopped")
    client = make_client(api)
    out = jobs.set_stopped(client, "demo", True)
    assert not out["changed"]
    assert api.count("PATCH") == 0


def test_conflict_rereads_and_decides_again():
    """Someone else stops the Job between our read and our patch: we report no change."""
    api = seeded()
    state = {"done": False}

    def other_writer(method, path, query):
        if method == "PATCH" and not state["done"]:
            state["done"] = True
            live = api.get("jobs", "demo")
            live = copy.deepcopy(live)
            live["spec"]["stopped"] = True
            api.add("jobs", live)

    api.hooks.append(other_writer)
    client = make_client(api)
    out = jobs.set_stopped(client, "demo", True)
    assert not out["changed"]
    assert api.count("PATCH") == 1 and api.count("GET") == 2


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_terminal_jobs_are_refused(phase):
    api = seeded(phase=phase)
    client = make_client(api)
    with pytest.raises(jobs.Refused) as err:
        jobs.set_stopped(client, "demo", True)
    assert err.value.findings[0]["id"] == "job-terminal-phase"
    assert phase in err.value.findings[0]["message"]
    assert api.count("PATCH") == 0


def test_start_of_missing_job_is_refused():
    client = make_client(FakeApi())
    with pytest.raises(jobs.Refused) as err:
        jobs.set_stopped(client, "nope", False)
    assert err.value.findings[0]["id"] == "job-not-found"


def test_present_creates_then_is_unchanged():
    api = FakeApi()
    client = make_client(api)
    desired = job(phase=None)
    assert jobs.ensure_present(client, desired)["action"] == "created"
    again = jobs.ensure_present(client, copy.deepcopy(desired))
    assert again["action"] == "unchanged" and not again["changed"]
    assert api.count("POST") == 1


def test_present_ignores_stopped_and_none_values_but_warns():
    api = FakeApi()
    api.add("jobs", job(stopped=True))
    client = make_client(api)
    desired = job(stopped=False, phase=None)
    desired["spec"]["domain"] = None
    out = jobs.ensure_present(client, desired)
    assert out["action"] == "unchanged"
    assert [f["id"] for f in out["findings"]] == ["job-stopped-ignored"]


def test_present_check_mode_create_is_a_dry_run():
    api = FakeApi()
    client = make_client(api)
    out = jobs.ensure_present(client, job(phase=None), check_mode=True)
    assert out["changed"] and api.get("jobs", "demo") is None
    assert api.requests[-1][2]["dryRun"] == "All"


def test_present_refuses_a_task_set_change_even_with_update():
    api = FakeApi()
    api.add("jobs", job())
    client = make_client(api)
    desired = job(phase=None)
    desired["spec"]["tasks"][2]["name"] = "envs"
    with pytest.raises(jobs.Refused) as err:
        jobs.ensure_present(client, desired, update=True)
    ids = [f["id"] for f in err.value.findings]
    assert "job-task-set-change" in ids
    assert "added ['envs']" in err.value.findings[0]["message"]
    assert api.count("PATCH") == 0


def test_present_refuses_a_node_selector_change():
    api = FakeApi()
    api.add("jobs", job())
    client = make_client(api)
    desired = job(phase=None)
    desired["spec"]["tasks"][1]["nodeSelector"] = {"rlinf.io/pool": "h100"}
    with pytest.raises(jobs.Refused) as err:
        jobs.ensure_present(client, desired, update=True)
    found = [f for f in err.value.findings if f["id"] == "job-node-selector-change"]
    assert found and found[0]["path"] == "spec.tasks[1].nodeSelector"


def test_present_difference_needs_update_and_keeps_stopped():
    api = FakeApi()
    api.add("jobs", job(stopped=True, phase="Stopped"))
    client = make_client(api)
    desired = job(phase=None)
    desired["spec"]["tasks"][0]["runScript"] = "python train.py runner.max_steps=20"
    with pytest.raises(jobs.Refused) as err:
        jobs.ensure_present(client, desired)
    assert "job-spec-differs" in [f["id"] for f in err.value.findings]
    out = jobs.ensure_present(client, desired, update=True)
    assert out["action"] == "updated"
    patch = api.requests[-1][3]
    assert "stopped" not in patch["spec"]
    live = api.get("jobs", "demo")
    assert live["spec"]["stopped"] is True
    assert live["spec"]["tasks"][0]["runScript"].endswith("=20")


def test_update_of_frozen_succeeded_job_is_refused():
    api = FakeApi()
    api.add("jobs", job(phase="Succeeded"))
    client = make_client(api)
    desired = job(phase=None)
    desired["spec"]["domain"] = "d1"
    with pytest.raises(jobs.Refused) as err:
        jobs.ensure_present(client, desired, update=True)
    assert "job-terminal-phase" in [f["id"] for f in err.value.findings]


def test_spec_merge_patch_removes_dropped_keys_and_never_sets_stopped():
    patch = jobs.spec_merge_patch({"stopped": True, "domain": "d", "tasks": [1]}, {"stopped": False, "tasks": [2]})
    assert patch == {"tasks": [2], "domain": None}


def test_delete_refuses_agent_pvcs_naming_the_claims():
    api = FakeApi()
    api.add("jobs", job(pvc=True))
    client = make_client(api)
    with pytest.raises(jobs.Refused) as err:
        jobs.delete_job(client, "demo")
    message = err.value.findings[0]["message"]
    assert err.value.findings[0]["id"] == "job-delete-pvc"
    assert "pvc-demo-actor-ckpt" in message and "pvc-demo-env-ckpt" in message
    assert api.get("jobs", "demo") is not None
    out = jobs.delete_job(client, "demo", allow_pvc_deletion=True)
    assert out["changed"] and api.get("jobs", "demo") is None
    assert api.requests[-1][3]["propagationPolicy"] == "Background"


def test_delete_absent_is_unchanged_and_check_mode_keeps_the_job():
    api = FakeApi()
    client = make_client(api)
    assert not jobs.delete_job(client, "demo")["changed"]
    api.add("jobs", job())
    assert jobs.delete_job(client, "demo", check_mode=True)["changed"]
    assert api.get("jobs", "demo") is not None


def test_read_tree_finds_orphaned_tasks_and_their_pods():
    api = seeded()
    api.add("tasks", task_obj("demo", "oldname", namespace="rlark-h100"))
    api.add("pods", pod_obj("demo-oldname", namespace="rlark-h100", node="h100-01"))
    api.add("pods", pod_obj("other-actor"))
    client = make_client(api)
    tree = jobs.read_tree(client, "demo")
    assert [t["metadata"]["name"] for t in tree["tasks"]] == ["demo-actor", "demo-env", "demo-rollout", "demo-oldname"]
    assert sorted(p["metadata"]["labels"]["rlark.io/task-name"] for p in tree["pods"]) == [
        "demo-actor",
        "demo-env",
        "demo-oldname",
        "demo-rollout",
    ]
    assert client.api_calls == 3


def test_read_many_batches_and_fetches_nodes():
    api = seeded()
    api.add("jobs", job(name="other"))
    api.add("tasks", task_obj("other", "actor"))
    api.add("pods", pod_obj("other-actor"))
    api.add("nodes", {"metadata": {"name": "a100-01", "namespace": "rlark-a100"}})
    client = make_client(api)
    out = jobs.read_many(client, jobs.list_jobs(client))
    assert [e["job"]["metadata"]["name"] for e in out] == ["demo", "other"]
    assert len(out[0]["tasks"]) == 3 and len(out[1]["pods"]) == 1
    assert out[0]["nodes"][0]["metadata"]["name"] == "a100-01"
    # list jobs, list tasks, list pods, one node GET per job entry (cached per call)
    assert client.api_calls == 5


def test_stopped_wait_requires_no_pod_cr_left():
    api = seeded(stopped=True, phase="Stopped")
    for t in list(api.objects):
        if t[0] == "tasks":
            api.objects[t]["spec"]["kubernetes"]["workload"]["replicas"] = 0
    clock = FakeClock()
    client = make_client(api, clock=clock)
    polls = {"n": 0}

    def pods_go_away(method, path, query):
        if path.endswith("/pods") and method == "GET":
            polls["n"] += 1
            if polls["n"] == 3:
                for key in [k for k in api.objects if k[0] == "pods"]:
                    del api.objects[key]

    api.hooks.append(pods_go_away)
    waiter = Waiter(60, interval=2, clock=clock, sleep=clock.sleep)
    tree = waiter.wait(jobs.stopped_check(client, "demo"), "stop")
    assert tree["pods"] == []
    assert polls["n"] == 3
    assert waiter.log[0].endswith("0 task(s) not yet at replicas 0, 3 Pod CR(s) remaining")
    assert waiter.log[-1].endswith("0 task(s) not yet at replicas 0, 0 Pod CR(s) remaining")
    assert len(waiter.log) == 2  # one line per change


def test_started_wait_times_out_with_the_last_state():
    api = seeded()
    api.objects[("tasks", "rlark-a100", "demo-env")]["status"]["phase"] = "Pending"
    clock = FakeClock()
    client = make_client(api, clock=clock)
    waiter = Waiter(10, interval=3, clock=clock, sleep=clock.sleep)
    with pytest.raises(WaitTimeout) as err:
        waiter.wait(jobs.started_check(client, "demo"), "start")
    assert "2 of 3 task(s) Running" in str(err.value)
    assert clock.now - 1000.0 == pytest.approx(10.0)


def test_absent_check():
    api = FakeApi()
    api.add("tasks", task_obj("demo", "actor"))
    client = make_client(api)
    done, summary, _tree = jobs.absent_check(client, "demo")()
    assert not done and summary == "Job gone, 1 task(s) remaining"
