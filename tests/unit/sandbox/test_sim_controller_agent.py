"""Pure parts of rlark-sim's controller and agent, checked against rlark-platform.md sections 2-3."""

from rlark_sim import controller, goencode, scheduling, workload
from rlark_sim.storage import LocalSink, resolve_path


def job(stopped=False, tasks=None):
    return {
        "metadata": {"name": "demo", "uid": "u1"},
        "spec": {
            "domain": "d",
            "stopped": stopped,
            "tasks": tasks
            or [
                {"name": "actor", "head": True, "role": "Actor", "kubernetes": {"workload": {"replicas": 1}}},
                {"name": "rollout", "role": "Rollout", "kubernetes": {"workload": {"replicas": 3}}},
                {"name": "env", "role": "Env"},
            ],
        },
    }


def test_ray_annotations():
    j = job()
    assert controller.ray_annotations(j, j["spec"]["tasks"][2]) == {
        "rlark.io/ray-total-nodes": "5",
        "rlark.io/ray-node-rank-start": "4",
        "rlark.io/ray-role": "worker",
        "rlark.io/ray-head-task-name": "demo-actor",
    }


def test_no_head_template_means_no_head_annotation_at_all():
    j = job(tasks=[{"name": "a", "role": "Rollout"}])
    assert "rlark.io/ray-head-task-name" not in controller.ray_annotations(j, j["spec"]["tasks"][0])


def test_stop_zeroes_the_shared_template_so_later_annotations_count_it_as_zero():
    j = job(stopped=True)
    actor, rollout, env = j["spec"]["tasks"]
    assert controller.build_task(j, actor, "ns")["metadata"]["annotations"]["rlark.io/ray-total-nodes"] == "4"
    rollout_task = controller.build_task(j, rollout, "ns")
    assert rollout_task["spec"]["domain"] == "d" and "sshPublicKey" not in rollout_task["spec"]
    assert rollout_task["spec"]["kubernetes"]["workload"]["replicas"] == 0
    assert rollout["kubernetes"]["workload"]["replicas"] == 0  # written through, as in RLark's shallow copy
    env_ann = controller.build_task(j, env, "ns")["metadata"]["annotations"]
    assert (env_ann["rlark.io/ray-total-nodes"], env_ann["rlark.io/ray-node-rank-start"]) == ("1", "0")


def test_status_entry_copied_only_on_phase_change_and_message_replaced_even_by_empty():
    entry = {"name": "a", "phase": "Running", "message": "old"}
    assert not controller.sync_status_entry(entry, "Running", "new")
    assert entry["message"] == "old"
    assert controller.sync_status_entry(entry, "Failed", "")
    assert entry == {"name": "a", "phase": "Failed"}
    assert not controller.sync_status_entry(entry, "", "x")


def test_namespace_resolution_uses_first_comma_value():
    seen = []

    def first_match(selector):
        seen.append(selector)
        return ("rlark-h100", "h100-01") if selector == {"kubernetes.io/hostname": "h100-01"} else None

    assert controller.resolve_namespace({"kubernetes.io/hostname": "h100-01,a100-01"}, first_match) == "rlark-h100"
    assert controller.resolve_namespace({"kubernetes.io/hostname": "a100-01"}, first_match) == "default"
    assert controller.resolve_namespace({}, first_match) == "default"
    assert controller.resolve_namespace({"bad key!": "x"}, first_match) == "default"
    assert controller.resolve_namespace({"kubernetes.io/hostname": "h100-01 ,a100-01"}, first_match) == "default"
    assert seen == [{"kubernetes.io/hostname": "h100-01"}, {"kubernetes.io/hostname": "a100-01"}]


