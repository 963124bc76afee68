"""rlark-sim against the live sandbox: controller, agent and trainer behaviour from rlark-platform.md.

Expectations come from ../shared/docs/rlark-platform.md and rlinf-checkpoints.md, never from the
simulator's code; the API is read with the plain `kubernetes` client.
"""

import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import time

import pytest
import sim_support
from helpers import ROOT
from independent import custom_objects
from kubernetes import client, config

pytestmark = pytest.mark.sandbox

GROUP, VERSION = "rlinf.io", "v1alpha1"


# ---------------------------------------------------------------- helpers
@pytest.fixture(scope="module")
def api(sandbox):
    return custom_objects(sandbox.kubeconfig)


@pytest.fixture(scope="module")
def apps(sandbox):
    return client.AppsV1Api(config.new_client_from_config(config_file=sandbox.kubeconfig))


@pytest.fixture
def jobs(api):
    """Creates Jobs with unique names; deletes them and waits for their Tasks to go."""
    created = []

    def make(prefix, tasks, **spec):
        name = "%s-%s" % (prefix, secrets.token_hex(3))
        body = {
            "apiVersion": "rlinf.io/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": dict(spec, tasks=tasks),
        }
        api.create_cluster_custom_object(GROUP, VERSION, "jobs", body)
        created.append(name)
        return name

    yield make
    for name in created:
        try:
            api.delete_cluster_custom_object(GROUP, VERSION, "jobs", name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
    deadline = time.time() + 30
    while created and time.time() < deadline:
        if not any(tasks_of(api, name) for name in created):
            break
        time.sleep(0.5)


def template(name, selector=None, replicas=1, head=False, run_script="", env=None, volumes=None, mounts=None, **extra):
    container = {"name": "main", "image": "rlinf/rlinf:sandbox"}
    if env:
        container["env"] = [{"name": k, "value": str(v)} for k, v in env.items()]
    if mounts:
        container["volumeMounts"] = mounts
    pod_spec = {"containers": [container]}
    if volumes:
        pod_spec["volumes"] = volumes
    tpl = {
        "name": name,
        "role": "Actor" if head else "Rollout",
        "agentType": "Kubernetes",
        "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": replicas, "template": {"spec": pod_spec}}},
    }
    if head:
        tpl["head"] = True
    if selector is not None:
        tpl["nodeSelector"] = selector
    if run_script:
        tpl["runScript"] = run_script
    for key, value in extra.items():
        if key == "storage_map":
            tpl["kubernetes"]["workload"]["pvcStorageMap"] = value
        else:
            tpl[key] = value
    return tpl


def hostpath_head(name, node, run_script, env):
    return template(
        name,
        {"kubernetes.io/hostname": node},
        head=True,
        run_script=run_script,
        env=env,
        volumes=[{"name": "data", "hostPath": {"path": "/data/rlinf"}}],
        mounts=[{"name": "data", "mountPath": "/data/rlinf"}],
    )


def get_job(api, name):
    return api.get_cluster_custom_object(GROUP, VERSION, "jobs", name)


def tasks_of(api, job):
    items = api.list_cluster_custom_object(GROUP, VERSION, "tasks", label_selector="rlinf.io/job=%s" % job)["items"]
    return {t["metadata"]["name"]: t for t in items}


def pod_crs(api, task_name):
    items = api.list_cluster_custom_object(GROUP, VERSION, "pods", label_selector="rlark.io/task-name=%s" % task_name)
    return items["items"]


# A bound only matters when the condition never comes. The sandbox's controller and garbage collector run
# several times slower on a loaded 2-core machine (make test-under-load: a background cascade took over 30 s),
# so every bound is stretched rather than tuned to an unloaded run.
WAIT_SCALE = 4


def wait_for(predicate, timeout=30, interval=0.2, what="condition"):
    timeout *= WAIT_SCALE
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s (last: %r)" % (timeout, what, last))


def phase_of(obj):
    """status.phase, None before anything wrote a status (a just-created Task or Pod CR has none)."""
    return (obj.get("status") or {}).get("phase")


def job_phase(api, name):
    return phase_of(get_job(api, name))


