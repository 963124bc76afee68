"""Tasks keyed by namespace and name; the write checks rlark_job runs around a create or update."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import jobs, task_identity, verify, write_checks
from ansible_collections.rlark.ops.plugins.module_utils.selectors import static_selector_findings


def task(name, namespace, phase="Running", replicas=1):
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"kubernetes": {"workload": {"replicas": replicas}}},
        "status": {"phase": phase},
    }


def pod(task_name, namespace, node):
    return {
        "metadata": {"namespace": namespace, "labels": {"rlark.io/task-name": task_name}},
        "status": {"node": node, "phase": "Running"},
    }


def job(replicas=(1, 2), selector="a100-01"):
    return {
        "metadata": {"name": "demo"},
        "spec": {
            "tasks": [
                {"name": "actor", "head": True, "nodeSelector": {"kubernetes.io/hostname": selector}},
                {"name": "rollout", "kubernetes": {"workload": {"replicas": replicas[1]}}},
            ]
        },
    }


def ids(found):
    return [(f["id"], f["severity"], f["path"]) for f in found]


def test_same_name_in_two_namespaces_and_default_are_findings():
    tasks = [task("demo-actor", "rlark-a100"), task("demo-actor", "rlark-h100"), task("demo-rollout", "default")]
    assert ids(task_identity.placement_findings(job(), tasks)) == [
        ("task-duplicate-namespaces", "error", "spec.tasks[0].nodeSelector"),
        ("task-default-namespace", "error", "spec.tasks[1].nodeSelector"),
    ]
    assert task_identity.placement_findings(job(), tasks[:1]) == []


def test_pods_belong_to_the_task_of_their_namespace():
    pods = [pod("demo-actor", "rlark-a100", "a100-01"), pod("demo-actor", "rlark-h100", "dual-01")]
    assert task_identity.pods_of(task("demo-actor", "rlark-h100"), pods) == [pods[1]]


class FakeClient:
    def __init__(self, job, tasks, pods=()):
        self.job, self.tasks, self.pods = job, tasks, list(pods)

    def get_or_none(self, path):
        return self.job

    def list(self, path, label_selector=None):
        return (self.tasks if "/tasks" in path else self.pods), "1"


def test_started_wait_stops_at_once_on_a_duplicate_or_default_task():
    client = FakeClient(job(), [task("demo-actor", "rlark-a100"), task("demo-actor", "rlark-h100")])
    with pytest.raises(jobs.Refused) as err:
        jobs.started_check(client, "demo")()
    assert ids(err.value.findings) == [("task-duplicate-namespaces", "error", "spec.tasks[0].nodeSelector")]
    client = FakeClient(job(), [task("demo-actor", "default")])
    with pytest.raises(jobs.Refused) as err:
        jobs.started_check(client, "demo")()
    assert ids(err.value.findings) == [("task-default-namespace", "error", "spec.tasks[0].nodeSelector")]


def test_stopped_wait_keys_tasks_by_namespace_and_refuses_duplicates():
    client = FakeClient(job(), [task("demo-actor", "rlark-a100", replicas=0), task("demo-actor", "rlark-h100")])
    with pytest.raises(jobs.Refused) as err:
        jobs.stopped_check(client, "demo")()
    assert err.value.findings[0]["id"] == "task-duplicate-namespaces"
    client = FakeClient(job(), [task("demo-actor", "rlark-a100", replicas=0), task("demo-rollout", "rlark-a100")])
    done, summary, _tree = jobs.stopped_check(client, "demo")()
    assert not done and summary.startswith("1 task(s)")


def test_verify_counts_pods_of_the_proven_clusters_copy_and_refuses_duplicates():
    j = job(selector="dual-01")
    tasks = [task("demo-actor", "rlark-a100"), task("demo-actor", "rlark-h100"), task("demo-rollout", "rlark-a100")]
    pods = [pod("demo-actor", "rlark-a100", "dual-01"), pod("demo-rollout", "rlark-a100", "a100-02")]
    pods.append(pod("demo-rollout", "rlark-a100", "a100-03"))
    proof = {"tasks": [{"name": "actor", "cluster": "rlark-a100"}, {"name": "rollout", "cluster": "rlark-a100"}]}
    st = verify.job_state({"job": j, "tasks": tasks, "pods": pods}, proof)
    assert not st["submitted"] and not st["running"]
    assert [f["id"] for f in st["findings"]] == ["task-duplicate-namespaces"]
    assert st["observed"]["actor"]["namespace"] == "rlark-a100" and st["observed"]["actor"]["pods"] == 1


def test_whitespace_around_a_selector_value_is_refused():
    found = static_selector_findings({"kubernetes.io/hostname": "a100-01 ,a100-02"}, "spec.tasks[0].nodeSelector")
    assert ("selector-whitespace", "error", "spec.tasks[0].nodeSelector[kubernetes.io/hostname]") in ids(found)
    assert not static_selector_findings({"kubernetes.io/hostname": "a100-01"}, "p")


class NodeClient(FakeClient):
    def __init__(self, live_job, nodes):
        super().__init__(live_job, [])
        self.nodes, self.selectors = nodes, []

    def list(self, path, label_selector=None):
        self.selectors.append(label_selector)
        key, value = label_selector.split("=")
        return [n for n in self.nodes if n["metadata"]["labels"].get(key) == value], "7"


def node(name, namespace):
    return {"metadata": {"name": name, "namespace": namespace, "labels": {"kubernetes.io/hostname": name}}}


def test_write_check_resolves_like_rlark_and_refuses_two_clusters():
    nodes = [node("dual-01", "rlark-a100"), node("dual-01", "rlark-h100"), node("a100-01", "rlark-a100")]
    client = NodeClient(None, nodes)
    with pytest.raises(jobs.Refused) as err:
        write_checks.check_before_write(client, job(selector="dual-01,a100-01"))()
    assert ids(err.value.findings) == [("selector-multi-cluster", "error", "spec.tasks[0].nodeSelector")]
    assert client.selectors == ["kubernetes.io/hostname=dual-01"]  # first comma value only
    assert write_checks.check_before_write(NodeClient(None, nodes), job())() == []
    with pytest.raises(jobs.Refused) as err:
        write_checks.check_before_write(NodeClient(None, nodes), job(selector=" a100-01"))()
    assert err.value.findings[0]["id"] == "selector-whitespace"


def test_replica_change_warns_about_stale_annotations():
    found = write_checks.replica_change_findings(job(replicas=(1, 2)), job(replicas=(1, 3)))
    assert ids(found) == [("job-update-stale-annotations", "warning", "spec.tasks")]
    assert "rollout 2->3" in found[0]["message"]
    assert write_checks.replica_change_findings(job(), job()) == []
