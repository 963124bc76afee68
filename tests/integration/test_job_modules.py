# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_job / rlark_job_info against the sandbox: real kube-apiserver + etcd, rlark-sim as RLark.

Modules run through ``ansible-playbook`` (so ``--check`` and ``--diff`` are the real thing) with the
least-privilege ``operator`` kubeconfig; fixtures use the admin kubeconfig through the collection's
own client.
"""

import copy
import json
import re
import threading

import job_test_support as support
import pytest
from fault_proxy import FaultProxy
from independent import get_job, job_pods, job_tasks
from job_test_support import (
    admin_client,
    client_from_params,
    demo_job,
    jobs_core,
    resource_path,
    run_module,
    running_job,
    unique,
    wait_until,
)

pytestmark = pytest.mark.sandbox
cleanup = support.cleanup

# --- tests ----------------------------------------------------------------------------------------


def test_create_twice_second_unchanged_and_check_mode_creates_nothing(sandbox, cleanup):
    name = unique()
    cleanup.append(name)
    result = run_module(sandbox, "rlark_job", {"definition": demo_job(name)}, check=True)
    assert result["changed"] and result["action"] == "created", result.get("msg")
    assert get_job(sandbox, name) is None  # --check wrote nothing (server dry run)
    first = run_module(sandbox, "rlark_job", {"definition": demo_job(name)})
    assert first["changed"] and first["action"] == "created"
    assert get_job(sandbox, name)["metadata"]["uid"] == first["job"]["metadata"]["uid"]
    second = run_module(sandbox, "rlark_job", {"definition": demo_job(name)})
    assert not second["changed"] and second["action"] == "unchanged"
    assert second["api_calls"] - second["api_retries"] == 3  # job, tasks, pods


def test_unknown_field_is_rejected_with_its_path(sandbox, cleanup):
    name = unique()
    cleanup.append(name)
    job = demo_job(name)
    job["spec"]["tasks"][1]["kubernetes"]["workload"]["replica"] = 2
    result = run_module(sandbox, "rlark_job", {"definition": job})
    assert result["failed"]
    assert 'unknown field "spec.tasks[1].kubernetes.workload.replica"' in result["msg"]
    assert result["status"]["code"] == 400
    assert "\n" not in result["msg"] and "Traceback" not in result["msg"]
    assert get_job(sandbox, name) is None


def test_stop_waits_for_pod_crs_then_stop_twice_unchanged_then_start(sandbox, cleanup):
    name = running_job(sandbox, cleanup, grace=8)  # Pod CRs outlive the stop by 8 s: the wait must see them
    assert job_pods(sandbox, name), "the sim should have created Pod CRs"
    result, stdout = run_module(
        sandbox,
        "rlark_job",
        {"name": name, "state": "stopped", "wait": True, "wait_timeout": 180},
        diff=True,
        with_stdout=True,
    )
    assert result["changed"] and result["action"] == "stopped", result.get("msg")
    # Right after the module returns: replicas 0 everywhere and no Pod CR of the Job left.
    assert job_pods(sandbox, name) == []
    tasks = job_tasks(sandbox, name)
    assert len(tasks) == 3 and all(t["spec"]["kubernetes"]["workload"]["replicas"] == 0 for t in tasks)
    # It really waited: the first observation still saw Pod CRs (rlark-sim keeps them for a grace period).
    assert "0 Pod CR(s) remaining" not in result["wait_log"][0]
    assert result["wait_log"][-1].endswith("0 Pod CR(s) remaining")
    # --diff shows spec.stopped going from false to true, without server bookkeeping.
    assert re.search(r'^-\s+"stopped": false', stdout, re.M) and re.search(r'^\+\s+"stopped": true', stdout, re.M)
    assert "resourceVersion" not in json.dumps(result["diff"])
    again = run_module(sandbox, "rlark_job", {"name": name, "state": "stopped"})
    assert not again["changed"] and again["action"] == "unchanged"
    started = run_module(sandbox, "rlark_job", {"name": name, "state": "started", "wait": True, "wait_timeout": 180})
    assert started["changed"] and started["action"] == "started"
    assert {t["status"]["phase"] for t in started["tasks"]} == {"Running"}
    assert get_job(sandbox, name)["spec"]["stopped"] is False


def test_two_concurrent_stops_exactly_one_changed(sandbox, cleanup):
    """Two module runs read the Job before either writes: the proxy holds each PATCH until both arrived."""
    name = unique()
    cleanup.append(name)
    result = run_module(sandbox, "rlark_job", {"definition": demo_job(name)})
    assert result["changed"]
    # 25 s: below the client's request timeout, so an unpaired PATCH is forwarded alone (and the test
    # fails on "no 409") instead of being re-sent behind the proxy's back.
    both_patched = threading.Barrier(2, timeout=25)
    unpaired = []

    def hold(method, path):
        if method == "PATCH" and path.endswith("/jobs/" + name):
            try:
                both_patched.wait()
            except threading.BrokenBarrierError:
                unpaired.append(path)

    results = [None, None]
    with FaultProxy(sandbox.server, sandbox.ca_cert, [], hold=hold) as proxy:

        def stop(i):
            args = {"name": name, "state": "stopped", "host": proxy.url, "api_key": sandbox.operator_token}
            results[i] = run_module(sandbox, "rlark_job", args, kubeconfig=None, env={"K8S_AUTH_KUBECONFIG": ""})

        threads = [threading.Thread(target=stop, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert [r.get("failed", False) for r in results] == [False, False], results
    assert not unpaired, "the two runs' PATCHes did not overlap within 25 s"
    patches = [status for method, _path, status in proxy.upstream if method == "PATCH"]
    # the conflict happened (the loser's resourceVersion precondition failed) and exactly one PATCH applied
    assert patches.count(200) == 1 and 409 in patches and set(patches) <= {200, 409}, proxy.upstream
    assert sorted(r["changed"] for r in results) == [False, True]
    assert get_job(sandbox, name)["spec"]["stopped"] is True


def test_concurrent_stops_race_on_the_core(sandbox, cleanup):
    """Eight threads stop the same Job at the same moment: the precondition lets exactly one win."""
    name = unique()
    cleanup.append(name)
    client = admin_client(sandbox)
    jobs_core.ensure_present(client, demo_job(name))
    barrier = threading.Barrier(8)
    outcomes = []

    def stop():
        own = client_from_params({"kubeconfig": sandbox.kubeconfig_operator})
        barrier.wait()
        outcomes.append(jobs_core.set_stopped(own, name, True)["changed"])
        own.close()

    threads = [threading.Thread(target=stop) for _i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == [False] * 7 + [True]


def test_delete_with_wait_leaves_no_task(sandbox, cleanup):
    name = running_job(sandbox, cleanup)
    result = run_module(sandbox, "rlark_job", {"name": name, "state": "absent", "wait": True, "wait_timeout": 180})
    assert result["changed"] and result["action"] == "deleted", result.get("msg")
    assert get_job(sandbox, name) is None
    assert job_tasks(sandbox, name) == [] and job_pods(sandbox, name) == []
    again = run_module(sandbox, "rlark_job", {"name": name, "state": "absent"})
    assert not again["changed"]


def test_delete_refused_while_agent_pvcs_would_go(sandbox, cleanup):
    name = unique()
    cleanup.append(name)
    job = demo_job(name, stopped=True)
    pod = job["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]
    pod["volumes"].append({"name": "ckpt", "persistentVolumeClaim": {"claimName": ""}})
    run_module(sandbox, "rlark_job", {"definition": job})
    result = run_module(sandbox, "rlark_job", {"name": name, "state": "absent"})
    assert result["failed"] and [(f["id"], f["severity"]) for f in result["findings"]] == [("job-delete-pvc", "error")]
    assert "pvc-%s-actor-ckpt" % name in result["msg"]
    assert get_job(sandbox, name) is not None


def test_refusals_task_set_and_node_selector_change(sandbox, cleanup):
    name = unique()
    cleanup.append(name)
    run_module(sandbox, "rlark_job", {"definition": demo_job(name, stopped=True)})
    renamed = demo_job(name, stopped=True)
    renamed["spec"]["tasks"][2]["name"] = "envs"
    result = run_module(sandbox, "rlark_job", {"definition": renamed, "update": True})
    assert result["failed"] and "job-task-set-change" in [f["id"] for f in result["findings"]]
    moved = demo_job(name, stopped=True)
    moved["spec"]["tasks"][1]["nodeSelector"] = {"rlinf.io/pool": "h100"}
    result = run_module(sandbox, "rlark_job", {"definition": moved, "update": True})
    assert result["failed"] and "job-node-selector-change" in [f["id"] for f in result["findings"]]
    live = jobs_core.get_job(admin_client(sandbox), name)
    assert [t["name"] for t in live["spec"]["tasks"]] == ["actor", "rollout", "env"]
    assert live["spec"]["tasks"][1]["nodeSelector"] == {"rlinf.io/pool": "rollout"}


def test_update_applies_other_changes_and_keeps_stopped(sandbox, cleanup):
    name = unique()
    cleanup.append(name)
    run_module(sandbox, "rlark_job", {"definition": demo_job(name, stopped=True)})
    changed = demo_job(name, stopped=False)
    changed["spec"]["tasks"][0]["prepareScript"] = "echo prepared"
    refused = run_module(sandbox, "rlark_job", {"definition": changed})
    assert refused["failed"] and "job-spec-differs" in [f["id"] for f in refused["findings"]]
    result = run_module(sandbox, "rlark_job", {"definition": changed, "update": True})
    assert result["changed"] and result["action"] == "updated", result.get("msg")
    live = jobs_core.get_job(admin_client(sandbox), name)
    assert live["spec"]["tasks"][0]["prepareScript"] == "echo prepared"
    assert live["spec"]["stopped"] is True  # never changed as a side effect


def test_frozen_succeeded_job_is_refused(sandbox, cleanup):
    name = unique()
    cleanup.append(name)
    run_module(sandbox, "rlark_job", {"definition": demo_job(name)})
    client = admin_client(sandbox)
    path = resource_path("jobs", name, subresource="status")
    client.merge_patch(path, {"status": {"phase": "Succeeded"}})
    wait_until(lambda: jobs_core.job_phase(jobs_core.get_job(client, name)) == "Succeeded", timeout=10)
    result = run_module(sandbox, "rlark_job", {"name": name, "state": "stopped"})
    assert result["failed"] and result["findings"][0]["id"] == "job-terminal-phase"
    assert "Succeeded" in result["msg"]
    assert get_job(sandbox, name)["spec"]["stopped"] is False


def rich_job(name):
    job = demo_job(name, stopped=True)
    actor = job["spec"]["tasks"][0]
    workload = actor["kubernetes"]["workload"]
    pod = workload["template"]["spec"]
    main = pod["containers"][0]
    main.update(
        {
            "command": ["bash", "-lc"],
            "args": ["sleep infinity"],
            "env": [
                {"name": "SIM_STEP_SECONDS", "value": "1"},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s3", "key": "token"}}},
            ],
            "resources": {
                "requests": {"cpu": "2", "memory": "4Gi"},
                "limits": {"cpu": "4", "memory": "8Gi"},
            },
            "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 7},
            "livenessProbe": {"tcpSocket": {"port": 6379}, "initialDelaySeconds": 30},
            "ports": [{"containerPort": 8265, "name": "dashboard"}],
            "volumeMounts": [
                {"name": "data", "mountPath": "/data"},
                {"name": "ckpt", "mountPath": "/ckpt", "subPath": "runs/h3"},
            ],
        }
    )
    pod["containers"].append(
        {"name": "exporter", "image": "prom/node-exporter:v1.8.2", "args": ["--web.listen-address=:9101"]}
    )
    pod["initContainers"] = [{"name": "warmup", "image": "busybox:1.36", "command": ["true"]}]
    pod["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    pod["terminationGracePeriodSeconds"] = 120
    pod["volumes"].append({"name": "ckpt", "persistentVolumeClaim": {"claimName": "h3-ckpt"}})
    pod["volumes"].append({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}})
    workload["pvcStorageMap"] = {"h3-ckpt": "rlark-s3"}
    actor["tensorBoardDir"] = "/data/tb"
    actor["prepareScript"] = "pip list | head -1"
    actor["runScript"] += " +runner.resume_dir=/old/global_step_1"
    return job


def untouched(job):
    """What only a client's write to a Job changes: its spec (and generation), labels, annotations, finalizers and
    owners; the status subresource is the controller's."""
    meta = job["metadata"]
    keys = ("generation", "labels", "annotations", "finalizers", "ownerReferences")
    return {"spec": job["spec"], **{k: meta.get(k) for k in keys}}


