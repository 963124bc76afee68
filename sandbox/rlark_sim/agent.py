"""RLark's data-plane agent (rlark-platform.md section 3), one logical agent per `rlark-<id>` namespace.

Real pieces: the StatefulSet (validated by the API server), the head Service, agent PVCs, the
`rlark.io/agent-cleanup` finalizer, Pod CRs and Task status. Simulated piece: the scheduler/kubelet
(placement on Node CRs, Pod CR phase Running, the stop grace period).
"""

import copy
import datetime
import fnmatch
import json
import logging
import os
import time
import uuid

from .kube import ApiError, core_path, crd_path
from .scheduling import (
    ANN_BASE_USED,
    ANN_REQUESTS,
    DEFAULT_CR_ONLY_LABELS,
    ineligibility,
    parse_quantity,
    pod_ip,
    pod_requests,
    pod_requests_of_cr,
)
from .workload import (
    LOCAL_NAME_LABEL,
    LOCAL_NS_LABEL,
    SYSTEM_NS,
    TASK_NAME_LABEL,
    WORKLOAD_PLURALS,
    build_head_service,
    build_workload,
    is_cluster_namespace,
    is_head,
    ordinal_of,
    pvc_claims,
    replicas_of,
    workload_of,
)

log = logging.getLogger("rlark_sim.agent")

FINALIZER = "rlark.io/agent-cleanup"
ANN_STOPPING = "rlark-sim.rlinf.io/stopping-since"


def iso_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso_age(stamp):
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in stamp else "%Y-%m-%dT%H:%M:%SZ"
    then = datetime.datetime.strptime(stamp, fmt).replace(tzinfo=datetime.timezone.utc)
    return (datetime.datetime.now(datetime.timezone.utc) - then).total_seconds()


