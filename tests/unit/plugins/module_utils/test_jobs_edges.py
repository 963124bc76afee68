# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""jobs.py's write path at its edges (issue 26's surviving mutants): a Job that keeps changing under every
guarded write is given up on after exactly MAX_CONFLICT_RETRIES writes, with a message that says so."""

import copy
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import jobs
from rlark_fake_api import FakeApi, job, make_client, pod_obj, status, task_obj
from test_jobs_write_faults import seeded  # the Job and its three Tasks, no Pod CRs


def always_changing(api, method):
    """Another writer rewrites the Job (a new resourceVersion) just before each of our ``method`` requests."""

    def hook(seen_method, path, query):
        if seen_method == method and path.endswith("/jobs/demo"):
            api.add("jobs", copy.deepcopy(api.get("jobs", "demo")))

    api.hooks.append(hook)


def gave_up(err):
    return err.value.args[0], [(f["id"], f["severity"], f["message"]) for f in err.value.findings]


GAVE_UP = [("job-conflict", "error", "Gave up after 5 conflicting writes.")]


@pytest.mark.parametrize("stopped, action", [(True, "stop"), (False, "start")])
def test_a_stop_or_start_gives_up_after_five_conflicting_writes(stopped, action):
    api = seeded(stopped=not stopped)
    always_changing(api, "PATCH")
    with pytest.raises(jobs.Refused) as err:
        jobs.set_stopped(make_client(api), "demo", stopped)
    assert gave_up(err) == ("Job 'demo' kept changing while trying to %s it." % action, GAVE_UP)
    assert api.count("PATCH") == jobs.MAX_CONFLICT_RETRIES == 5


def test_an_update_gives_up_after_five_conflicting_writes():
    api = seeded()
    always_changing(api, "PATCH")
    desired = job()
    desired["spec"]["tasks"][0]["runScript"] = "python train.py runner.max_steps=20"
    with pytest.raises(jobs.Refused) as err:
        jobs.ensure_present(make_client(api), desired, update=True)
    assert gave_up(err) == ("Job 'demo' kept changing while it was updated.", GAVE_UP)
    assert api.count("PATCH") == 5


def test_a_delete_gives_up_after_five_conflicting_writes():
    api = seeded()
    always_changing(api, "DELETE")
    with pytest.raises(jobs.Refused) as err:
        jobs.delete_job(make_client(api), "demo")
    assert gave_up(err) == ("Job 'demo' kept changing while it was deleted.", GAVE_UP)
    assert api.count("DELETE") == 5 and api.get("jobs", "demo") is not None


def test_a_stop_whose_answer_is_lost_reports_changed_when_its_annotations_landed():
    # The guarded stop names its run in an annotation; read back (a fresh JSON string), it still counts as ours.
    api = seeded()
    api.fail_next(("apply-then-respond", status(503, "ServiceUnavailable", "etcd leader changed")), method="PATCH")
    run = {"rlark.io/stop-run": "20261201T010203Z-stop-abc123"}
    out = jobs.set_stopped(make_client(api), "demo", True, annotations=run)
    assert out["changed"] and out["action"] == "stopped", out
    assert api.count("PATCH") == 1  # read back, not re-sent


def pvc_job(*tasks_with_claims, storage=None):
    live = job()
    for task in live["spec"]["tasks"]:
        if task["name"] in tasks_with_claims:
            workload = task["kubernetes"]["workload"]
            workload["template"]["spec"]["volumes"] = [{"name": "ckpt", "persistentVolumeClaim": {"claimName": ""}}]
            if storage:
                workload["pvcStorageMap"] = storage
    return live


def test_a_generated_claim_finds_its_storage_class_by_its_generated_name():
    [claim] = jobs.pvc_claims(pvc_job("actor", storage={"pvc-demo-actor-ckpt": "fast-ssd"}))
    assert (claim["claim"], claim["generated_name"], claim["storage_class"]) == (
        "pvc-demo-actor-ckpt",
        True,
        "fast-ssd",
    )


def test_the_pvc_refusal_points_at_the_first_template_with_a_claim():
    refusal = jobs.pvc_refusal(pvc_job("rollout", "env"))
    assert refusal.args[0] == "Refusing to delete Job 'demo'."
    [found] = refusal.findings
    assert found["path"] == "spec.tasks[1].kubernetes.workload.template.spec.volumes"
    assert "pvc-demo-env-ckpt, pvc-demo-rollout-ckpt" in found["message"]


def test_waiting_for_the_terminal_phase_a_job_is_in_is_done():
    api = seeded(phase="Succeeded")
    done, summary, _tree = jobs.phase_check(make_client(api), "demo", "Succeeded")()
    assert (done, summary) == (True, "phase Succeeded")


@pytest.mark.parametrize("current, wanted", [("Succeeded", "Failed"), ("Failed", "Succeeded"), ("Failed", "Running")])
def test_waiting_for_another_phase_of_a_terminal_job_is_refused(current, wanted):
    api = seeded(phase=current)
    with pytest.raises(jobs.Refused) as err:
        jobs.phase_check(make_client(api), "demo", wanted)()
    assert err.value.args[0] == "Job 'demo' is %s and will never be %s." % (current, wanted)
    assert [(f["id"], f["severity"]) for f in err.value.findings] == [("wait-phase-unreachable", "error")]


@pytest.mark.parametrize("count, selectors", [(50, [50]), (51, [50, 1]), (101, [50, 50, 1])])
def test_pods_are_listed_in_one_call_per_50_task_names(count, selectors):
    api = FakeApi()
    names = ["demo-t%03d" % i for i in range(count)]
    for name in names:
        api.add("pods", pod_obj(name))
    pods = jobs.list_pods(make_client(api), names)
    assert sorted(p["metadata"]["labels"]["rlark.io/task-name"] for p in pods) == names
    lists = [q["labelSelector"] for method, path, q, _b in api.requests if method == "GET" and path.endswith("/pods")]
    assert [len(s.split("(", 1)[1].split(",")) for s in lists] == selectors


def test_a_claim_after_a_volume_of_another_kind_is_found():
    live = pvc_job("actor")
    volumes = live["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["volumes"]
    volumes.insert(0, {"name": "scratch", "emptyDir": {}})
    assert [c["claim"] for c in jobs.pvc_claims(live)] == ["pvc-demo-actor-ckpt"]


def test_a_job_deleted_by_someone_else_between_read_and_delete_is_unchanged():
    api = seeded()
    api.fail_next(status(404, "NotFound", 'jobs "demo" not found'), method="DELETE")
    out = jobs.delete_job(make_client(api), "demo")
    assert out == {"changed": False, "job": None, "before": None, "action": "unchanged"}


def test_a_differing_job_without_update_is_refused_by_name():
    api = seeded()
    desired = job()
    desired["spec"]["tasks"][0]["runScript"] = "python train.py runner.max_steps=20"
    with pytest.raises(jobs.Refused) as err:
        jobs.ensure_present(make_client(api), desired)
    assert err.value.args[0] == "Refusing to change Job 'demo'."
    [found] = [f for f in err.value.findings if f["id"] == "job-spec-differs"]
    assert found["message"] == "The live Job 'demo' differs from the definition and update is false."


def test_a_job_whose_task_landed_in_default_can_never_become_running():
    api = seeded()
    api.add("tasks", task_obj("demo", "env", namespace="default"))
    with pytest.raises(jobs.Refused) as err:
        jobs.started_check(make_client(api), "demo")()
    assert err.value.args[0] == "Job 'demo' cannot become Running."
    assert ("task-default-namespace", "error") in [(f["id"], f["severity"]) for f in err.value.findings]


@pytest.mark.parametrize("stopped, action", [(True, "stop"), (False, "start")])
def test_a_missing_job_cannot_be_stopped_or_started_by_name(stopped, action):
    with pytest.raises(jobs.Refused) as err:
        jobs.set_stopped(make_client(FakeApi()), "demo", stopped)
    assert err.value.args[0] == "Job 'demo' does not exist."
    assert [f["message"] for f in err.value.findings] == ["Job 'demo' does not exist, so it cannot %s." % action]


@pytest.mark.parametrize("current", ["Pending", "Creating", "Stopped"])
def test_waiting_for_running_is_not_done_in_another_phase(current):
    api = seeded(phase=current)
    done, summary, _tree = jobs.phase_check(make_client(api), "demo", "Running")()
    assert (done, summary) == (False, "phase %s" % current)


@pytest.mark.parametrize("live, desired", [(False, True), (True, False)])
def test_present_warns_that_it_never_changes_stopped_either_way(live, desired):
    api = seeded(stopped=live)
    wanted = job(stopped=desired)
    out = jobs.ensure_present(make_client(api), wanted)
    assert (out["changed"], out["action"]) == (False, "unchanged")
    assert [(f["id"], f["severity"], f["message"]) for f in out["findings"]] == [
        (
            "job-stopped-ignored",
            "warning",
            "state=present never changes spec.stopped (live %s, desired %s)." % (live, desired),
        )
    ]


def test_a_gone_job_is_stopped_and_a_task_still_scaled_is_not():
    assert jobs.stop_state("demo", {"job": None, "tasks": [], "pods": []}) == (True, "the Job is gone")
    tree = {"job": job(), "tasks": [task_obj("demo", "actor", replicas=1)], "pods": []}
    assert jobs.stop_state("demo", tree) == (False, "1 task(s) not yet at replicas 0, 0 Pod CR(s) remaining")


def test_started_counts_running_tasks_and_names_the_missing_ones():
    api = FakeApi()
    api.add("jobs", job())
    api.add("tasks", task_obj("demo", "actor"))
    api.add("tasks", task_obj("demo", "rollout", phase="Stopped"))  # sorts after Running: still not Running
    done, summary, _tree = jobs.started_check(make_client(api), "demo")()
    assert (done, summary) == (False, "1 of 3 task(s) Running, missing ['demo-env']")


def test_read_many_reads_tasks_of_every_job_in_chunks_of_50():
    api = FakeApi()
    names = ["job-%03d" % i for i in range(51)]
    for name in names:
        api.add("jobs", job(name=name, tasks=[{"name": "actor", "head": True, "role": "Actor"}]))
        api.add("tasks", task_obj(name, "actor"))
    client = make_client(api)
    out = jobs.read_many(client, jobs.list_jobs(client), with_nodes=False)
    assert [[t["metadata"]["name"] for t in e["tasks"]] for e in out] == [["%s-actor" % n] for n in names]
    lists = [q for method, path, q, _b in api.requests if method == "GET" and path.endswith("/tasks")]
    assert len(lists) == 2


def test_start_of_a_stopped_job_patches_it():
    api = seeded(stopped=True, phase="Stopped")
    out = jobs.set_stopped(make_client(api), "demo", False)
    assert (out["changed"], out["action"]) == (True, "started")
    assert api.get("jobs", "demo")["spec"]["stopped"] is False


def test_an_update_whose_patch_failed_before_it_applied_is_sent_again():
    # A 503 the server answered without applying: the read-back finds the old spec, so the PATCH is re-sent.
    api = seeded()
    api.fail_next(status(503, "ServiceUnavailable", "etcd leader changed"), method="PATCH")
    desired = job()
    desired["spec"]["tasks"][0]["runScript"] = "python train.py runner.max_steps=20"
    out = jobs.ensure_present(make_client(api), desired, update=True)
    assert (out["changed"], out["action"]) == (True, "updated")
    assert api.get("jobs", "demo")["spec"]["tasks"][0]["runScript"] == "python train.py runner.max_steps=20"
    assert api.count("PATCH") == 2


def test_read_many_keeps_the_pod_crs_of_a_task_already_gone():
    api = FakeApi()
    api.add("jobs", job())
    api.add("pods", pod_obj("demo-actor"))  # its Task was deleted first; the Pod CR is still there
    client = make_client(api)
    [entry] = jobs.read_many(client, jobs.list_jobs(client), with_nodes=False)
    assert entry["tasks"] == [] and [p["metadata"]["name"] for p in entry["pods"]] == ["uid-demo-actor-0"]


def test_a_gone_job_never_counts_as_started():
    done, summary, _tree = jobs.started_check(make_client(FakeApi()), "demo")()
    assert (done, summary) == (False, "the Job is gone")


def test_an_orphaned_running_task_does_not_hold_up_started():
    api = seeded()
    api.add("tasks", task_obj("demo", "old"))  # a Task of a template the Job no longer has
    done, _summary, _tree = jobs.started_check(make_client(api), "demo")()
    assert done is True


def test_only_replicas_zero_counts_as_stopped():
    for replicas in (1, -1):
        tree = {"job": job(), "tasks": [task_obj("demo", "actor", replicas=replicas)], "pods": []}
        assert jobs.stop_state("demo", tree)[0] is False
    tree = {"job": job(), "tasks": [task_obj("demo", "actor", replicas=0)], "pods": []}
    assert jobs.stop_state("demo", tree)[0] is True


def test_a_stop_cannot_be_waited_for_when_a_task_is_in_two_namespaces():
    tree = {"job": job(), "tasks": [task_obj("demo", "actor"), task_obj("demo", "actor", namespace="rlark-h100")]}
    with pytest.raises(jobs.Refused) as err:
        jobs.stop_state("demo", dict(tree, pods=[]))
    assert err.value.args[0] == "Cannot wait for Job 'demo' to stop."
    assert [f["id"] for f in err.value.findings] == ["task-duplicate-namespaces"]


def test_a_start_whose_patch_failed_before_it_applied_is_sent_again():
    api = seeded(stopped=True, phase="Stopped")
    api.fail_next(status(503, "ServiceUnavailable", "etcd leader changed"), method="PATCH")
    out = jobs.set_stopped(make_client(api), "demo", False)
    assert (out["changed"], out["action"]) == (True, "started")
    assert api.get("jobs", "demo")["spec"]["stopped"] is False and api.count("PATCH") == 2


@pytest.mark.parametrize("other", ["20261201T000000Z-stop-aaaaaa", "20261201T020000Z-stop-zzzzzz"])
def test_another_run_s_stop_read_back_is_not_taken_for_ours(other):
    # Another guarded stop (its own run id, earlier or later than ours) lands just before our PATCH, which
    # the server then answers with a 503 without applying it: the Job was stopped, but not by this run.
    api = seeded()
    ours = {"rlark.io/stop-run": "20261201T010203Z-stop-abc123"}

    def other_stop(method, path, query):
        if method == "PATCH" and api.count("PATCH") == 1:
            live = copy.deepcopy(api.get("jobs", "demo"))
            live["spec"]["stopped"] = True
            live["metadata"].setdefault("annotations", {})["rlark.io/stop-run"] = other
            api.add("jobs", live)

    api.hooks.append(other_stop)
    api.fail_next(status(503, "ServiceUnavailable", "etcd leader changed"), method="PATCH")
    out = jobs.set_stopped(make_client(api), "demo", True, annotations=ours)
    assert (out["changed"], out["action"]) == (False, "unchanged")
    assert api.get("jobs", "demo")["metadata"]["annotations"]["rlark.io/stop-run"] == other