def read_log(sandbox, job, pod):
    path = os.path.join(sandbox.logs_dir, job, pod + ".log")
    if not os.path.exists(path):
        return ""
    with open(path) as fh:
        return fh.read()


def wait_log(sandbox, job, text, timeout=30):
    """The head pod's log once it contains `text`."""
    return wait_for(
        lambda: text in read_log(sandbox, job, job + "-actor-0") and read_log(sandbox, job, job + "-actor-0"),
        timeout=timeout,
        what="%r in the log of %s" % (text, job),
    )


def placed(api, job, replicas):
    """Tasks of ``job`` once each of ``replicas`` ({short name: count}) is Running with that many Running Pod CRs.

    The condition a test that looks at pods asserts. The Job's phase is no proxy for it: RLark's Job reads
    Running as soon as one Task is, while the agent may not have placed the other Tasks' pods yet.
    """
    tasks = tasks_of(api, job)
    for short, want in replicas.items():
        task = tasks.get("%s-%s" % (job, short))
        if task is None or phase_of(task) != "Running":
            return None
        if len([p for p in pod_crs(api, task["metadata"]["name"]) if phase_of(p) == "Running"]) != want:
            return None
    return tasks


def wait_placed(api, job, replicas, timeout=30):
    return wait_for(lambda: placed(api, job, replicas), timeout=timeout, what="pods of %s placed %r" % (job, replicas))


def merge_patch_job(api, name, body):
    return api.patch_cluster_custom_object(GROUP, VERSION, "jobs", name, body)


def sim_acted_on(api, sandbox, *written):
    """Until the sandbox's controller and agent have acted on ``written`` (what writes returned): in place of
    a sleep before asserting that something did not happen.

    rlark-sim: two whole passes that saw them (sim_support.wait_sim_passes). With RLark's real
    controller-manager in place of rlark-sim's controller its passes cannot be seen: a probe Job's Task, made
    after the writes, is one more trip through its work queue.
    """
    sim_support.wait_sim_passes(sandbox.dir, *written)
    if sandbox.state.get("controller_manager"):
        probe = "zz-probe-%s" % secrets.token_hex(3)
        body = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": probe}}
        body["spec"] = {"tasks": [template("actor", None, head=True)]}
        api.create_cluster_custom_object(GROUP, VERSION, "jobs", body)
        try:
            wait_for(lambda: tasks_of(api, probe), what="the probe Job's Task")
        finally:
            api.delete_cluster_custom_object(GROUP, VERSION, "jobs", probe)


