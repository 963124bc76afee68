# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node selector rules and RLark's namespace resolution.

RLark resolves a Task's cluster namespace from an equality selector built from only the **first**
element of each comma-separated value, matched against Nodes in **all** namespaces; the namespace of
the first match wins, and ``default`` is used when the selector is empty or nothing matches.
The agent then turns single values into a pod ``nodeSelector`` and comma values into ORed
``nodeAffinity`` terms. Keys that exist only on the Node CR never reach the data-plane node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.findings import finding

# Labels RLark puts only on the Node custom resource, never on the data-plane node.
CR_ONLY_LABEL_KEYS = ("rlark.io/cluster-id", "rlark.io/agent-type")
# Keys RLark keeps as annotations, so a selector on them matches nothing.
ANNOTATION_ONLY_KEYS = ("rlark.io/city", "rlark.io/gpu-model", "rlark.io/device-model", "rlark.io/model")
DEFAULT_NAMESPACE = "default"


def resolution_selector(node_selector):
    """The equality selector RLark's controller resolves the namespace with (first comma value)."""
    return {k: str(v).split(",", 1)[0] for k, v in (node_selector or {}).items()}


def whitespace_findings(node_selector, path):
    """Values with whitespace around them: RLark resolves the cluster from the first value untrimmed."""
    found = []
    for key, value in sorted((node_selector or {}).items()):
        text = "" if value is None else str(value)
        if text.strip() and any(part != part.strip() for part in text.split(",")):
            found.append(
                finding(
                    "selector-whitespace",
                    "Selector %s=%r has whitespace around a value: RLark resolves the cluster from %r as written, "
                    "which matches no Node label, so the Task lands in 'default' where no agent runs it."
                    % (key, text, text.split(",", 1)[0]),
                    path="%s[%s]" % (path, key),
                    hint="Remove the spaces around the values.",
                )
            )
    return found


def static_selector_findings(node_selector, path):
    """Findings that need no Node inventory: empty, comma multi-value, CR-only or annotation keys."""
    found = []
    if not node_selector:
        return [
            finding(
                "selector-empty",
                "The nodeSelector is empty: RLark puts the Task in namespace 'default', where no agent runs it.",
                path=path,
                hint="Use the admin-verified single-value selector from the deployment profile.",
            )
        ]
    for key, value in sorted(node_selector.items()):
        kpath = "%s[%s]" % (path, key)
        text = "" if value is None else str(value)
        if "," in text:
            found.append(
                finding(
                    "selector-multivalue",
                    "Selector %s=%s has comma-separated values: RLark resolves the cluster from %r only, "
                    "while pods may land on any listed value." % (key, text, text.split(",", 1)[0]),
                    path=kpath,
                    hint="Use one value per key, proven to match exactly the intended nodes.",
                )
            )
        if not text.strip():
            found.append(finding("selector-empty-value", "Selector key %s has an empty value." % key, path=kpath))
        found.extend(whitespace_findings({key: value}, path))
        if key in CR_ONLY_LABEL_KEYS:
            found.append(
                finding(
                    "selector-cr-only-key",
                    "Selector key %s exists only on RLark's Node CR, not on the data-plane node: "
                    "the pod would stay unschedulable." % key,
                    path=kpath,
                    hint="Select on a real node label such as kubernetes.io/hostname.",
                )
            )
        if key in ANNOTATION_ONLY_KEYS:
            found.append(
                finding(
                    "selector-annotation-key",
                    "Selector key %s is an annotation on RLark Nodes, not a label: it matches nothing." % key,
                    path=kpath,
                    hint="Select on a real node label.",
                )
            )
    return found


def matches(labels, selector):
    """Equality match of a label dict against a selector dict."""
    labels = labels or {}
    return all(labels.get(k) == v for k, v in selector.items())


def resolve_namespace(node_selector, nodes):
    """Namespace RLark's controller would pick for a Task, given Node CRs in list order."""
    if not node_selector:
        return DEFAULT_NAMESPACE
    wanted = resolution_selector(node_selector)
    for node in nodes:
        meta = node.get("metadata", {})
        if matches(meta.get("labels"), wanted):
            return meta.get("namespace") or DEFAULT_NAMESPACE
    return DEFAULT_NAMESPACE