def test_go_encoding_canonical_quantities_and_empty_lists():
    q = goencode.canonical_quantity
    assert [q("1000m"), q("1024Mi"), q("1536Mi"), q("1500m"), q("2000"), q("0.5"), q("512Mi"), q("4")] == [
        "1", "1Gi", "1536Mi", "1500m", "2k", "500m", "512Mi", "4",
    ]  # fmt: skip
    spec = {
        "kubernetes": {
            "workload": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "m", "args": [], "resources": {"limits": {"cpu": "1000m"}}},
                            {"name": "s"},
                        ]
                    }
                }
            }
        }
    }
    out = goencode.go_encoded_spec(spec)
    template = out["kubernetes"]["workload"]["template"]
    assert template["metadata"] == {}
    assert template["spec"]["containers"] == [
        {"name": "m", "resources": {"limits": {"cpu": "1"}}},
        {"name": "s", "resources": {}},
    ]
    # reflect.DeepEqual after decoding: 1000m keeps its scale (differs), 1024Mi equals 1Gi
    assert goencode.go_memory_view(spec) != goencode.go_memory_view(out)
    mem = {
        "kubernetes": {"workload": {"template": {"spec": {"containers": [{"resources": {"limits": {"m": "1024Mi"}}}]}}}}
    }
    assert goencode.go_memory_view(mem) == goencode.go_memory_view(goencode.go_encoded_spec(mem))


def test_phase_machine():
    nxt = controller.next_phase
    assert nxt("Pending", True, []) == ("Stopped", False)
    assert nxt("Running", True, ["Running"]) == ("Stopped", False)
    assert nxt("Stopped", True, []) == ("Stopped", False)
    assert nxt("Stopped", False, ["Stopped"]) == ("Pending", False)
    assert nxt("Pending", False, ["Running", "Pending"]) == ("Running", False)
    assert nxt("Pending", False, ["Running", "Failed"]) == ("Pending", False)
    assert nxt("Running", False, ["Succeeded", "Succeeded"]) == ("Succeeded", True)
    assert nxt("Running", False, ["Running", "Failed"]) == ("Failed", True)
    assert nxt("Running", False, ["Pending"]) == ("Running", False)


def task(selector, head=False, volumes=None, mounts=None, storage_map=None):
    return {
        "metadata": {
            "name": "demo-x",
            "namespace": "rlark-a100",
            "uid": "t1",
            "resourceVersion": "7",
            "annotations": {"rlark.io/ray-role": "head" if head else "worker", "rlark.io/ray-head-task-name": "demo-a"},
        },
        "spec": {
            "nodeSelector": selector,
            "runScript": "python x.py",
            "kubernetes": {
                "workload": {
                    "replicas": 2,
                    "pvcStorageMap": storage_map or {},
                    "template": {
                        "spec": {
                            "nodeSelector": {"old": "x"},
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "i",
                                    "args": ["ignored"],
                                    "volumeMounts": mounts or [],
                                    "resources": {"limits": {"nvidia.com/gpu": 2, "cpu": "4"}},
                                }
                            ],
                            "volumes": volumes or [],
                        }
                    },
                }
            },
        },
    }


def test_statefulset_mutations():
    sts = workload.build_workload(task({"rlinf.io/pool": "rollout", "kubernetes.io/hostname": "a,b"}))
    pod = sts["spec"]["template"]["spec"]
    main = pod["containers"][0]
    assert main["command"] == ["bash", "/rlark/scripts/ray_worker.sh"]
    assert main["securityContext"]["privileged"] is True
    assert pod["nodeSelector"] == {"rlinf.io/pool": "rollout"}
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["a", "b"]}]}]
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname" and anti["labelSelector"]["matchLabels"] == {"app": "demo-x"}
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert sts["spec"]["selector"]["matchLabels"] == {"app": "demo-x"} == sts["spec"]["template"]["metadata"]["labels"]
    env = {e["name"]: e.get("value") for e in main["env"]}
    assert env["RLARK_HEAD_ADDRESS"] == "demo-a-ray-head"
    head = workload.build_workload(task({}, head=True))["spec"]["template"]["spec"]
    assert head["containers"][0]["command"] == ["bash", "/rlark/scripts/ray_head.sh"]
    assert "hostNetwork" not in head and head["nodeSelector"] == {"old": "x"}


