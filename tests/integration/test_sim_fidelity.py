"""rlark-sim reproduces what RLark's real controller-manager does (rlark-platform.md section 2a, issues 12, 31).

One test per observed divergence 1-13 (the list in docs/sandbox.md), asserting RLark's behaviour; plus the
sandbox's own options
(ordered resolution, garbage collector without the controller, `--sim-args` parsing). Read with the plain
`kubernetes` client. Tasks that must not be served by the agent resolve to `default` (no agent serves it).
"""

import secrets

import pytest
import sim_support
import test_sim_rlark as base
from kubernetes import client, config
from test_sim_rlark import (
    GROUP,
    VERSION,
    get_job,
    job_phase,
    merge_patch_job,
    phase_of,
    pod_crs,
    sim_acted_on,
    tasks_of,
    template,
    wait_for,
    wait_placed,
)

pytestmark = pytest.mark.sandbox
# The fixtures of test_sim_rlark and sim_support, bound here by assignment.
api, jobs, sim_mode = base.api, base.jobs, sim_support.sim_mode
TOTAL, RANK, HEAD = "rlark.io/ray-total-nodes", "rlark.io/ray-node-rank-start", "rlark.io/ray-head-task-name"


def tasks_by_key(api, job):
    """{(namespace, name): Task}: two Tasks of one name in two namespaces stay apart."""
    items = api.list_cluster_custom_object(GROUP, VERSION, "tasks", label_selector="rlinf.io/job=%s" % job)["items"]
    return {(t["metadata"]["namespace"], t["metadata"]["name"]): t for t in items}


def default_task(name, replicas=1, head=False, **extra):
    """A template without nodeSelector: its Task lands in `default`, where no agent acts on it."""
    tpl = template(name, None, replicas=replicas, head=head, **extra)
    tpl.pop("nodeSelector", None)
    return tpl


# ---------------------------------------------------------------- 1: unordered resolution
@pytest.mark.sim_only
def test_ordered_resolution_takes_the_first_listed_node_and_stays(sandbox, api, jobs, sim_mode):
    sim_mode(add=["--ordered-resolution"])
    name = jobs("dual", [template("actor", {"kubernetes.io/hostname": "dual-01"}, head=True)])
    wait_for(lambda: tasks_by_key(api, name), what="task")
    merge_patch_job(api, name, {"metadata": {"annotations": {"touch": "1"}}})  # more reconciles
    sim_acted_on(api, sandbox, merge_patch_job(api, name, {"metadata": {"annotations": {"touch": "2"}}}))
    assert list(tasks_by_key(api, name)) == [("rlark-a100", name + "-actor")]


def test_two_cluster_selector_makes_a_task_in_each_namespace(sandbox, api, jobs, sim_mode):
    sim_mode(remove=["--ordered-resolution"])
    name = jobs("dual", [template("actor", {"kubernetes.io/hostname": "dual-01"}, head=True)])
    # each reconcile may pick the other cluster's dual-01; every Task event is another reconcile
    for i in range(60):
        if len(tasks_by_key(api, name)) == 2:
            break
        sim_acted_on(api, sandbox, merge_patch_job(api, name, {"metadata": {"annotations": {"touch": str(i)}}}))
    assert set(tasks_by_key(api, name)) == {("rlark-a100", name + "-actor"), ("rlark-h100", name + "-actor")}