# --- the inventory proof ------------------------------------------------------------------------
# Resource names RLark's console treats as accelerators (UI/utils/nodeResources.ts).
GPU_RESOURCE = "nvidia.com/gpu"
DEVICE_PREFIX = "rlinf.io/device"


def _quantity(value):
    """Integer-ish quantity of a countable resource ("8", 8, "1k" is not used for devices)."""
    try:
        return float(str(value))
    except (TypeError, ValueError):
        return 0.0


def _accelerator(resource):
    return resource == GPU_RESOURCE or resource.endswith("/gpu") or resource.startswith(DEVICE_PREFIX)


def worker_requests(pod_template):
    """Per-worker accelerator requests of a pod template (requests, else limits, summed over containers)."""
    total = {}
    spec = (pod_template or {}).get("spec") or {}
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        merged = dict(resources.get("limits") or {})
        merged.update(resources.get("requests") or {})
        for name, value in merged.items():
            if _accelerator(name):
                total[name] = total.get(name, 0.0) + _quantity(value)
    return total


def selectors_from_job(job):
    """``[{name, selector, replicas, head, requests}]`` from a Job's task templates."""
    out = []
    for tmpl in jobspec.tasks(job):
        out.append(
            {
                "name": tmpl.get("name"),
                "selector": dict(tmpl.get("nodeSelector") or {}),
                "replicas": jobspec.replicas(tmpl),
                "head": bool(tmpl.get("head")),
                "requests": worker_requests(jobspec.pod_template(tmpl)),
            }
        )
    return out


def placement_label_selector(node_selector):
    """Server-side label selector for every node a pod may land on: ``k in (v1,v2)`` per key.

    It is a superset of RLark's resolution selector (first value per key), so one list gives both.
    """
    parts = []
    for key, value in sorted((node_selector or {}).items()):
        values = [v.strip() for v in str("" if value is None else value).split(",")]
        values = sorted(set(values))
        parts.append("%s=%s" % (key, values[0]) if len(values) == 1 else "%s in (%s)" % (key, ",".join(values)))
    return ",".join(parts)


def placement_matches(labels, node_selector):
    """The agent's placement rule: for every key the label equals one of its comma values."""
    labels = labels or {}
    for key, value in (node_selector or {}).items():
        values = [v.strip() for v in str("" if value is None else value).split(",")]
        if key not in labels or labels[key] not in values:
            return False
    return True


def node_view(node):
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "cluster": meta.get("namespace"),
        "phase": status.get("phase") or "Unknown",
        "schedulable": not (node.get("spec") or {}).get("unschedulable", False),
        "disk_pressure": bool(status.get("diskPressure")),
        "allocatable": dict(status.get("allocatable") or {}),
        "used": dict(status.get("used") or {}),
    }


def cluster_namespace(cluster_id):
    """Accept ``a100`` or ``rlark-a100`` (the namespace) for the approved cluster."""
    if not cluster_id:
        return None
    return cluster_id if cluster_id.startswith("rlark-") or cluster_id == DEFAULT_NAMESPACE else "rlark-" + cluster_id


def _node_findings(task, node, index, path, own_used=None):
    """Findings about one matched node; each carries ``node`` and ``namespace`` for machine use.

    ``own_used`` is what the re-proven Job's own pods hold on this node: they are already counted
    in ``status.used``, and they are the very pods the proof is about, so they do not compete.
    """
    found = []
    where = "%s/%s" % (node["namespace"], node["name"])
    about = {"node": node["name"], "namespace": node["namespace"]}
    if node["phase"] != "Online":
        found.append(
            finding(
                "node-offline",
                "Task %r matches node %s, which is %s." % (task["name"], where, node["phase"]),
                path=path,
                hint="Fix the node or select another one.",
                **about,
            )
        )
    if not node["schedulable"]:
        found.append(
            finding(
                "node-cordoned",
                "Task %r matches node %s, which is cordoned (spec.unschedulable)." % (task["name"], where),
                path=path,
                hint="Uncordon it or select another node.",
                **about,
            )
        )
    if node["disk_pressure"]:
        found.append(
            finding(
                "node-disk-pressure",
                "Task %r matches node %s, which reports disk pressure." % (task["name"], where),
                path=path,
                hint="Free disk space on the node before pods land there.",
                **about,
            )
        )
    own_used = own_used or {}
    for resource, amount in sorted((task.get("requests") or {}).items()):
        if amount <= 0:
            continue
        used = _quantity(node["used"].get(resource, 0)) - own_used.get(resource, 0)
        free = _quantity(node["allocatable"].get(resource, 0)) - max(used, 0)
        if free < amount:
            own = " (not counting %g held by the Job's own pods)" % own_used[resource] if own_used.get(resource) else ""
            found.append(
                finding(
                    "node-insufficient-resources",
                    "Node %s has %g %s free (allocatable minus used%s), task %r needs %g per worker."
                    % (where, free, resource, own, task["name"], amount),
                    path=path,
                    hint="Pick a node with free capacity or stop what uses it.",
                    **about,
                )
            )
    return found


