"""The data-plane side of the agent: each cluster's Nodes and pods as core/v1 objects in its own apiserver.

A Node CR of `rlark-<id>` becomes a core/v1 Node of cluster <id> whose kubelet endpoint is
rlark-sim's log server for that cluster; a Pod CR becomes the pod `<job>-<task>-<ordinal>` in
`rlark-system`, bound to that Node, with container statuses that follow the simulated container
(restartCount from the pod log's container starts, terminated while the Job stops).
"""

import json
import logging
import time
from dataclasses import dataclass

from . import podlog
from .agent import ANN_STOPPING
from .kube import ApiError, Kube, core_path
from .kubelet import KubeletServer
from .workload import LOCAL_NAME_LABEL, SYSTEM_NS, TASK_NAME_LABEL, workload_of

log = logging.getLogger("rlark_sim.dataplane")
POD_CR_ANNOTATION = "rlark-sim.rlinf.io/pod-cr"
CR_ONLY_LABELS = ("rlark.io/cluster-id", "rlark.io/agent-type")
NODE_IP = "127.0.0.1"  # every node's kubelet is rlark-sim on loopback (one port per cluster)


def _iso(ns):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ns // 1_000_000_000))


@dataclass
class Served:
    """What the kubelet of a cluster knows about one pod it runs."""

    uid: str
    log: podlog.PodLog
    containers: tuple
    stopping: bool

    def running(self):
        return not self.stopping


class Cluster:
    def __init__(self, cluster_id, conf):
        self.id = cluster_id
        self.namespace = conf["namespace"]
        self.kube = Kube(conf["kubeconfig"])
        self.kubelet_port = conf["kubelet_port"]
        self.synced = False
        self.nodes = {}  # node name -> applied fingerprint
        self.pods = {}  # pod name -> applied fingerprint (None: exists, unknown)
        self.served = {}  # pod name -> Served (replaced whole: the kubelet threads read it)

    def lookup(self, namespace, pod):
        return self.served.get(pod) if namespace == SYSTEM_NS else None


def node_doc(cr):
    labels = {k: v for k, v in (cr["metadata"].get("labels") or {}).items() if k not in CR_ONLY_LABELS}
    doc = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": cr["metadata"]["name"], "labels": labels}}
    if (cr.get("spec") or {}).get("unschedulable"):
        doc["spec"] = {"unschedulable": True}
    return doc


def node_status(cr, port):
    status = cr.get("status") or {}
    ready = status.get("phase") == "Online" or (cr.get("spec") or {}).get("unschedulable")
    resources = status.get("allocatable") or {}
    return {
        "addresses": [
            {"type": "InternalIP", "address": NODE_IP},
            {"type": "Hostname", "address": cr["metadata"]["name"]},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                "reason": "KubeletReady" if ready else "KubeletNotReady",
            }
        ],
        "capacity": status.get("capacity") or resources,
        "allocatable": resources,
        "nodeInfo": {
            "architecture": (status.get("nodeInfo") or {}).get("architecture", "amd64"),
            "operatingSystem": "linux",
            "kubeletVersion": "v1.34.4",
            "kernelVersion": "5.15.0-sandbox",
            "osImage": "rlark-sim",
            "containerRuntimeVersion": "rlark-sim://0.1.0",
            "bootID": "",
            "machineID": "",
            "systemUUID": "",
            "kubeProxyVersion": "",
        },
    }


def container_names(task):
    template = (workload_of(task) or {}).get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    return [(c.get("name"), c.get("image") or "rlinf") for c in containers if c.get("name")] or [("main", "rlinf")]


def pod_doc(cr, task, containers):
    local = cr["metadata"]["labels"][LOCAL_NAME_LABEL]
    ordinal = local.rsplit("-", 1)[-1]
    spec = {"containers": [{"name": n, "image": image} for n, image in containers]}
    node = (cr.get("status") or {}).get("node")
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": local,
            "namespace": SYSTEM_NS,
            "labels": {
                "app": task["metadata"]["name"],
                "statefulset.kubernetes.io/pod-name": local,
                "apps.kubernetes.io/pod-index": ordinal,
            },
            "annotations": {POD_CR_ANNOTATION: cr["metadata"]["name"]},
        },
        "spec": spec,
    }


def pod_status(cr, containers, plog, stopping_since):
    uid = cr["metadata"]["name"]
    node = (cr.get("status") or {}).get("node")
    if not node:
        cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        return {"phase": "Pending", "conditions": [cond]}
    restarts = plog.restart_count(uid)
    started = plog.started_ns(uid)
    statuses = []
    for name, image in containers:
        st = {"name": name, "image": image, "imageID": "", "ready": True, "restartCount": 0, "started": True}
        if name == "main":
            st["restartCount"] = restarts
            if restarts:
                prev = plog.started_ns(uid, previous=True)
                st["lastState"] = {
                    "terminated": {
                        "exitCode": 137,
                        "reason": "Error",
                        "startedAt": _iso(prev),
                        "finishedAt": _iso(started),
                    }
                }
        since = _iso(started) if (name == "main" and started) else None
        if stopping_since:
            st["ready"] = st["started"] = False
            st["state"] = {
                "terminated": {"exitCode": 137, "reason": "Error", "startedAt": since, "finishedAt": stopping_since}
            }
        elif name == "main" and started is None:
            st["ready"] = st["started"] = False
            st["state"] = {"waiting": {"reason": "ContainerCreating"}}
        else:
            st["state"] = {"running": {"startedAt": since}}
        statuses.append(st)
    ready = all(s["ready"] for s in statuses)
    return {
        "phase": "Running",
        "hostIP": NODE_IP,
        "podIP": (cr.get("status") or {}).get("ip") or NODE_IP,
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "True" if ready else "False"},
            {"type": "ContainersReady", "status": "True" if ready else "False"},
        ],
        "containerStatuses": statuses,
    }


