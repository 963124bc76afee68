"""rlark_job / rlark_job_info against RLark's resolution quirks (issue 12), on a sandbox whose rlark-sim resolves
Task namespaces like RLark: any matching Node per reconcile (rlark-sim's default; a session started with
`--ordered-resolution` gets it back for this module's tests).

Jobs the collection must never write are made here with the plain `kubernetes` client (as another tool or
a person would); outcomes are read with it too.
"""

import time

import job_test_support as support
import pytest
import sim_support
from independent import custom_objects
from job_test_support import demo_job, run_module, unique
from kubernetes import client

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"
cleanup, sim_mode = support.cleanup, sim_support.sim_mode


@pytest.fixture(scope="module")
def kube(sandbox):
    return custom_objects(sandbox.kubeconfig)


@pytest.fixture
def random_resolution(sim_mode):
    sim_mode(remove=["--ordered-resolution"])


def ids(result):
    return [(f["id"], f["severity"]) for f in result.get("findings") or []]


def job_exists(kube, name):
    try:
        kube.get_cluster_custom_object(GROUP, VERSION, "jobs", name)
        return True
    except client.ApiException as exc:
        assert exc.status == 404
        return False


def task_keys(kube, name):
    items = kube.list_cluster_custom_object(GROUP, VERSION, "tasks", label_selector="rlinf.io/job=%s" % name)["items"]
    return sorted((t["metadata"]["namespace"], t["metadata"]["name"]) for t in items)


def with_selector(job, index, selector):
    job["spec"]["tasks"][index]["nodeSelector"] = selector
    return job


def test_create_refuses_a_two_cluster_selector_and_whitespace(sandbox, kube, cleanup, random_resolution):
    name = unique()
    cleanup.append(name)
    dual = with_selector(demo_job(name, stopped=True), 1, {"kubernetes.io/hostname": "dual-01,a100-02"})
    result = run_module(sandbox, "rlark_job", {"definition": dual})
    assert result["failed"] and ("selector-multi-cluster", "error") in ids(result), result.get("msg")
    assert [f["path"] for f in result["findings"]] == ["spec.tasks[1].nodeSelector"]
    spaced = with_selector(demo_job(name, stopped=True), 0, {"kubernetes.io/hostname": "a100-01 "})
    result = run_module(sandbox, "rlark_job", {"definition": spaced})
    assert result["failed"] and ids(result) == [("selector-whitespace", "error")], result.get("msg")
    assert not job_exists(kube, name)
    # copy_from runs the same check: a source someone else created with a two-cluster selector
    source = unique()
    cleanup.append(source)
    kube.create_cluster_custom_object(GROUP, VERSION, "jobs", dict(dual, metadata={"name": source}))
    result = run_module(sandbox, "rlark_job", {"name": name, "copy_from": source, "copy_stopped": True})
    assert result["failed"] and ("selector-multi-cluster", "error") in ids(result)
    assert not job_exists(kube, name)