def _placement(task, nodes, index, cluster_id, expected_nodes, path_prefix):
    """Where RLark puts one task: the clusters its resolution selector hits, the nodes the agent places on."""
    selector = task.get("selector") or {}
    wanted = resolution_selector(selector)
    resolving = [n for n in nodes if selector and matches((n.get("metadata") or {}).get("labels"), wanted)]
    clusters = []
    for node in resolving:
        ns = (node.get("metadata") or {}).get("namespace")
        if ns not in clusters:
            clusters.append(ns)
    cluster = clusters[0] if clusters else DEFAULT_NAMESPACE
    placed = [
        node_view(n)
        for n in nodes
        if selector
        and (n.get("metadata") or {}).get("namespace") == cluster
        and placement_matches((n.get("metadata") or {}).get("labels"), selector)
    ]
    return {
        "task": task,
        "name": task.get("name"),
        "head": bool(task.get("head")),
        "replicas": task.get("replicas", 1),
        "selector": selector,
        "wanted": wanted,
        "resolving": resolving,
        "clusters": clusters,
        "cluster": cluster,
        "placed": placed,
        "approved": cluster_namespace(cluster_id),
        "expected_nodes": expected_nodes,
        "path": "%s[%d].nodeSelector" % (path_prefix, index),
        "replicas_path": "%s[%d].kubernetes.workload.replicas" % (path_prefix, index),
    }


def _multi_cluster(p):
    if len(p["clusters"]) > 1:
        return finding(
            "selector-multi-cluster",
            "Task %r: selector %s matches Nodes in %d clusters (%s); RLark picks the first one its cache "
            "returns, so the Task can land in or flip between them."
            % (p["name"], p["wanted"], len(p["clusters"]), ", ".join(p["clusters"])),
            path=p["path"],
            hint="Make the first value of each key identify exactly one cluster (e.g. a unique hostname).",
        )
    return None


def _no_match(p):
    if p["selector"] and not p["resolving"]:
        return finding(
            "selector-no-match",
            "Task %r: selector %s matches no Node in any cluster, so RLark puts the Task in 'default' where "
            "no agent runs it." % (p["name"], p["wanted"]),
            path=p["path"],
            hint="Check the label keys and values against the Node CRs.",
        )
    return None


def _wrong_cluster(p):
    approved = p["approved"]
    if approved and p["selector"] and p["resolving"] and approved not in p["clusters"][:1]:
        return finding(
            "selector-wrong-cluster",
            "Task %r resolves to cluster %s, not the approved %s." % (p["name"], p["cluster"], approved),
            path=p["path"],
            hint="Use the admin-approved selector for %s." % approved,
        )
    return None


def _head_match_count(p):
    if p["head"] and len(p["placed"]) != 1 and p["selector"]:
        return finding(
            "head-match-count",
            "Head task %r matches %d nodes in %s; it must match exactly one."
            % (p["name"], len(p["placed"]), p["cluster"]),
            path=p["path"],
            hint="Select the head node by its unique hostname.",
        )
    return None


def _head_replicas(p):
    if p["head"] and p["replicas"] != 1:
        return finding(
            "head-replicas",
            "Head task %r has %s replicas; RLinf's head runs exactly one." % (p["name"], p["replicas"]),
            path=p["replicas_path"],
            hint="Set replicas to 1 on the head task.",
        )
    return None