def test_copy_keeps_every_pod_field_and_never_touches_the_source(sandbox, cleanup):
    source_name, copy_name = unique(), unique()
    cleanup.extend([source_name, copy_name])
    created = run_module(sandbox, "rlark_job", {"definition": rich_job(source_name)})
    assert created["changed"], created.get("msg")
    source_before = get_job(sandbox, source_name)  # read with the independent client, not the collection's
    step = "/data/rlinf/h3/%s/checkpoints/global_step_20" % source_name
    result = run_module(
        sandbox, "rlark_job", {"copy_from": source_name, "name": copy_name, "resume_dir": step, "copy_stopped": True}
    )
    assert result["changed"] and result["action"] == "created", result.get("msg")
    assert any(f["id"] == "copy-agent-pvc" for f in result["findings"])
    source_after = get_job(sandbox, source_name)
    # Not the resourceVersion: the controller's status writes move it (CI, 2026-12-04: 2319 -> 2328 on RLark's
    # upstream CRDs). A write by the copy changes the spec (and generation) or the metadata compared here.
    assert untouched(source_after) == untouched(source_before), "the copy wrote to its source Job"
    copied = get_job(sandbox, copy_name)
    expected = copy.deepcopy(source_before["spec"])
    # The resume override, and the copy's own output directory next to the source's log_path.
    expected["tasks"][0]["runScript"] = (
        expected["tasks"][0]["runScript"].replace(
            "+runner.resume_dir=/old/global_step_1", "++runner.resume_dir=" + step
        )
        + " ++runner.logger.experiment_name="
        + copy_name
    )
    assert copied["spec"] == expected  # deep-equal apart from those two overrides
    assert copied["spec"]["tasks"][0]["runScript"].count("runner.resume_dir") == 1
    assert copied["metadata"]["labels"] == dict(
        source_before["metadata"]["labels"], **{"rlark.ops/resumed-from": source_name}
    )
    # Copy twice: unchanged.
    again = run_module(
        sandbox, "rlark_job", {"copy_from": source_name, "name": copy_name, "resume_dir": step, "copy_stopped": True}
    )
    assert not again["changed"]


