"""The seeded RLark fleet: Node CRs in rlark-<cluster-id> namespaces (see docs/sandbox.md)."""

GPU_PRODUCT = {"a100": "NVIDIA-A100-SXM4-80GB", "h100": "NVIDIA-H100-80GB-HBM3"}
NAMESPACES = ["rlark-system", "rlark-a100", "rlark-h100", "rlark-edge"]

# (namespace, name, pool, gpus, phase, unschedulable, extra labels, extra allocatable)
_FLEET = [
    ("rlark-a100", "a100-01", "head", 8, "Online", False, {}, {}),
    ("rlark-a100", "a100-02", "rollout", 8, "Online", False, {}, {}),
    ("rlark-a100", "a100-03", "rollout", 8, "Online", False, {}, {}),
    ("rlark-a100", "dual-01", "spare", 8, "Online", False, {}, {}),
    ("rlark-h100", "h100-01", "h100", 8, "Online", False, {}, {}),
    ("rlark-h100", "h100-02", "h100", 8, "Offline", False, {}, {}),
    # RLark reports a cordoned node Offline (Online iff Ready and schedulable), reason NodeUnschedulable.
    ("rlark-h100", "dual-01", "spare", 8, "Offline", True, {}, {}),
    (
        "rlark-edge",
        "robot-01",
        "robot",
        0,
        "Online",
        False,
        {"rlark.io/node-category": "robot", "rlark.io/node-category-robot": "true"},
        {"rlinf.io/device-arm": "1"},
    ),
    ("rlark-edge", "edge-01", "edge", 0, "Online", False, {"rlark.io/node-category": "edge"}, {}),
]


def _reason(phase, unschedulable):
    if unschedulable:
        return "NodeUnschedulable"
    return "NodeReady" if phase == "Online" else "NodeNotReady"


def nodes():
    """Node CR documents (metadata+spec) and their status, in seeding order."""
    out = []
    for index, (ns, name, pool, gpus, phase, unschedulable, labels, extra) in enumerate(_FLEET):
        cluster = ns[len("rlark-") :]
        all_labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "arm64" if name.startswith("robot") else "amd64",
            "rlark.io/cluster-id": ns,
            "rlark.io/agent-type": "Kubernetes",
            "rlinf.io/pool": pool,
        }
        annotations = {}
        if gpus:
            all_labels["nvidia.com/gpu.product"] = GPU_PRODUCT[cluster]
            all_labels["nvidia.com/gpu.count"] = str(gpus)
            annotations["rlark.io/gpu-model"] = GPU_PRODUCT[cluster].split("-")[1]
        all_labels.update(labels)
        resources = {"cpu": "16" if not gpus else "96", "memory": "64Gi" if not gpus else "1024Gi", "pods": "110"}
        if gpus:
            resources["nvidia.com/gpu"] = str(gpus)
        resources.update(extra)
        used = {key: "0" for key in resources if key != "pods"}
        doc = {
            "apiVersion": "rlinf.io/v1alpha1",
            "kind": "Node",
            "metadata": {"name": name, "namespace": ns, "labels": all_labels, "annotations": annotations},
            "spec": {"agentType": "Kubernetes", "unschedulable": unschedulable},
        }
        status = {
            "phase": phase,
            "reason": _reason(phase, unschedulable),
            "nodeInfo": {
                "agentVersion": "0.1.0",
                "architecture": all_labels["kubernetes.io/arch"],
                "kernelVersion": "5.15.0-sandbox",
                "operatingSystem": "linux",
            },
            "addresses": [
                {
                    "type": "InternalIP",
                    "address": "10.%d.0.%d" % (1 + ["a100", "h100", "edge"].index(cluster), 10 + index),
                },
                {"type": "Hostname", "address": name},
            ],
            "diskPressure": False,
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "used": used,
        }
        out.append((doc, status))
    return out