# ---------------------------------------------------------------- 2: added template
def test_added_template_task_is_created_then_status_sync_panics(api, jobs):
    actor, rollout = default_task("actor", head=True), default_task("rollout")
    name = jobs("added", [actor, rollout])
    wait_for(lambda: len(tasks_by_key(api, name)) == 2, what="two tasks")
    wait_for(lambda: [e.get("phase") for e in entries(api, name)] == ["Pending"] * 2, what="entries")
    merge_patch_job(api, name, {"spec": {"tasks": [actor, default_task("learner"), rollout]}})
    wait_for(lambda: ("default", name + "-learner") in tasks_by_key(api, name), what="the new Task")
    # RLark dereferences the missing entry only while the Task has a phase (as soon as an agent serves it)
    set_task_status(api, name + "-learner", "Running", "")
    merge_patch_job(api, name, {"spec": {"stopped": True}})

    def replicas():
        return {k[1]: t["spec"]["kubernetes"]["workload"]["replicas"] for k, t in tasks_by_key(api, name).items()}

    wait_for(lambda: replicas()[name + "-actor"] == 0 and replicas()[name + "-learner"] == 0, what="stop reaching")
    # the panic comes before the third template: the stop never reaches it and the status stays frozen
    assert replicas()[name + "-rollout"] == 1
    job = get_job(api, name)
    assert job["status"]["phase"] == "Pending"
    assert [e["name"] for e in job["status"]["tasks"]] == ["actor", "rollout"]


# ---------------------------------------------------------------- 3: status.tasks entries
def set_task_status(api, name, phase, message):
    return api.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", "tasks", name, {"status": {"phase": phase, "message": message}}
    )


def entries(api, job):
    """status.tasks of Job ``job``; [] until the controller first wrote a status."""
    return (get_job(api, job).get("status") or {}).get("tasks") or []


def entry(api, job, task):
    return next((e for e in entries(api, job) if e["name"] == task), {})


def test_status_entries_follow_phase_changes_only_and_take_even_an_empty_message(sandbox, api, jobs):
    name = jobs("entries", [default_task("actor", head=True)])
    # a just-created Task's entry is Pending although nothing wrote the Task's status
    wait_for(lambda: entry(api, name, "actor").get("phase") == "Pending", what="entry Pending")
    assert not tasks_by_key(api, name)[("default", name + "-actor")].get("status")
    set_task_status(api, name + "-actor", "Pending", "waiting for nodes")
    set_task_status(api, name + "-actor", "Running", "started")
    wait_for(lambda: entry(api, name, "actor") == {"name": "actor", "phase": "Running", "message": "started"})
    wait_for(lambda: job_phase(api, name) == "Running", what="job Running")
    later = set_task_status(api, name + "-actor", "Running", "a later message")
    sim_acted_on(api, sandbox, later, merge_patch_job(api, name, {"metadata": {"annotations": {"touch": "1"}}}))
    assert entry(api, name, "actor")["message"] == "started"  # same phase: message not copied
    set_task_status(api, name + "-actor", "Stopped", "")
    wait_for(lambda: entry(api, name, "actor") == {"name": "actor", "phase": "Stopped"}, what="message replaced")


# ---------------------------------------------------------------- 4, 5, 6: ray annotations
def annotations(api, job):
    return {k[1][len(job) + 1 :]: t["metadata"]["annotations"] for k, t in tasks_by_key(api, job).items()}


def totals_and_ranks(api, job):
    return {short: (a[TOTAL], a[RANK]) for short, a in annotations(api, job).items()}


def test_replica_change_by_update_leaves_other_tasks_annotations_stale(sandbox, api, jobs):
    actor, rollout, env = default_task("actor", head=True), default_task("rollout", replicas=2), default_task("env")
    name = jobs("stale", [actor, rollout, env])
    wait_for(lambda: len(tasks_by_key(api, name)) == 3, what="three tasks")
    assert totals_and_ranks(api, name) == {"actor": ("4", "0"), "rollout": ("4", "1"), "env": ("4", "3")}
    rollout["kubernetes"]["workload"]["replicas"] = 3
    merge_patch_job(api, name, {"spec": {"tasks": [actor, rollout, env]}})
    wait_for(lambda: totals_and_ranks(api, name)["rollout"] == ("5", "1"), what="rollout updated")
    sim_acted_on(api, sandbox, merge_patch_job(api, name, {"metadata": {"annotations": {"touch": "1"}}}))
    # spec-only compare: the actor's and env's Tasks did not change, their annotations are never rewritten
    assert totals_and_ranks(api, name) == {"actor": ("4", "0"), "rollout": ("5", "1"), "env": ("4", "3")}