def test_comma_keys_are_ored_like_rlark():
    pod = workload.build_workload(task({"a": "1,2", "b": "3,4"}))["spec"]["template"]["spec"]
    assert scheduling.node_matches(pod, {"a": "1", "old": "x"})  # only one comma key matches: still eligible
    assert scheduling.node_matches(pod, {"b": "4", "old": "x"})
    assert not scheduling.node_matches(pod, {"a": "9", "b": "9", "old": "x"})


def node(name, phase="Online", unschedulable=False, gpu="8", used="0", labels=None):
    return {
        "metadata": {
            "name": name,
            "namespace": "rlark-a100",
            "labels": dict({"kubernetes.io/hostname": name}, **(labels or {})),
        },
        "spec": {"unschedulable": unschedulable},
        "status": {"phase": phase, "allocatable": {"nvidia.com/gpu": gpu}, "used": {"nvidia.com/gpu": used}},
    }


def test_eligibility_reasons_and_resources():
    pod = workload.build_workload(task({"kubernetes.io/hostname": "n1"}))["spec"]["template"]["spec"]
    req = scheduling.pod_requests(pod)
    assert req == {"nvidia.com/gpu": 2}
    cr_only = scheduling.DEFAULT_CR_ONLY_LABELS
    assert scheduling.ineligibility(node("n1"), pod, req, [], cr_only) is None
    assert scheduling.ineligibility(node("n1", phase="Offline"), pod, req, [], cr_only) == "node(s) were not ready"
    assert (
        scheduling.ineligibility(node("n1", unschedulable=True), pod, req, [], cr_only) == "node(s) were unschedulable"
    )
    assert scheduling.ineligibility(node("n1", used="7"), pod, req, [], cr_only) == "Insufficient nvidia.com/gpu"
    assert "affinity" in scheduling.ineligibility(node("n2"), pod, req, [], cr_only)
    placed = [{"metadata": {"annotations": {scheduling.ANN_REQUESTS: '{"nvidia.com/gpu": 7}'}}}]
    assert scheduling.ineligibility(node("n1"), pod, req, placed, cr_only) == "Insufficient nvidia.com/gpu"


def test_cr_only_labels_are_invisible_to_the_scheduler():
    pod = workload.build_workload(task({"rlark.io/cluster-id": "rlark-a100"}))["spec"]["template"]["spec"]
    n = node("n1", labels={"rlark.io/cluster-id": "rlark-a100"})
    assert scheduling.ineligibility(n, pod, {}, [], scheduling.DEFAULT_CR_ONLY_LABELS) is not None
    assert scheduling.ineligibility(n, pod, {}, [], ()) is None


def test_container_paths_map_to_hostpath_subpath_or_scratch(tmp_path):
    t = task(
        {},
        head=True,
        volumes=[{"name": "data", "hostPath": {"path": "/data/rlinf"}}, {"name": "d2", "hostPath": {"path": "/mnt"}}],
        mounts=[
            {"name": "data", "mountPath": "/workspace"},
            {"name": "d2", "mountPath": "/workspace/sub", "subPath": "s"},
        ],
    )
    sink, rel = resolve_path(t, "/workspace/logs/x", "a100-01", str(tmp_path), None, "demo-x-0")
    assert isinstance(sink, LocalSink) and sink.root == str(tmp_path / "nodes/a100-01/data/rlinf") and rel == "logs/x"
    sink, rel = resolve_path(t, "/workspace/sub/y", "a100-01", str(tmp_path), None, "demo-x-0")
    assert sink.root == str(tmp_path / "nodes/a100-01/mnt") and rel == "s/y"
    sink, rel = resolve_path(t, "/tmp/z", "a100-01", str(tmp_path), None, "demo-x-0")
    assert sink.root == str(tmp_path / "ephemeral/demo-x-0") and rel == "tmp/z"