def _replicas_match(p):
    placed, replicas = p["placed"], p["replicas"]
    if not p["selector"] or not placed or replicas == len(placed) or p["head"]:
        return None
    more = replicas > len(placed)
    return finding(
        "replicas-match-mismatch",
        "Task %r has %s replicas but its selector matches %d node(s) in %s%s."
        % (
            p["name"],
            replicas,
            len(placed),
            p["cluster"],
            ": with RLark's one-pod-per-host anti-affinity some pods stay Pending"
            if more
            else ": pods may land on any of them",
        ),
        severity="error" if more else "warning",
        path=p["path"],
        hint="Make replicas equal the number of selected nodes.",
    )


def _drift(p):
    if p["expected_nodes"] is None:
        return None
    want = sorted(p["expected_nodes"])
    have = sorted(n["name"] for n in p["placed"])
    if want == have:
        return None
    return finding(
        "selector-drift",
        "Task %r now matches %s, but the recorded match list is %s." % (p["name"], have, want),
        path=p["path"],
        hint="Find out which node labels changed before launching.",
    )


# The placement rules of one task, in the order their findings are reported: (id, severities, check).
# The per-node rules (_node_findings) report between the placement rules and the drift check.
PLACEMENT_RULES = (
    ("selector-multi-cluster", ("error",), _multi_cluster),
    ("selector-no-match", ("error",), _no_match),
    ("selector-wrong-cluster", ("error",), _wrong_cluster),
    ("head-match-count", ("error",), _head_match_count),
    ("head-replicas", ("error",), _head_replicas),
    ("replicas-match-mismatch", ("error", "warning"), _replicas_match),
)
DRIFT_RULES = (("selector-drift", ("error",), _drift),)


def _apply(rules, placement):
    return [f for f in (check(placement) for _id, _severities, check in rules) if f is not None]


def prove_task(task, nodes, index, cluster_id=None, expected_nodes=None, path_prefix="spec.tasks", own_used=None):
    """Proof entry and findings for one task, given the Node CRs its placement selector matched.

    ``nodes`` are in the API's list order; RLark takes the namespace of the first Node matching
    the resolution selector, and the agent of that cluster places the pods there. ``own_used`` is
    ``nodes.own_usage()`` of the Job being re-proven (None: count every pod as used).
    """
    p = _placement(task, nodes, index, cluster_id, expected_nodes, path_prefix)
    found = list(static_selector_findings(p["selector"], p["path"]))
    found.extend(_apply(PLACEMENT_RULES, p))
    own_used = own_used or {}
    for node in p["placed"]:
        held = own_used.get((node["namespace"], node["name"]))
        if held:
            node["own_used"] = dict(held)
        found.extend(_node_findings(task, node, index, p["path"], held))
    found.extend(_apply(DRIFT_RULES, p))
    entry = {
        "name": p["name"],
        "selector": p["selector"],
        "resolution_selector": p["wanted"],
        "label_selector": placement_label_selector(p["selector"]),
        "replicas": p["replicas"],
        "head": p["head"],
        "matches": p["placed"],
        "count": len(p["placed"]),
        "cluster": p["cluster"],
        "clusters": p["clusters"],
        "ok": not any(f["severity"] == "error" for f in found),
    }
    return entry, found


def prove_selectors(
    tasks, nodes_by_selector, cluster_id=None, expected_nodes=None, path_prefix="spec.tasks", own_used=None
):
    """The uniqueness proof for all tasks: ``(per-task entries, findings)``.

    ``nodes_by_selector`` maps ``placement_label_selector(task selector)`` to the matching Node CRs
    in every namespace (as listed by the API); ``expected_nodes`` maps task names to recorded node
    names; ``own_used`` is ``nodes.own_usage()`` of the Job being re-proven.
    """
    entries = []
    found = []
    for index, task in enumerate(tasks):
        key = placement_label_selector(task.get("selector"))
        nodes = nodes_by_selector.get(key, []) if task.get("selector") else []
        expected = None if expected_nodes is None else expected_nodes.get(task.get("name"))
        entry, task_found = prove_task(task, nodes, index, cluster_id, expected, path_prefix, own_used)
        entries.append(entry)
        found.extend(task_found)
    return entries, found


__all__ = [
    "ANNOTATION_ONLY_KEYS",
    "CR_ONLY_LABEL_KEYS",
    "DEFAULT_NAMESPACE",
    "matches",
    "placement_label_selector",
    "placement_matches",
    "prove_selectors",
    "prove_task",
    "resolution_selector",
    "resolve_namespace",
    "selectors_from_job",
    "static_selector_findings",
    "worker_requests",
]