def trainer_env(**extra):
    env = {"SIM_STEP_SECONDS": "0.3", "SIM_SAVE_SECONDS": "1", "SIM_RLINF_WORLD_SIZE": "2"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def ckpt_root(sandbox, node, exp):
    return os.path.join(sandbox.nodes_dir, node, "data/rlinf/logs", exp, "checkpoints")


def embodied_script(exp, save_interval=2, max_steps=200, resume=None):
    script = (
        "cd /workspace && python examples/embodiment/train_embodied_agent.py --config-name maniskill "
        "runner.logger.log_path=/data/rlinf/logs runner.logger.experiment_name=%s "
        "runner.save_interval=%d runner.max_steps=%d" % (exp, save_interval, max_steps)
    )
    if resume:
        script += " +runner.resume_dir=%s" % resume
    return script


# ---------------------------------------------------------------- controller
def test_namespace_from_first_comma_value(api, jobs):
    name = jobs("nsfirst", [template("actor", {"kubernetes.io/hostname": "h100-01,a100-01"}, head=True)])
    task = wait_for(lambda: tasks_of(api, name).get(name + "-actor"), what="task")
    assert task["metadata"]["namespace"] == "rlark-h100"


def test_empty_or_unmatched_selector_goes_to_default(sandbox, api, jobs):
    name = jobs(
        "nsdef",
        [template("actor", None, head=True), template("rollout", {"kubernetes.io/hostname": "no-such-node"})],
    )
    tasks = wait_for(lambda: len(tasks_of(api, name)) == 2 and tasks_of(api, name), what="two tasks")
    assert {t["metadata"]["namespace"] for t in tasks.values()} == {"default"}
    sim_acted_on(api, sandbox, *tasks.values())
    # No agent serves `default`: nothing ever writes these Tasks' status, the Job stays Pending.
    assert all(not (t.get("status") or {}).get("phase") for t in tasks_of(api, name).values())
    assert job_phase(api, name) == "Pending"


def test_task_naming_labels_owner_and_ray_annotations(api, jobs):
    tasks = [
        template("actor", {"kubernetes.io/hostname": "a100-01"}, head=True),
        template("rollout", {"kubernetes.io/hostname": "a100-02,a100-03"}, replicas=2),
        {"name": "env", "role": "Env", "agentType": "Kubernetes"},  # no k8s workload: counts as 1
    ]
    name = jobs("naming", tasks, domain="dom-x", sshPublicKey="ssh-ed25519 AAAAtest")
    got = wait_for(lambda: len(tasks_of(api, name)) == 3 and tasks_of(api, name), what="three tasks")
    job = get_job(api, name)
    expect = {"actor": ("0", "head"), "rollout": ("1", "worker"), "env": ("3", "worker")}
    for short, (rank, role) in expect.items():
        task = got["%s-%s" % (name, short)]
        meta = task["metadata"]
        assert meta["labels"]["rlinf.io/job"] == name
        owner = meta["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Job",
            name,
            job["metadata"]["uid"],
            True,
        )
        ann = meta["annotations"]
        assert ann["rlark.io/ray-total-nodes"] == "4"
        assert ann["rlark.io/ray-node-rank-start"] == rank
        assert ann["rlark.io/ray-role"] == role
        assert ann["rlark.io/ray-head-task-name"] == name + "-actor"
        assert task["spec"]["domain"] == "dom-x"
        assert task["spec"]["sshPublicKey"] == "ssh-ed25519 AAAAtest"
    assert [e["name"] for e in job["status"]["tasks"]] == ["actor", "rollout", "env"]
    assert job["status"].get("startTime")


TEMPLATE_GRACE = 8  # well over the sim's default --grace-seconds (5) and the suite's


def grace_seconds(sandbox):
    """The stop grace period the sandbox's rlark-sim runs with for templates that set none (default 5 s)."""
    args = sim_process(sandbox)[1]
    return float(args[args.index("--grace-seconds") + 1]) if "--grace-seconds" in args else 5.0


def test_stop_then_pod_crs_gone_after_grace(sandbox, api, jobs):
    """The actor's template sets terminationGracePeriodSeconds (its Pod CR outlives the Job's Stopped by that
    long); the rollout's sets none (the sandbox's --grace-seconds)."""
    actor = template("actor", {"kubernetes.io/hostname": "a100-01"}, head=True)
    actor["kubernetes"]["workload"]["template"]["spec"]["terminationGracePeriodSeconds"] = TEMPLATE_GRACE
    name = jobs("stop", [actor, template("rollout", {"kubernetes.io/hostname": "a100-02,a100-03"}, replicas=2)])
    wait_for(lambda: job_phase(api, name) == "Running", what="job Running")
    wait_placed(api, name, {"actor": 1, "rollout": 2})
    merge_patch_job(api, name, {"spec": {"stopped": True}})
    stopped_at = time.time()
    wait_for(lambda: job_phase(api, name) == "Stopped", timeout=10, interval=0.05, what="job Stopped")
    tasks = tasks_of(api, name)
    assert {t["spec"]["kubernetes"]["workload"]["replicas"] for t in tasks.values()} == {0}
    # Job Stopped and replicas 0 are visible while the actor's Pod CR still exists.
    assert pod_crs(api, name + "-actor")
    wait_for(lambda: all((t.get("status") or {}).get("phase") == "Stopped" for t in tasks_of(api, name).values()))
    # The Job spec keeps its replicas.
    assert get_job(api, name)["spec"]["tasks"][1]["kubernetes"]["workload"]["replicas"] == 2
    wait_for(lambda: not pod_crs(api, name + "-rollout"), timeout=20, interval=0.1, what="rollout Pod CRs gone")
    assert time.time() - stopped_at >= grace_seconds(sandbox) - 0.5
    wait_for(lambda: not pod_crs(api, name + "-actor"), timeout=30, interval=0.1, what="actor Pod CR gone")
    assert time.time() - stopped_at >= TEMPLATE_GRACE - 0.5
    # Start again: Stopped -> Pending -> Running, new Pod CRs.
    merge_patch_job(api, name, {"spec": {"stopped": False}})
    wait_for(lambda: job_phase(api, name) == "Running", timeout=20, what="job Running again")
    wait_placed(api, name, {"actor": 1, "rollout": 2})
    assert len(pod_crs(api, name + "-rollout")) == 2


def test_no_eligible_node_keeps_task_pending_with_message(sandbox, api, jobs):
    name = jobs("pend", [template("actor", {"kubernetes.io/hostname": "h100-02"}, head=True)])  # Offline
    task = wait_for(
        lambda: (
            (tasks_of(api, name).get(name + "-actor") or {}).get("status", {}).get("message")
            and tasks_of(api, name)[name + "-actor"]
        ),
        what="pending message",
    )
    assert task["metadata"]["namespace"] == "rlark-h100"
    assert task["status"]["phase"] == "Pending"
    assert not [p for p in pod_crs(api, name + "-actor") if (p.get("status") or {}).get("phase") == "Running"]
    sim_acted_on(api, sandbox, task)
    assert job_phase(api, name) == "Pending"


def test_pod_crs_placed_on_distinct_eligible_nodes(api, apps, jobs):
    name = jobs("place", [template("rollout", {"kubernetes.io/hostname": "a100-01,a100-02,a100-03"}, replicas=3)])
    wait_for(lambda: len([p for p in pod_crs(api, name + "-rollout") if phase_of(p) == "Running"]) == 3)
    pods = pod_crs(api, name + "-rollout")
    assert sorted(p["status"]["node"] for p in pods) == ["a100-01", "a100-02", "a100-03"]
    assert sorted(p["metadata"]["labels"]["rlark.io/local-pod-name"] for p in pods) == [
        "%s-rollout-%d" % (name, i) for i in range(3)
    ]
    assert {p["metadata"]["labels"]["rlark.io/local-pod-namespace"] for p in pods} == {"rlark-system"}
    task = wait_for(
        lambda: (
            tasks_of(api, name)[name + "-rollout"].get("status", {}).get("observedNodes")
            and tasks_of(api, name)[name + "-rollout"]
        )
    )
    assert task["status"]["phase"] == "Running"
    assert sorted(task["status"]["observedNodes"]) == ["a100-01", "a100-02", "a100-03"]
    assert "rlark.io/agent-cleanup" in task["metadata"]["finalizers"]
    sts = apps.read_namespaced_stateful_set(name + "-rollout", "rlark-system")
    assert sts.spec.replicas == 3
    main = sts.spec.template.spec.containers[0]
    assert main.command == ["bash", "/rlark/scripts/ray_worker.sh"]
    assert sts.spec.template.metadata.labels["app"] == name + "-rollout"
    # Four replicas cannot fit on three nodes (required hostname anti-affinity).
    api.patch_cluster_custom_object(
        GROUP,
        VERSION,
        "jobs",
        name,
        {"spec": {"tasks": [template("rollout", {"kubernetes.io/hostname": "a100-01,a100-02,a100-03"}, replicas=4)]}},
    )
    wait_for(lambda: phase_of(tasks_of(api, name)[name + "-rollout"]) == "Pending", what="Pending at 4")


def test_succeeded_or_failed_job_is_frozen(sandbox, api, jobs):
    name = jobs("frozen", [template("actor", {"kubernetes.io/hostname": "a100-01"}, head=True)])
    wait_for(lambda: job_phase(api, name) == "Running", what="job Running")
    api.patch_cluster_custom_object_status(GROUP, VERSION, "jobs", name, {"status": {"phase": "Failed"}})
    sim_acted_on(api, sandbox, merge_patch_job(api, name, {"spec": {"stopped": True}}))
    assert job_phase(api, name) == "Failed"
    task = tasks_of(api, name)[name + "-actor"]
    assert task["spec"]["kubernetes"]["workload"]["replicas"] == 1
    assert task["status"]["phase"] == "Running"


def test_removed_template_leaves_orphaned_task(sandbox, api, jobs):
    actor = template("actor", {"kubernetes.io/hostname": "a100-01"}, head=True)
    rollout = template("rollout", {"kubernetes.io/hostname": "a100-02"})
    name = jobs("orphan", [actor, rollout])
    wait_for(lambda: len(tasks_of(api, name)) == 2, what="two tasks")
    sim_acted_on(api, sandbox, merge_patch_job(api, name, {"spec": {"tasks": [actor]}}))
    tasks = tasks_of(api, name)
    assert set(tasks) == {name + "-actor", name + "-rollout"}
    assert tasks[name + "-rollout"]["spec"]["kubernetes"]["workload"]["replicas"] == 1


def test_renamed_template_gets_its_task_then_freezes_the_job_like_rlarks_nil_status_panic(api, jobs):
    actor = template("actor", {"kubernetes.io/hostname": "a100-01"}, head=True)
    name = jobs("rename", [actor])
    wait_for(lambda: job_phase(api, name) == "Running", what="job Running")
    merge_patch_job(api, name, {"spec": {"tasks": [dict(actor, name="learner")]}})
    # RLark creates the new Task first, then dereferences the missing status entry
    wait_for(lambda: name + "-learner" in tasks_of(api, name), what="the renamed Task")
    # ... but only once that Task has a phase: a stop before the agent's first status write of it is processed
    # in full (test_sim_fidelity: the pre-status stop window)
    wait_for(lambda: phase_of(tasks_of(api, name)[name + "-learner"]), what="the renamed Task's first status")
    merge_patch_job(api, name, {"spec": {"stopped": True}})
    wait_for(
        lambda: tasks_of(api, name)[name + "-learner"]["spec"]["kubernetes"]["workload"]["replicas"] == 0,
        what="the stop reaching the renamed Task",
    )
    assert job_phase(api, name) == "Running"  # the status is never written again
    assert tasks_of(api, name)[name + "-actor"]["spec"]["kubernetes"]["workload"]["replicas"] == 1  # orphaned


def with_kind(tpl, kind):
    tpl["kubernetes"]["workload"]["kind"] = kind
    return tpl


def test_deployment_short_of_replicas_turns_a_running_job_failed(sandbox, api, apps, jobs):
    actor = template("actor", {"kubernetes.io/hostname": "a100-01"}, head=True)
    rollout = with_kind(template("rollout", {"kubernetes.io/hostname": "a100-02,a100-03"}, replicas=2), "Deployment")
    name = jobs("deploy", [actor, rollout])
    wait_for(lambda: job_phase(api, name) == "Running", what="job Running")
    wait_placed(api, name, {"actor": 1, "rollout": 2})
    assert apps.read_namespaced_deployment(name + "-rollout", "rlark-system").spec.replicas == 2
    rollout["kubernetes"]["workload"]["replicas"] = 3  # two eligible nodes only
    merge_patch_job(api, name, {"spec": {"tasks": [actor, rollout]}})
    task = wait_for(
        lambda: phase_of(tasks_of(api, name)[name + "-rollout"]) == "Failed" and tasks_of(api, name)[name + "-rollout"],
        what="deployment task Failed",
    )
    assert task["status"]["message"] == "deployment replicas unavailable 1"
    wait_for(lambda: job_phase(api, name) == "Failed", what="job Failed")
    job = get_job(api, name)
    assert job["status"].get("endTime")
    sim_acted_on(api, sandbox, merge_patch_job(api, name, {"spec": {"stopped": True}}))  # terminal: ignored
    assert job_phase(api, name) == "Failed"
    assert tasks_of(api, name)[name + "-rollout"]["spec"]["kubernetes"]["workload"]["replicas"] == 3


def test_daemonset_ignores_stop(sandbox, api, apps, jobs):
    env = with_kind(template("env", {"rlinf.io/pool": "rollout"}), "DaemonSet")
    name = jobs("dset", [template("actor", {"kubernetes.io/hostname": "a100-01"}, head=True), env])
    wait_for(lambda: job_phase(api, name) == "Running", what="job Running")
    nodes = api.list_namespaced_custom_object(
        GROUP, VERSION, "rlark-a100", "nodes", label_selector="rlinf.io/pool=rollout"
    )
    eligible = sorted(
        n["metadata"]["name"]
        for n in nodes["items"]
        if n["status"].get("phase") == "Online" and not n.get("spec", {}).get("unschedulable")
    )
    wait_placed(api, name, {"actor": 1, "env": len(eligible)})
    pods = pod_crs(api, name + "-env")
    assert sorted(p["status"]["node"] for p in pods) == eligible
    assert apps.read_namespaced_daemon_set(name + "-env", "rlark-system")
    merge_patch_job(api, name, {"spec": {"stopped": True}})
    wait_for(lambda: job_phase(api, name) == "Stopped", what="job Stopped")
    wait_for(lambda: not pod_crs(api, name + "-actor"), timeout=20, what="StatefulSet pods gone")
    assert len(pod_crs(api, name + "-env")) == len(eligible)
    assert tasks_of(api, name)[name + "-env"]["status"]["phase"] == "Running"


def test_job_delete_cascades_to_tasks_workloads_and_pod_crs(api, apps, jobs):
    name = jobs("casc", [template("actor", {"kubernetes.io/hostname": "a100-01"}, head=True)])
    wait_for(lambda: job_phase(api, name) == "Running", what="job Running")
    api.delete_cluster_custom_object(GROUP, VERSION, "jobs", name)
    wait_for(lambda: not tasks_of(api, name) and not pod_crs(api, name + "-actor"), what="cascade")
    with pytest.raises(client.ApiException) as err:
        apps.read_namespaced_stateful_set(name + "-actor", "rlark-system")
    assert err.value.status == 404


# ---------------------------------------------------------------- trainer
def test_checkpoint_in_progress_is_visible_mid_save(sandbox, api, jobs):
    exp = "mid-" + secrets.token_hex(3)
    env = trainer_env(SIM_SAVE_SECONDS=3)
    name = jobs("midsave", [hostpath_head("actor", "a100-02", embodied_script(exp, save_interval=2), env)])
    dcp = os.path.join(ckpt_root(sandbox, "a100-02", exp), "global_step_2", "actor", "dcp_checkpoint")

    def mid_save():
        shards = os.path.exists(os.path.join(dcp, "__0_0.distcp"))
        return shards and not os.path.exists(os.path.join(dcp, ".metadata"))

    wait_for(mid_save, timeout=30, interval=0.05, what="shards without .metadata")
    full = os.path.join(dcp, "..", "model_state_dict", "full_weights.pt")
    wait_for(lambda: os.path.exists(os.path.join(dcp, ".metadata")) and os.path.exists(full), timeout=15)
    assert os.path.exists(os.path.join(dcp, "__1_0.distcp"))
    assert not os.path.exists(os.path.join(dcp, ".metadata.tmp"))
    log = wait_log(sandbox, name, "Global Step: 2/200")
    assert (
        log.index("Executing run script...")
        < log.index("Saving checkpoint at step 2.")
        < log.index("Global Step: 2/200")
    )


def test_save_killed_by_stop_stays_partial_and_resume_from_it_fails(sandbox, api, jobs):
    exp = "kill-" + secrets.token_hex(3)
    env = trainer_env(SIM_SAVE_SECONDS=6)
    name = jobs("killsave", [hostpath_head("actor", "a100-03", embodied_script(exp, save_interval=2), env)])
    step_dir = os.path.join(ckpt_root(sandbox, "a100-03", exp), "global_step_2")
    dcp = os.path.join(step_dir, "actor", "dcp_checkpoint")
    wait_for(lambda: os.path.exists(os.path.join(dcp, "__0_0.distcp")), timeout=30, interval=0.05)
    merge_patch_job(api, name, {"spec": {"stopped": True}})
    wait_for(lambda: not pod_crs(api, name + "-actor"), timeout=20, what="pods gone")
    sim_support.wait_trainer_gone(sandbox, name + "-actor-0", "killed")  # a write still under way would have landed
    assert os.path.exists(os.path.join(dcp, "__0_0.distcp"))
    assert not os.path.exists(os.path.join(dcp, ".metadata"))
    assert not os.path.exists(os.path.join(step_dir, "actor", "model_state_dict", "full_weights.pt"))
    log = read_log(sandbox, name, name + "-actor-0")
    assert "Saving checkpoint at step 2." in log and "Global Step: 2/" not in log

    resume = "/data/rlinf/logs/%s/checkpoints/global_step_2" % exp
    again = jobs("killres", [hostpath_head("actor", "a100-03", embodied_script(exp, resume=resume), trainer_env())])
    log = wait_log(sandbox, again, "Could not find a valid DCP checkpoint")
    sim_support.wait_trainer_gone(sandbox, again + "-actor-0", "ended")
    assert "Global Step:" not in read_log(sandbox, again, again + "-actor-0")
    assert os.path.isdir(step_dir), "the partial checkpoint is never cleaned up"


def test_resumed_trainer_logs_resume_line_and_continues_at_n_plus_1(sandbox, api, jobs):
    exp = "res-" + secrets.token_hex(3)
    first = jobs("resa", [hostpath_head("actor", "a100-01", embodied_script(exp, save_interval=3), trainer_env())])
    wait_log(sandbox, first, "Global Step: 3/")
    merge_patch_job(api, first, {"spec": {"stopped": True}})
    wait_for(lambda: job_phase(api, first) == "Stopped")
    resume = "/data/rlinf/logs/%s/checkpoints/global_step_3" % exp
    second = jobs("resb", [hostpath_head("actor", "a100-01", embodied_script(exp, resume=resume), trainer_env())])
    log = wait_log(sandbox, second, "Global Step: 4/", timeout=30)
    assert "Resuming training from checkpoint directory %s." % resume in log
    assert "Global Step: 1/" not in log and "Global Step: 3/" not in log
    # A trailing slash breaks RLinf's int() parse of the step.
    third = jobs("resc", [hostpath_head("actor", "a100-01", embodied_script(exp, resume=resume + "/"), trainer_env())])
    log = wait_log(sandbox, third, "ValueError")
    assert "Global Step:" not in log


def test_megatron_reasoning_layout_and_resume(sandbox, api, jobs):
    exp = "meg-" + secrets.token_hex(3)
    env = trainer_env(
        SIM_RLINF_RUNNER="reasoning", SIM_RLINF_BACKEND="megatron", SIM_RLINF_TP=2, SIM_RLINF_CRITIC="true"
    )
    script = (
        "python main_grpo.py runner.output_dir=/data/rlinf/out runner.experiment_name=%s "
        "runner.save_interval=2 runner.max_steps=50" % exp
    )
    name = jobs("mega", [hostpath_head("actor", "a100-02", script, env)])
    ckpt = os.path.join(sandbox.nodes_dir, "a100-02", "data/rlinf/out", exp, "checkpoints", "global_step_2")
    wait_for(lambda: os.path.exists(os.path.join(ckpt, "data", "data.pt")), timeout=30)
    with open(os.path.join(ckpt, "actor", "latest_checkpointed_iteration.txt")) as fh:
        assert fh.read().strip() == "2"
    for part in ("actor", "critic"):
        for rank in ("mp_rank_00", "mp_rank_01"):
            for f in ("model_optim_rng.pt", "distrib_optim.pt"):
                assert os.path.exists(os.path.join(ckpt, part, "iter_0000002", rank, f))
    log = wait_log(sandbox, name, "Global Step: 3/")
    assert "Training from scratch" in log
    assert (
        "successfully saved checkpoint from iteration       2 to "
        "/data/rlinf/out/%s/checkpoints/global_step_2/actor [ t 1/2, p 1/1 ]" % exp in log
    )
    merge_patch_job(api, name, {"spec": {"stopped": True}})
    resume = "/data/rlinf/out/%s/checkpoints/global_step_2" % exp
    again = jobs("megb", [hostpath_head("actor", "a100-02", script + " runner.resume_dir=" + resume, env)])
    log = wait_log(sandbox, again, "Global Step: 3/", timeout=30)
    assert "Load from checkpoint folder: %s" % resume in log
    assert "Setting global step to 2" in log
    assert "successfully loaded checkpoint from %s/actor [ t 1/2, p 1/1 ] at iteration 2" % resume in log
    assert "Global Step: 1/" not in log


def test_s3_pvc_checkpoints_land_in_bucket(sandbox, api, jobs):
    import boto3

    exp = "s3-" + secrets.token_hex(3)
    head = template(
        "actor",
        {"kubernetes.io/hostname": "a100-03"},
        head=True,
        run_script="python train.py runner.logger.log_path=/ckpt/logs "
        "runner.logger.experiment_name=%s runner.save_interval=2" % exp,
        env=trainer_env(),
        volumes=[{"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt-" + exp}}],
        mounts=[{"name": "ckpt", "mountPath": "/ckpt"}],
        storage_map={"ckpt-" + exp: "rlark-s3"},
    )
    jobs("s3ckpt", [head])
    s3 = boto3.client(
        "s3",
        endpoint_url=sandbox.s3_endpoint,
        aws_access_key_id=sandbox.s3_access_key,
        aws_secret_access_key=sandbox.s3_secret_key,
        region_name="us-east-1",
    )
    prefix = "logs/%s/checkpoints/global_step_2/actor/" % exp

    def keys():
        return {
            o["Key"][len(prefix) :]
            for o in s3.list_objects_v2(Bucket=sandbox.s3_bucket, Prefix=prefix).get("Contents", [])
        }

    got = wait_for(lambda: "model_state_dict/full_weights.pt" in keys() and keys(), timeout=30)
    assert {"dcp_checkpoint/__0_0.distcp", "dcp_checkpoint/__1_0.distcp", "dcp_checkpoint/.metadata"} <= got
    assert "dcp_checkpoint/.metadata.tmp" not in got