def test_two_tasks_of_one_name_end_the_wait_and_show_in_info(sandbox, kube, cleanup, random_resolution):
    name = unique()
    cleanup.append(name)
    job = with_selector(demo_job(name), 2, {"kubernetes.io/hostname": "dual-01"})
    kube.create_cluster_custom_object(GROUP, VERSION, "jobs", job)
    deadline = time.monotonic() + 60  # every Task event is another reconcile, each may pick the other cluster
    while time.monotonic() < deadline and len([k for k in task_keys(kube, name) if k[1] == name + "-env"]) < 2:
        touched = kube.patch_cluster_custom_object(
            GROUP, VERSION, "jobs", name, {"metadata": {"annotations": {"t": str(time.time())}}}
        )
        sim_support.wait_sim_passes(sandbox.dir, touched)
    assert ("rlark-a100", name + "-env") in task_keys(kube, name) and ("rlark-h100", name + "-env") in task_keys(
        kube, name
    )
    started = time.monotonic()
    result = run_module(sandbox, "rlark_job", {"name": name, "state": "started", "wait": True, "wait_timeout": 600})
    assert result["failed"] and ids(result) == [("task-duplicate-namespaces", "error")], result.get("msg")
    assert result["findings"][0]["path"] == "spec.tasks[2].nodeSelector"
    assert time.monotonic() - started < 600  # a finding, not the timeout
    info = run_module(sandbox, "rlark_job_info", {"name": name})
    (resource,) = info["resources"]
    assert [f["id"] for f in resource["findings"]] == ["task-duplicate-namespaces"]
    assert sorted((t["metadata"]["namespace"], t["metadata"]["name"]) for t in resource["tasks"]) == task_keys(
        kube, name
    )
    # every Pod CR is reported once, under the Task of its own namespace
    for pod in resource["pods"]:
        label = pod["metadata"]["labels"]["rlark.io/task-name"]
        assert (pod["metadata"]["namespace"], label) in task_keys(kube, name)
    stop = run_module(sandbox, "rlark_job", {"name": name, "state": "stopped", "wait": True, "wait_timeout": 600})
    assert stop["failed"] and ids(stop) == [("task-duplicate-namespaces", "error")]
    assert kube.get_cluster_custom_object(GROUP, VERSION, "jobs", name)["spec"]["stopped"] is True  # the stop was sent


def test_a_task_in_default_ends_the_started_wait(sandbox, kube, cleanup):
    name = unique()
    cleanup.append(name)
    job = with_selector(demo_job(name), 2, {"kubernetes.io/hostname": "a100-02 ,a100-03"})  # RLark: no trim
    kube.create_cluster_custom_object(GROUP, VERSION, "jobs", job)
    support.wait_until(lambda: ("default", name + "-env") in task_keys(kube, name), timeout=60)
    result = run_module(sandbox, "rlark_job", {"name": name, "state": "started", "wait": True, "wait_timeout": 600})
    assert result["failed"] and ids(result) == [("task-default-namespace", "error")], result.get("msg")
    info = run_module(sandbox, "rlark_job_info", {"name": name, "nodes": False})
    assert [f["id"] for f in info["resources"][0]["findings"]] == ["task-default-namespace"]


def annotations(kube, name, task):
    items = kube.list_cluster_custom_object(GROUP, VERSION, "tasks", label_selector="rlinf.io/job=%s" % name)["items"]
    return next(t["metadata"]["annotations"] for t in items if t["metadata"]["name"] == "%s-%s" % (name, task))


def test_update_changing_replicas_warns_about_stale_ray_annotations(sandbox, kube, cleanup, random_resolution):
    name = unique()
    cleanup.append(name)
    created = run_module(sandbox, "rlark_job", {"definition": demo_job(name)})
    assert created["changed"] and not created.get("failed"), created.get("msg")
    support.wait_until(lambda: len(task_keys(kube, name)) == 3, timeout=60)
    bigger = demo_job(name)
    bigger["spec"]["tasks"][1]["kubernetes"]["workload"]["replicas"] = 3
    result = run_module(sandbox, "rlark_job", {"definition": bigger, "update": True})
    assert result["changed"] and ids(result) == [("job-update-stale-annotations", "warning")], result.get("msg")
    assert "rollout 2->3" in result["findings"][0]["message"]
    live = kube.get_cluster_custom_object(GROUP, VERSION, "jobs", name)
    assert live["spec"]["tasks"][1]["kubernetes"]["workload"]["replicas"] == 3
    # what the warning is about: the rollout Task was rewritten, the env Task keeps total 4 and rank start 3
    # (it should now be 5 and 4)
    support.wait_until(lambda: annotations(kube, name, "rollout")["rlark.io/ray-total-nodes"] == "5", timeout=60)
    env = annotations(kube, name, "env")
    assert (env["rlark.io/ray-total-nodes"], env["rlark.io/ray-node-rank-start"]) == ("4", "3")
    same = run_module(sandbox, "rlark_job", {"definition": bigger, "update": True})
    assert not same["changed"] and ids(same) == []