def test_stop_shows_zeroed_totals_and_ranks_until_start(api, jobs):
    tasks = [default_task("actor", head=True), default_task("rollout", replicas=2), default_task("env")]
    name = jobs("zeroed", tasks)
    wait_for(lambda: len(tasks_by_key(api, name)) == 3, what="three tasks")
    merge_patch_job(api, name, {"spec": {"stopped": True}})
    # template i is zeroed (in the Job, through the shallow copy) before its own annotations are computed
    want = {"actor": ("3", "0"), "rollout": ("1", "0"), "env": ("0", "0")}
    wait_for(lambda: totals_and_ranks(api, name) == want, what="zeroed annotations")
    merge_patch_job(api, name, {"spec": {"stopped": False}})
    want = {"actor": ("4", "0"), "rollout": ("4", "1"), "env": ("4", "3")}
    wait_for(lambda: totals_and_ranks(api, name) == want, what="annotations restored on start")


def test_without_head_task_there_is_no_head_annotation(api, jobs):
    name = jobs("nohead", [default_task("rollout"), default_task("env")])
    got = wait_for(lambda: len(tasks_by_key(api, name)) == 2 and annotations(api, name), what="two tasks")
    assert all(HEAD not in a for a in got.values()), got
    name = jobs("head", [default_task("actor", head=True)])
    got = wait_for(lambda: annotations(api, name), what="task")
    assert got["actor"][HEAD] == name + "-actor"


# ---------------------------------------------------------------- 7: Go re-encoding
def test_task_spec_is_go_encoded(sandbox, api, jobs):
    tpl = default_task("actor", head=True)
    container = tpl["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": "1000m", "memory": "1024Mi"}, "requests": {"cpu": "1500m"}}
    container["args"] = []
    name = jobs("goenc", [tpl])
    task = wait_for(lambda: tasks_by_key(api, name).get(("default", name + "-actor")), what="task")
    workload = task["spec"]["kubernetes"]["workload"]
    got = workload["template"]["spec"]["containers"][0]
    assert got["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1500m"}}
    assert "args" not in got
    assert workload["template"]["metadata"] == {}
    # re-sent on every reconcile (1000m != 1 for Go's DeepEqual), but the server ignores the no-op
    rv = task["metadata"]["resourceVersion"]
    sim_acted_on(api, sandbox, merge_patch_job(api, name, {"metadata": {"annotations": {"touch": "1"}}}))
    assert tasks_by_key(api, name)[("default", name + "-actor")]["metadata"]["resourceVersion"] == rv


# ---------------------------------------------------------------- 8: no trimming
def test_first_comma_value_is_not_trimmed(api, jobs):
    name = jobs("trim", [template("actor", {"kubernetes.io/hostname": "a100-01 ,a100-02"}, head=True)])
    wait_for(lambda: tasks_by_key(api, name), what="task")
    assert list(tasks_by_key(api, name)) == [("default", name + "-actor")]


# ---------------------------------------------------------------- 9: event-driven resolution
def settle(api, sandbox, name, rounds=10):
    """Until the controller acted on Job ``name`` and left it as it was: no event of it is still pending.

    Its own status write is an event too (reconciled once more), so this repeats while the Job changes.
    """
    for _attempt in range(rounds):
        job = get_job(api, name)
        sim_acted_on(api, sandbox, job)
        if get_job(api, name)["metadata"]["resourceVersion"] == job["metadata"]["resourceVersion"]:
            return
    raise AssertionError("Job %s still changes after %d rounds of the controller" % (name, rounds))