# ---------------------------------------------------------------- level-triggered restart
def sim_process(sandbox):
    with open(os.path.join(sandbox.dir, "state.json")) as fh:
        state = json.load(fh)
    return state["pids"]["rlark-sim"], state.get("sim_args") or []


def snapshot(api, apps, job, task_names):
    tasks = tasks_of(api, job)
    pods = {t: sorted(p["metadata"]["uid"] for p in pod_crs(api, t)) for t in task_names}
    sts = {t: apps.read_namespaced_stateful_set(t, "rlark-system").metadata.uid for t in task_names}
    return {n: t["metadata"]["uid"] for n, t in tasks.items()}, pods, sts


def test_killing_and_restarting_sim_keeps_the_same_objects(sandbox, api, apps, jobs):
    exp = "rst-" + secrets.token_hex(3)
    name = jobs(
        "restart",
        [
            hostpath_head("actor", "a100-01", embodied_script(exp, save_interval=50), trainer_env()),
            template("rollout", {"kubernetes.io/hostname": "a100-02,a100-03"}, replicas=2),
        ],
    )
    names = [name + "-actor", name + "-rollout"]
    wait_for(lambda: job_phase(api, name) == "Running", what="job Running")
    wait_placed(api, name, {"actor": 1, "rollout": 2})
    wait_log(sandbox, name, "Global Step: 1/")
    before = snapshot(api, apps, name, names)
    assert sum(len(v) for v in before[1].values()) == 3

    proc, sim_args = sim_process(sandbox)
    os.kill(proc["pid"], signal.SIGKILL)
    wait_for(lambda: not os.path.exists("/proc/%d" % proc["pid"]) or _zombie(proc["pid"]), what="sim gone")
    up = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "sandbox", "sandboxctl.py"),
            "--dir",
            sandbox.dir,
            "up",
            "--crds",
            sandbox.crds,
            "--sim-args",
            " ".join(shlex.quote(a) for a in sim_args),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert up.returncode == 0, up.stdout + up.stderr
    new_proc = sim_process(sandbox)[0]
    assert new_proc["pid"] != proc["pid"]
    # The restarted trainer behaves like a restarted container: the run script starts again.
    wait_for(lambda: read_log(sandbox, name, name + "-actor-0").count("Executing run script...") == 2, timeout=30)
    sim_support.wait_sim_passes(sandbox.dir, passes=3)  # whole passes of the new process
    assert snapshot(api, apps, name, names) == before
    assert job_phase(api, name) == "Running"
    merge_patch_job(api, name, {"spec": {"stopped": True}})
    wait_for(lambda: job_phase(api, name) == "Stopped", what="stop after restart")


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True
