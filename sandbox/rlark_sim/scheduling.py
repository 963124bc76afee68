"""The simulated scheduler's arithmetic: requests, node selection and free resources on Node CRs.

Only the resources RLark tracks (GPUs and rlinf devices) are counted; labels that exist only on the
Node CR (``DEFAULT_CR_ONLY_LABELS``) are invisible to the scheduler, as on a real data-plane node.
"""

import hashlib
import json

ANN_REQUESTS = "rlark-sim.rlinf.io/requests"
ANN_BASE_USED = "rlark-sim.rlinf.io/base-used"
# Labels that exist only on the Node CR, never on the data-plane node (the scheduler cannot see them).
DEFAULT_CR_ONLY_LABELS = ("rlark.io/cluster-id", "rlark.io/agent-type")


def parse_quantity(value):
    """Integer-ish quantity (GPUs, devices); enough for extended resources, which must be integers."""
    if value is None:
        return 0
    text = str(value).strip()
    suffixes = {"k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for suffix in sorted(suffixes, key=len, reverse=True):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * suffixes[suffix])
    if text.endswith("m"):
        return int(text[:-1]) / 1000.0
    return float(text) if "." in text else int(text)


def is_tracked_resource(key):
    return key == "nvidia.com/gpu" or key == "rlinf.io/device" or key.startswith("rlinf.io/device-")


def pod_requests(pod_spec):
    """Summed container requests of the tracked resources (limits stand in for missing requests)."""
    total = {}
    for container in pod_spec.get("containers") or []:
        res = container.get("resources") or {}
        merged = dict(res.get("limits") or {})
        merged.update(res.get("requests") or {})
        for key, value in merged.items():
            if is_tracked_resource(key):
                total[key] = total.get(key, 0) + parse_quantity(value)
    return total


def _expr_matches(expr, labels):
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def node_matches(pod_spec, labels):
    """Pod nodeSelector (all equal) AND required node affinity (terms ORed, expressions ANDed)."""
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required:
        terms = required.get("nodeSelectorTerms") or []
        if not any(all(_expr_matches(e, labels) for e in t.get("matchExpressions") or []) for t in terms):
            return False
    return True


def free_resources(node, pods_on_node):
    """allocatable - base used - requests of simulated pods on the node."""
    status = node.get("status") or {}
    alloc = {k: parse_quantity(v) for k, v in (status.get("allocatable") or {}).items()}
    base = base_used(node)
    free = {k: v - base.get(k, 0) for k, v in alloc.items()}
    for pod in pods_on_node:
        for key, value in pod_requests_of_cr(pod).items():
            free[key] = free.get(key, 0) - value
    return free


def base_used(node):
    ann = (node["metadata"].get("annotations") or {}).get(ANN_BASE_USED)
    if ann is not None:
        return {k: parse_quantity(v) for k, v in json.loads(ann).items()}
    return {k: parse_quantity(v) for k, v in ((node.get("status") or {}).get("used") or {}).items()}


def pod_requests_of_cr(pod):
    raw = (pod["metadata"].get("annotations") or {}).get(ANN_REQUESTS)
    return json.loads(raw) if raw else {}


def ineligibility(node, pod_spec, requests, pods_on_node, cr_only_labels):
    """None if the pod fits on the node, else a scheduler-like reason."""
    status = node.get("status") or {}
    if status.get("phase") != "Online":
        return "node(s) were not ready"
    if (node.get("spec") or {}).get("unschedulable"):
        return "node(s) were unschedulable"
    labels = {k: v for k, v in (node["metadata"].get("labels") or {}).items() if k not in cr_only_labels}
    if not node_matches(pod_spec, labels):
        return "node(s) didn't match Pod's node affinity/selector"
    free = free_resources(node, pods_on_node)
    for key, value in requests.items():
        if free.get(key, 0) < value:
            return "Insufficient %s" % key
    return None


def pod_ip(pod_name, node, host_network):
    if host_network:
        for addr in (node.get("status") or {}).get("addresses") or []:
            if addr.get("type") == "InternalIP":
                return addr["address"]
        digest = hashlib.sha256(node["metadata"]["name"].encode()).digest()
        return "192.168.%d.%d" % (digest[0], max(1, digest[1]))
    digest = hashlib.sha256(pod_name.encode()).digest()
    return "10.244.%d.%d" % (digest[0], max(1, digest[1]))