def test_node_appearing_later_does_not_move_the_task_until_a_job_event(sandbox, api, jobs):
    label = "sim-late-" + secrets.token_hex(3)
    name = jobs("late", [template("actor", {"rlinf.io/pool": label}, head=True)])
    wait_for(lambda: tasks_by_key(api, name), what="task")
    assert list(tasks_by_key(api, name)) == [("default", name + "-actor")]
    # a status write still to be reconciled would be a Job event, and would rightly move the Task
    settle(api, sandbox, name)
    node = {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Node",
        "metadata": {"name": label, "labels": {"rlinf.io/pool": label, "kubernetes.io/hostname": label}},
        "spec": {},
    }
    created = api.create_namespaced_custom_object(GROUP, VERSION, "rlark-edge", "nodes", node)
    try:
        sim_acted_on(api, sandbox, created)
        assert list(tasks_by_key(api, name)) == [("default", name + "-actor")]
        merge_patch_job(api, name, {"metadata": {"annotations": {"touch": "1"}}})
        wait_for(lambda: ("rlark-edge", name + "-actor") in tasks_by_key(api, name), what="re-resolved on a Job event")
        assert ("default", name + "-actor") in tasks_by_key(api, name)  # the old Task stays behind
    finally:
        api.delete_namespaced_custom_object(GROUP, VERSION, "rlark-edge", "nodes", label)


# ---------------------------------------------------------------- 10: foreground deletion
def test_foreground_deletion_never_finishes_background_does(api, jobs):
    name = jobs("fg", [default_task("actor", head=True)])
    first = wait_for(lambda: tasks_by_key(api, name).get(("default", name + "-actor")), what="task")
    foreground = client.V1DeleteOptions(propagation_policy="Foreground")
    api.delete_cluster_custom_object(GROUP, VERSION, "jobs", name, body=foreground)
    # the garbage collector deletes the Task, the controller re-creates it: the Job never goes
    wait_for(
        lambda: (
            (tasks_by_key(api, name).get(("default", name + "-actor")) or first)["metadata"]["uid"]
            != first["metadata"]["uid"]
        ),
        what="Task re-created during foreground deletion",
    )
    job = get_job(api, name)
    assert job["metadata"]["deletionTimestamp"] and "foregroundDeletion" in job["metadata"]["finalizers"]
    api.patch_cluster_custom_object(GROUP, VERSION, "jobs", name, {"metadata": {"finalizers": None}})
    wait_for(lambda: not tasks_by_key(api, name), what="tasks gone after the Job")
    name = jobs("bg", [default_task("actor", head=True)])
    wait_for(lambda: tasks_by_key(api, name), what="task")
    background = client.V1DeleteOptions(propagation_policy="Background")
    api.delete_cluster_custom_object(GROUP, VERSION, "jobs", name, body=background)
    wait_for(lambda: not tasks_by_key(api, name), what="background cascade")


# ---------------------------------------------------------------- 11: the controller acts before the agent placed pods
def test_job_reads_running_while_another_task_has_no_pods_yet(sandbox, api, jobs):
    prefix = "early" + secrets.token_hex(2)
    actor = template("actor", {"kubernetes.io/hostname": "a100-01"}, head=True)
    rollout = template("rollout", {"kubernetes.io/hostname": "a100-02,a100-03"}, replicas=2)
    with sim_support.agent_held(sandbox, prefix + "-*-rollout"):
        name = jobs(prefix, [actor, rollout])
        # any Task Running is enough: RLark acts on that Task's event, the other Task has 0 pods and no status
        wait_for(lambda: job_phase(api, name) == "Running", what="job Running")
        held = tasks_of(api, name)[name + "-rollout"]
        assert not held.get("status") and not pod_crs(api, name + "-rollout")
        want = [("actor", "Running"), ("rollout", "Pending")]
        assert [(e["name"], e.get("phase")) for e in entries(api, name)] == want
    wait_placed(api, name, {"actor": 1, "rollout": 2})