class DataPlane:
    def __init__(self, config, tasks, nodes, pods, log_path_fn):
        self.tasks, self.node_crs, self.pod_crs = tasks, nodes, pods
        self.log_path = log_path_fn
        self.clusters = {cid: Cluster(cid, conf) for cid, conf in config["clusters"].items()}
        self.servers = [
            KubeletServer(cid, c.kubelet_port, config["kubelet_tls"], c.lookup).start()
            for cid, c in self.clusters.items()
        ]

    def reconcile_all(self):
        by_ns = {}  # one pass over the caches for all clusters (bench fleets have 10,000 Node CRs)
        for kind, informer in (("nodes", self.node_crs), ("pods", self.pod_crs)):
            for cr in informer.snapshot():
                by_ns.setdefault((kind, cr["metadata"].get("namespace")), []).append(cr)
        for cluster in self.clusters.values():
            try:
                ns = cluster.namespace
                self.sync(cluster, by_ns.get(("nodes", ns), []), by_ns.get(("pods", ns), []))
            except (ApiError, OSError) as exc:
                log.warning("data plane %s: %s", cluster.id, exc)
                cluster.synced = False  # relist next pass

    def sync(self, cluster, node_crs, pod_crs):
        kube = cluster.kube
        if not cluster.synced:
            kube.create_if_missing(
                core_path("v1", "namespaces"),
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}},
            )
            existing = kube.list(core_path("v1", "pods", SYSTEM_NS)).get("items") or []
            cluster.pods = {p["metadata"]["name"]: None for p in existing}
            cluster.nodes = {}
            cluster.synced = True
        for cr in node_crs:
            self.sync_node(cluster, cr)
        want = {}
        served = {}
        for cr in pod_crs:
            meta = cr["metadata"]
            if LOCAL_NAME_LABEL not in (meta.get("labels") or {}):
                continue
            task = self.tasks.get(meta["namespace"], (meta.get("labels") or {}).get(TASK_NAME_LABEL))
            if task is None:
                continue
            local = meta["labels"][LOCAL_NAME_LABEL]
            containers = container_names(task)
            plog = podlog.for_path(self.log_path(task, local))
            stopping = (meta.get("annotations") or {}).get(ANN_STOPPING)
            want[local] = (cr, task, containers, plog, stopping)
            if (cr.get("status") or {}).get("node"):
                served[local] = Served(meta["name"], plog, tuple(n for n, _ in containers), bool(stopping))
        for local, (cr, task, containers, plog, stopping) in want.items():
            self.sync_pod(cluster, local, cr, task, containers, plog, stopping)
        cluster.served = served
        for local in [name for name in cluster.pods if name not in want]:
            kube.delete_now(core_path("v1", "pods", SYSTEM_NS, local))
            cluster.pods.pop(local, None)
            log.info("data plane %s: pod %s deleted", cluster.id, local)

    def sync_node(self, cluster, cr):
        name = cr["metadata"]["name"]
        doc = node_doc(cr)
        status = node_status(cr, cluster.kubelet_port)
        fingerprint = json.dumps([doc, status], sort_keys=True)
        if cluster.nodes.get(name) == fingerprint:
            return
        path = core_path("v1", "nodes", name=name)
        if cluster.kube.create_if_missing(core_path("v1", "nodes"), doc) is None:
            cluster.kube.merge_patch(path, {"metadata": {"labels": doc["metadata"]["labels"]}})
        cluster.kube.merge_patch(path + "/status", {"status": status})
        cluster.nodes[name] = fingerprint

    def sync_pod(self, cluster, local, cr, task, containers, plog, stopping):
        status = pod_status(cr, containers, plog, stopping)
        doc = pod_doc(cr, task, containers)
        fingerprint = json.dumps([doc, status], sort_keys=True)
        if cluster.pods.get(local) == fingerprint:
            return
        path = core_path("v1", "pods", SYSTEM_NS, local)
        if local in cluster.pods:
            current = cluster.kube.get_or_none(path)
            same = (
                current is not None
                and (current["metadata"].get("annotations") or {}).get(POD_CR_ANNOTATION) == cr["metadata"]["name"]
            )
            if current is not None and (not same or current["spec"].get("nodeName") != doc["spec"].get("nodeName")):
                cluster.kube.delete_now(path)  # another incarnation (or a bind): a new pod, as a StatefulSet makes
                current = None
        else:
            current = None
        if current is None:
            cluster.kube.create(core_path("v1", "pods", SYSTEM_NS), doc)
            log.info("data plane %s: pod %s on %s", cluster.id, local, doc["spec"].get("nodeName"))
        cluster.kube.merge_patch(path + "/status", {"status": status})
        cluster.pods[local] = fingerprint

    def clients(self):
        """{cluster id: Kube} of the data-plane apiservers (the gateway reads logs through them)."""
        return {cid: c.kube for cid, c in self.clusters.items()}