def test_viewer_gets_a_one_sentence_forbidden_error(sandbox, cleanup):
    name = unique()
    cleanup.append(name)
    run_module(sandbox, "rlark_job", {"definition": demo_job(name, stopped=True)})
    result = run_module(sandbox, "rlark_job", {"name": name, "state": "started"}, kubeconfig=sandbox.kubeconfig_viewer)
    assert result["failed"]
    assert result["status"]["code"] == 403 and result["status"]["reason"] == "Forbidden"
    assert "forbidden" in result["msg"] and "\n" not in result["msg"]
    assert result["msg"].startswith("The API server rejected PATCH /apis/rlinf.io/v1alpha1/jobs/%s" % name)
    assert "Traceback (most recent call last)" not in json.dumps(result)


def test_job_info_reads_tasks_pods_and_nodes(sandbox, cleanup):
    name = running_job(sandbox, cleanup)
    result = run_module(sandbox, "rlark_job_info", {"name": name}, kubeconfig=sandbox.kubeconfig_viewer)
    assert not result["changed"] and len(result["resources"]) == 1
    entry = result["resources"][0]
    assert entry["job"]["metadata"]["name"] == name
    assert sorted(t["metadata"]["name"] for t in entry["tasks"]) == sorted(
        "%s-%s" % (name, t) for t in ("actor", "rollout", "env")
    )
    assert len(entry["pods"]) == 4
    assert sorted(n["metadata"]["name"] for n in entry["nodes"]) == ["a100-01", "a100-02", "a100-03"]
    by_label = run_module(sandbox, "rlark_job_info", {"label_selectors": ["rlark-test=h3"], "nodes": False})
    assert name in [r["job"]["metadata"]["name"] for r in by_label["resources"]]