# ---------------------------------------------------------------- 12: the pre-status stop window
def test_stop_before_a_new_tasks_first_status_is_processed_in_full(sandbox, api, jobs):
    actor = template("actor", {"kubernetes.io/hostname": "a100-01"}, head=True)
    name = jobs("prestat", [actor])
    wait_for(lambda: job_phase(api, name) == "Running", what="job Running")
    with sim_support.agent_held(sandbox, name + "-learner"):
        merge_patch_job(api, name, {"spec": {"tasks": [dict(actor, name="learner")]}})
        wait_for(lambda: name + "-learner" in tasks_of(api, name), what="the renamed Task")
        merge_patch_job(api, name, {"spec": {"stopped": True}})
        # no phase on the new Task yet: no nil-entry panic, the stop goes through to the Job's phase
        wait_for(lambda: job_phase(api, name) == "Stopped", what="job Stopped")
        learner = tasks_of(api, name)[name + "-learner"]
        assert phase_of(learner) is None
        assert learner["spec"]["kubernetes"]["workload"]["replicas"] == 0
        assert [e["name"] for e in entries(api, name)] == ["actor"]  # the new template never gets an entry
        assert tasks_of(api, name)[name + "-actor"]["spec"]["kubernetes"]["workload"]["replicas"] == 1  # orphaned


# ---------------------------------------------------------------- 13: the CRDs RLark's controller-manager needs
def test_upstream_crd_set_serves_the_domainpeer_kind_rlarks_domain_controller_watches(sandbox):
    ext = client.ApiextensionsV1Api(config.new_client_from_config(config_file=sandbox.kubeconfig))
    names = {c.metadata.name for c in ext.list_custom_resource_definition().items}
    if sandbox.crds == "upstream":
        assert {"domainpeers.rlinf.io", "addons.rlinf.io"} <= names
    else:  # the project set has no DomainPeer: RLark's controller-manager would log "no matches for kind"
        assert "domainpeers.rlinf.io" not in names
        assert not sandbox.state.get("controller_manager"), "RLark's controller-manager needs --crds upstream"


# ---------------------------------------------------------------- sandbox options
def owned_task(api, job_name):
    job = get_job(api, job_name)
    body = {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Task",
        "metadata": {
            "name": job_name + "-by-hand",
            "labels": {"rlinf.io/job": job_name},
            "ownerReferences": [
                {
                    "apiVersion": "rlinf.io/v1alpha1",
                    "kind": "Job",
                    "name": job_name,
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {"role": "Rollout"},
    }
    return api.create_namespaced_custom_object(GROUP, VERSION, "default", "tasks", body)


@pytest.mark.sim_only
def test_garbage_collector_without_controller_and_no_gc(sandbox, api, jobs, sim_mode):
    sim_mode(add=["--no-controller"])  # one flag-like --sim-args value: parsed, not an argparse error
    name = jobs("gc", [default_task("actor", head=True)])
    sim_support.wait_sim_passes(sandbox.dir, get_job(api, name), owned_task(api, name))
    assert list(tasks_by_key(api, name)) == [("default", name + "-by-hand")]  # no controller: no Task of its own
    api.delete_cluster_custom_object(GROUP, VERSION, "jobs", name)
    wait_for(lambda: not tasks_by_key(api, name), what="cascade by the garbage collector")
    sim_mode(add=["--no-controller", "--no-gc"])
    name = jobs("nogc", [default_task("actor", head=True)])
    owned_task(api, name)
    api.delete_cluster_custom_object(GROUP, VERSION, "jobs", name)  # answers a Status: no resourceVersion
    # a later Job event: a pass that saw it saw the delete before it
    sim_support.wait_sim_passes(sandbox.dir, get_job(api, jobs("mark", [default_task("actor")])))
    assert list(tasks_by_key(api, name)) == [("default", name + "-by-hand")]
    api.delete_namespaced_custom_object(GROUP, VERSION, "default", "tasks", name + "-by-hand")