class Agent:
    def __init__(
        self, kube, tasks, nodes, pods, sts, node_index, grace_seconds=5.0, cr_only_labels=None, hold_dir=None
    ):
        self.kube = kube
        self.tasks = tasks
        self.nodes = nodes
        self.pods = pods
        self.sts = sts
        self.node_index = node_index
        self.grace = float(grace_seconds)
        self.cr_only = tuple(DEFAULT_CR_ONLY_LABELS if cr_only_labels is None else cr_only_labels)
        self.dirty_nodes = set()
        self._scanned_used = False
        self._ensured = set()
        self.privileged = True
        self.hold_dir = hold_dir

    def held(self):
        """Task name patterns the agent leaves alone for now (sim switch: a file `<state-dir>/agent-hold/<pattern>`,
        an exact Task name or an fnmatch pattern such as `myjob-*-rollout`).

        A held Task gets no finalizer, workload, Pod CR or status, as when the real agent has not reached it
        yet; its deletion is still cleaned up. Removing the file releases it at the next pass.
        """
        try:
            return set(os.listdir(self.hold_dir)) if self.hold_dir else set()
        except FileNotFoundError:
            return set()

    # ---------------------------------------------------------------- pass
    def reconcile_all(self):
        if not self._scanned_used:
            # Nodes we accounted before a restart must be recomputed once.
            for node in self.nodes.snapshot():
                if ANN_BASE_USED in (node["metadata"].get("annotations") or {}):
                    self.dirty_nodes.add((node["metadata"]["namespace"], node["metadata"]["name"]))
            self._scanned_used = True
        tasks = [t for t in self.tasks.snapshot() if is_cluster_namespace(t["metadata"].get("namespace"))]
        pods_by_task = {}
        for pod in self.pods.snapshot():
            ns = pod["metadata"].get("namespace")
            task_name = (pod["metadata"].get("labels") or {}).get(TASK_NAME_LABEL)
            if task_name:
                pods_by_task.setdefault((ns, task_name), []).append(pod)
        live = set()
        held = self.held()
        for task in tasks:
            key = (task["metadata"]["namespace"], task["metadata"]["name"])
            live.add(key)
            try:
                if (task.get("spec") or {}).get("agentType") != "Kubernetes" or workload_of(task) is None:
                    continue
                if task["metadata"].get("deletionTimestamp"):
                    self.cleanup(task, pods_by_task.get(key, []))
                elif held and any(fnmatch.fnmatchcase(key[1], pattern) for pattern in held):
                    continue
                else:
                    self.reconcile(task, pods_by_task.get(key, []))
            except ApiError as exc:
                if exc.status not in (404, 409):  # deleted or changed meanwhile: next pass
                    log.warning("task %s/%s: %s", key[0], key[1], exc)
            except Exception:
                log.exception("task %s/%s: reconcile failed", key[0], key[1])
        for key, pods in pods_by_task.items():
            if key not in live and is_cluster_namespace(key[0]):
                for pod in pods:  # Pod CRs of a Task that no longer exists
                    self.delete_pod(pod)
        self.sync_node_used()

    # ---------------------------------------------------------------- task
    def reconcile(self, task, pods):
        meta = task["metadata"]
        if FINALIZER not in (meta.get("finalizers") or []):
            body = {"metadata": {"finalizers": [*(meta.get("finalizers") or []), FINALIZER]}}
            body["metadata"]["resourceVersion"] = meta["resourceVersion"]
            task = self.kube.merge_patch(crd_path("tasks", meta["namespace"], meta["name"]), body)
            self.tasks.put(task)
            meta = task["metadata"]
        workload = workload_of(task)
        kind = workload.get("kind") or "StatefulSet"
        if kind not in ("StatefulSet", "Deployment", "DaemonSet"):
            self.set_status(task, "Pending", "unknown workload kind %s" % kind, None)
            return
        want = build_workload(task, privileged=self.privileged)
        try:
            try:
                self.apply_workload(task, want)
            except ApiError as exc:
                if not (exc.status == 422 and "privileged: Forbidden" in exc.message and self.privileged):
                    raise
                # kube-apiserver started without --allow-privileged: keep going, say why once.
                log.warning("API server forbids privileged containers (start it with --allow-privileged=true)")
                self.privileged = False
                want = build_workload(task, privileged=False)
                self.apply_workload(task, want)
            self.apply_pvcs(task)
        except ApiError as exc:
            if exc.status in (400, 422):
                self.set_status(task, "Pending", "invalid workload: %s" % exc.message, None)
                return
            raise
        pod_spec = want["spec"]["template"]["spec"]
        if kind == "DaemonSet":
            # One pod per node that is Online, schedulable and matches; stop is ignored.
            replicas = sum(
                1
                for n in self.node_index.nodes_in(meta["namespace"])
                if ineligibility(n, pod_spec, {}, [], self.cr_only) is None
            )
        else:
            replicas = replicas_of(workload)
        keep, remove = [], []
        for pod in pods:
            (keep if 0 <= ordinal_of(pod) < replicas else remove).append(pod)
        # A pod already terminating keeps terminating even if the Task scales back up (a new one follows).
        self.retire(remove + [p for p in keep if ANN_STOPPING in _ann(p)], self.grace_of(pod_spec))
        if replicas == 0:
            if kind == "DaemonSet":
                self.set_status(task, "Pending", "daemonset has no eligible node", None)
            else:
                self.set_status(task, "Stopped", None, None)
            return
        message = self.place(task, pod_spec, keep, replicas)
        running = [p for p in self.pods_of(task) if (p.get("status") or {}).get("phase") == "Running"]
        running = [p for p in running if 0 <= ordinal_of(p) < replicas and ANN_STOPPING not in _ann(p)]
        if len(running) >= replicas:
            nodes = [p["status"]["node"] for p in sorted(running, key=ordinal_of)]
            self.set_status(task, "Running", None, nodes)
        elif kind == "Deployment":
            # RLark reads "not fully ready with unavailable > 0" as Failed, start-up included.
            self.set_status(task, "Failed", "deployment replicas unavailable %d" % (replicas - len(running)), None)
        elif kind == "DaemonSet":
            self.set_status(task, "Failed", "daemonset pods unavailable", None)
        else:
            self.set_status(task, "Pending", message or "waiting for %d/%d replicas" % (len(running), replicas), None)

    def pods_of(self, task):
        return self.pods.by_index((task["metadata"]["namespace"], task["metadata"]["name"]))

    def apply_workload(self, task, want):
        name = task["metadata"]["name"]
        plural = WORKLOAD_PLURALS[want["kind"]]
        path = core_path("apps/v1", plural, SYSTEM_NS)
        have = self.sts.get(SYSTEM_NS, name) if plural == "statefulsets" else None
        if have is None:
            have = self.kube.get_or_none(core_path("apps/v1", plural, SYSTEM_NS, name))
        if have is None:
            created = self.kube.create_if_missing(path, want)
            if created:
                log.info("created %s %s/%s", want["kind"], SYSTEM_NS, name)
                if plural == "statefulsets":
                    self.sts.put(created)
        else:
            hann = have["metadata"].get("annotations") or {}
            if hann.get("rlark.io/management-task-namespace") != task["metadata"]["namespace"]:
                # Same Task name in two clusters shares this one rlark-system: validate without storing.
                self.kube.create(path, want, params={"dryRun": "All"})
            elif hann.get("rlark.io/management-task-resource-version") != task["metadata"]["resourceVersion"]:
                body = copy.deepcopy(have)
                body["metadata"]["annotations"] = dict(hann, **want["metadata"]["annotations"])
                if "replicas" in want["spec"]:
                    body["spec"]["replicas"] = want["spec"]["replicas"]
                body["spec"]["template"] = want["spec"]["template"]
                updated = self.kube.replace(core_path("apps/v1", plural, SYSTEM_NS, name), body)
                if plural == "statefulsets":
                    self.sts.put(updated)
        key = (task["metadata"]["namespace"], name)
        if is_head(task) and key not in self._ensured:
            self.kube.create_if_missing(core_path("v1", "services", SYSTEM_NS), build_head_service(task))
            self._ensured.add(key)

    def apply_pvcs(self, task):
        name = task["metadata"]["name"]
        for _vol, claim, cls in pvc_claims(task):
            if ("pvc", claim) in self._ensured:
                continue
            body = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim,
                    "namespace": SYSTEM_NS,
                    "labels": {"rlark.io/task": name},
                    "annotations": {"rlark.io/pvc-owner": "rlark-agent", "rlark.io/pvc-owner-task": name},
                },
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}},
            }
            if cls:
                body["spec"]["storageClassName"] = cls
            self.kube.create_if_missing(core_path("v1", "persistentvolumeclaims", SYSTEM_NS), body)
            self._ensured.add(("pvc", claim))

    def place(self, task, pod_spec, pods, replicas):
        """Create a Pod CR per missing ordinal on a distinct eligible node; returns a Pending message or None."""
        meta = task["metadata"]
        ns, name = meta["namespace"], meta["name"]
        by_ordinal = {ordinal_of(p): p for p in pods}
        requests = pod_requests(pod_spec)
        nodes = self.node_index.nodes_in(ns)
        pods_by_node = {}
        for pod in self.pods.snapshot():
            if pod["metadata"].get("namespace") == ns and (pod.get("status") or {}).get("node"):
                pods_by_node.setdefault(pod["status"]["node"], []).append(pod)
        used_by_task = {(p.get("status") or {}).get("node") for p in pods if (p.get("status") or {}).get("node")}
        message = None
        for ordinal in range(replicas):
            existing = by_ordinal.get(ordinal)
            if existing is not None and (existing.get("status") or {}).get("node"):
                continue
            reasons = {}
            chosen = None
            for node in nodes:
                node_name = node["metadata"]["name"]
                if node_name in used_by_task:
                    reasons["node(s) didn't match pod anti-affinity rules"] = (
                        reasons.get("node(s) didn't match pod anti-affinity rules", 0) + 1
                    )
                    continue
                why = ineligibility(node, pod_spec, requests, pods_by_node.get(node_name, []), self.cr_only)
                if why is None:
                    chosen = node
                    break
                reasons[why] = reasons.get(why, 0) + 1
            local = "%s-%d" % (name, ordinal)
            if chosen is None:
                detail = ", ".join("%d %s" % (n, r) for r, n in sorted(reasons.items()))
                message = "pod %s: 0/%d nodes are available%s" % (local, len(nodes), (": " + detail) if detail else "")
                if existing is None:
                    self.create_pod(task, ordinal, None, requests, pod_spec, message)
                # OrderedReady: later ordinals wait for this one.
                break
            node_name = chosen["metadata"]["name"]
            used_by_task.add(node_name)
            if existing is None:
                pod = self.create_pod(task, ordinal, chosen, requests, pod_spec, None)
            else:
                pod = self.bind_pod(existing, chosen, pod_spec)
            if pod is not None:
                pods_by_node.setdefault(node_name, []).append(pod)
            self.dirty_nodes.add((ns, node_name))
        return message

    def create_pod(self, task, ordinal, node, requests, pod_spec, message):
        meta = task["metadata"]
        local = "%s-%d" % (meta["name"], ordinal)
        body = {
            "apiVersion": "rlinf.io/v1alpha1",
            "kind": "Pod",
            "metadata": {
                "name": str(uuid.uuid4()),
                "namespace": meta["namespace"],
                "labels": {TASK_NAME_LABEL: meta["name"], LOCAL_NAME_LABEL: local, LOCAL_NS_LABEL: SYSTEM_NS},
                "annotations": {ANN_REQUESTS: json.dumps(requests, sort_keys=True)},
            },
            "spec": {
                "podName": local,
                "podNamespace": SYSTEM_NS,
                "taskName": meta["name"],
                "taskNamespace": meta["namespace"],
            },
        }
        if (task.get("spec") or {}).get("domain"):
            body["spec"]["domain"] = task["spec"]["domain"]
        created = self.kube.create(crd_path("pods", meta["namespace"]), body)
        self.pods.put(created)
        log.info("pod %s (%s) created on %s", local, created["metadata"]["name"], node and node["metadata"]["name"])
        if node is None:
            status = {"phase": "Pending", "message": message}
            updated = self.kube.merge_patch(
                crd_path("pods", meta["namespace"], created["metadata"]["name"], "status"), {"status": status}
            )
            self.pods.put(updated)
            return updated
        return self.bind_pod(created, node, pod_spec)

    def bind_pod(self, pod, node, pod_spec):
        name = pod["metadata"]["name"]
        status = {
            "phase": "Running",
            "node": node["metadata"]["name"],
            "ip": pod_ip(name, node, bool(pod_spec.get("hostNetwork"))),
            "message": None,
        }
        updated = self.kube.merge_patch(
            crd_path("pods", pod["metadata"]["namespace"], name, "status"), {"status": status}
        )
        self.pods.put(updated)
        return updated

    def grace_of(self, pod_spec):
        """The template's terminationGracePeriodSeconds (the simulated trainer does not exit early on SIGTERM), else
        --grace-seconds."""
        seconds = pod_spec.get("terminationGracePeriodSeconds")
        return self.grace if seconds is None else float(seconds)

    def retire(self, pods, grace):
        """Pods being stopped keep running for the grace period, then their Pod CRs go."""
        for pod in pods:
            since = _ann(pod).get(ANN_STOPPING)
            if since is None:
                if not (pod.get("status") or {}).get("node"):
                    self.delete_pod(pod)  # never scheduled: nothing to wait for
                    continue
                updated = self.kube.merge_patch(
                    crd_path("pods", pod["metadata"]["namespace"], pod["metadata"]["name"]),
                    {"metadata": {"annotations": {ANN_STOPPING: iso_now()}}},
                )
                self.pods.put(updated)
            elif iso_age(since) >= grace:
                self.delete_pod(pod)

    def delete_pod(self, pod):
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        self.kube.delete(crd_path("pods", ns, name))
        self.pods.forget(ns, name)
        node = (pod.get("status") or {}).get("node")
        if node:
            self.dirty_nodes.add((ns, node))
        log.info("pod %s (%s) removed", (pod["metadata"].get("labels") or {}).get(LOCAL_NAME_LABEL), name)

    def set_status(self, task, phase, message, nodes):
        """Status subresource patch, only when phase/message change; observedNodes only on a phase change."""
        status = task.get("status") or {}
        if status.get("phase") == phase and (status.get("message") or None) == message:
            return
        patch = {"phase": phase, "message": message}
        if status.get("phase") != phase and nodes:
            patch["observedNodes"] = nodes
        meta = task["metadata"]
        updated = self.kube.merge_patch(crd_path("tasks", meta["namespace"], meta["name"], "status"), {"status": patch})
        self.tasks.put(updated)
        if status.get("phase") != phase:
            log.info("task %s/%s: %s -> %s", meta["namespace"], meta["name"], status.get("phase"), phase)

    # ---------------------------------------------------------------- deletion
    def cleanup(self, task, pods):
        meta = task["metadata"]
        if FINALIZER not in (meta.get("finalizers") or []):
            return
        name, ns = meta["name"], meta["namespace"]
        for plural in WORKLOAD_PLURALS.values():
            obj = self.kube.get_or_none(core_path("apps/v1", plural, SYSTEM_NS, name))
            owner_ns = ((obj or {}).get("metadata", {}).get("annotations") or {}).get(
                "rlark.io/management-task-namespace"
            )
            if obj is not None and owner_ns == ns:
                self.kube.delete(core_path("apps/v1", plural, SYSTEM_NS, name))
                if plural == "statefulsets":
                    self.sts.forget(SYSTEM_NS, name)
        svc = self.kube.get_or_none(core_path("v1", "services", SYSTEM_NS, "%s-ray-head" % name))
        if svc is not None and (svc["metadata"].get("annotations") or {}).get("rlark.io/management-task-namespace") in (
            ns,
            None,
        ):
            self.kube.delete(core_path("v1", "services", SYSTEM_NS, "%s-ray-head" % name))
        pvcs = self.kube.list(
            core_path("v1", "persistentvolumeclaims", SYSTEM_NS), {"labelSelector": "rlark.io/task=%s" % name}
        )
        for pvc in pvcs.get("items", []):
            self.kube.delete(core_path("v1", "persistentvolumeclaims", SYSTEM_NS, pvc["metadata"]["name"]))
            self._ensured.discard(("pvc", pvc["metadata"]["name"]))
        for pod in pods:
            self.delete_pod(pod)
        self._ensured.discard((ns, name))
        finalizers = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
        body = {"metadata": {"finalizers": finalizers or None, "resourceVersion": meta["resourceVersion"]}}
        self.kube.merge_patch(crd_path("tasks", ns, name), body)
        log.info("task %s/%s: cleaned up, finalizer removed", ns, name)

    # ---------------------------------------------------------------- node usage
    def sync_node_used(self):
        if not self.dirty_nodes:
            return
        pods_by_node = {}
        for pod in self.pods.snapshot():
            node = (pod.get("status") or {}).get("node")
            if node:
                pods_by_node.setdefault((pod["metadata"]["namespace"], node), []).append(pod)
        for key in sorted(self.dirty_nodes):
            node = self.nodes.get(*key)
            if node is None:
                continue
            try:
                self._sync_one(node, pods_by_node.get(key, []))
            except ApiError as exc:
                log.warning("node %s/%s used: %s", key[0], key[1], exc)
                continue
            self.dirty_nodes.discard(key)

    def _sync_one(self, node, pods):
        meta = node["metadata"]
        path = crd_path("nodes", meta["namespace"], meta["name"])
        status = node.get("status") or {}
        base_raw = (meta.get("annotations") or {}).get(ANN_BASE_USED)
        if base_raw is None:
            base_raw = json.dumps(status.get("used") or {}, sort_keys=True)
            node = self.kube.merge_patch(path, {"metadata": {"annotations": {ANN_BASE_USED: base_raw}}})
            self.nodes.put(node)
        used = dict(json.loads(base_raw))
        for pod in pods:
            for key, value in pod_requests_of_cr(pod).items():
                used[key] = _fmt(parse_quantity(used.get(key, 0)) + value)
        if (node.get("status") or {}).get("used") != used:
            updated = self.kube.merge_patch(path + "/status", {"status": {"used": used}})
            self.nodes.put(updated)


def _ann(obj):
    return obj["metadata"].get("annotations") or {}


def _fmt(value):
    return str(int(value)) if float(value).is_integer() else str(value)


def monotonic():
    return time.monotonic()
