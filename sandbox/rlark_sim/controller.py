"""RLark's Job controller (rlark-platform.md section 2), reproduced against the real API server.

Pure functions (desired Task, namespace resolution, phase machine) are kept separate from the
reconcile loop so they can be unit tested.
"""

import copy
import datetime
import json
import logging
import re

from .kube import ApiError, crd_path

log = logging.getLogger("rlark_sim.controller")

JOB_LABEL = "rlinf.io/job"
ANN_TOTAL = "rlark.io/ray-total-nodes"
ANN_RANK_START = "rlark.io/ray-node-rank-start"
ANN_ROLE = "rlark.io/ray-role"
ANN_HEAD = "rlark.io/ray-head-task-name"
TERMINAL = ("Succeeded", "Failed")

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def child_name(job_name, task_name):
    """RLark's ChildName: a plain dash join, no truncation or hashing."""
    return "%s-%s" % (job_name, task_name)


def template_replicas(template):
    """Replicas a template contributes to Ray: nil or non-k8s counts as 1."""
    workload = ((template.get("kubernetes") or {}).get("workload")) or None
    if workload is None:
        return 1
    replicas = workload.get("replicas")
    return 1 if replicas is None else int(replicas)


def ray_annotations(job, index):
    templates = job.get("spec", {}).get("tasks") or []
    counts = [template_replicas(t) for t in templates]
    head = next((t for t in templates if t.get("head")), None)
    return {
        ANN_TOTAL: str(sum(counts)),
        ANN_RANK_START: str(sum(counts[:index])),
        ANN_ROLE: "head" if templates[index].get("head") else "worker",
        ANN_HEAD: child_name(job["metadata"]["name"], head["name"]) if head else "",
    }


def desired_task_spec(job, template):
    """Template TaskSpec with domain/sshPublicKey forced from the Job and replicas 0 when stopped."""
    spec = copy.deepcopy(template)
    spec.pop("name", None)
    spec.pop("head", None)
    job_spec = job.get("spec", {})
    for key in ("domain", "sshPublicKey"):
        # Go string fields with omitempty: an empty Job value removes the key.
        if job_spec.get(key):
            spec[key] = job_spec[key]
        else:
            spec.pop(key, None)
    if job_spec.get("stopped"):
        workload = (spec.get("kubernetes") or {}).get("workload")
        if workload is not None:
            workload["replicas"] = 0
    return spec


def first_value_selector(node_selector):
    """Equality selector from only the first element of each comma list (RLark's resolution rule)."""
    return {k: str(v).split(",")[0].strip() for k, v in (node_selector or {}).items()}


def selector_is_valid(selector):
    for key, value in selector.items():
        name = key.rsplit("/", 1)[-1]
        if not name or len(name) > 63 or not _LABEL_NAME.match(name):
            return False
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            return False
    return True


class NodeIndex:
    """(label, value) -> node keys, rebuilt when the Node cache changes; keys sort in API list order."""

    def __init__(self, informer):
        self.informer = informer
        self._version = None
        self._index = {}
        self._by_ns = {}

    def _refresh(self):
        if self._version == self.informer.version:
            return
        version = self.informer.version
        index, by_ns = {}, {}
        for node in self.informer.snapshot():  # sorted: per-namespace lists stay in API list order
            key = (node["metadata"].get("namespace", ""), node["metadata"]["name"])
            by_ns.setdefault(key[0], []).append(node)
            for label, value in (node["metadata"].get("labels") or {}).items():
                index.setdefault((label, value), set()).add(key)
        self._index, self._by_ns, self._version = index, by_ns, version

    def first_match(self, selector):
        self._refresh()
        keys = None
        for item in selector.items():
            found = self._index.get(item, set())
            keys = set(found) if keys is None else keys & found
            if not keys:
                return None
        return min(keys) if keys else None

    def nodes_in(self, namespace):
        self._refresh()
        return self._by_ns.get(namespace, [])


def resolve_namespace(node_selector, first_match):
    """empty selector -> default; else namespace of the first Node matching the first-value selector."""
    if not node_selector:
        return "default"
    selector = first_value_selector(node_selector)
    if not selector_is_valid(selector):
        return "default"
    match = first_match(selector)
    return match[0] if match and match[0] else "default"


def next_phase(phase, stopped, task_phases):
    """RLark's Job FSM after status init; returns (phase, set_end_time). Stop is evaluated first."""
    if stopped and phase in ("Pending", "Running", "Failed"):
        return "Stopped", False
    if phase == "Stopped" and not stopped:
        return "Pending", False
    running = any(p == "Running" for p in task_phases)
    if phase == "Pending" and running and not any(p == "Failed" for p in task_phases):
        return "Running", False
    if phase == "Running":
        if task_phases and all(p == "Succeeded" for p in task_phases):
            return "Succeeded", True
        if any(p == "Failed" for p in task_phases):
            return "Failed", True
    return phase, False


def desired_task(job, index, namespace):
    template = job["spec"]["tasks"][index]
    name = child_name(job["metadata"]["name"], template["name"])
    return {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Task",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {JOB_LABEL: job["metadata"]["name"]},
            "annotations": ray_annotations(job, index),
            "ownerReferences": [
                {
                    "apiVersion": "rlinf.io/v1alpha1",
                    "kind": "Job",
                    "name": job["metadata"]["name"],
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": desired_task_spec(job, template),
    }


class Controller:
    def __init__(self, kube, jobs, tasks, nodes):
        self.kube = kube
        self.jobs = jobs
        self.tasks = tasks
        self.node_index = NodeIndex(nodes)
        # (ns, name) -> (spec+annotations we wrote, resourceVersion the server returned): stops an update
        # loop when the server normalises (prunes) what we send so that it never compares equal.
        self._written = {}
        self._panicked = set()

    def reconcile_all(self):
        live_uids = set()
        for job in self.jobs.snapshot():
            live_uids.add(job["metadata"]["uid"])
            try:
                self.reconcile(job)
            except ApiError as exc:
                if exc.status not in (404, 409):  # deleted or changed meanwhile: next pass
                    log.warning("job %s: %s", job["metadata"]["name"], exc)
            except Exception:
                log.exception("job %s: reconcile failed", job["metadata"]["name"])
        self.cascade_delete(live_uids)

    def reconcile(self, job):
        if job["metadata"].get("deletionTimestamp"):
            return
        status = copy.deepcopy(job.get("status") or {})
        if status.get("phase") in TERMINAL:
            return  # frozen: no later stop, edit or Task update is processed
        name = job["metadata"]["name"]
        spec = job.get("spec") or {}
        # Go zero value for a template without a name (only `role` is required by the CRD).
        templates = [dict(t, name=t.get("name") or "") for t in spec.get("tasks") or []]
        job = dict(job, spec=dict(spec, tasks=templates))
        # (1) init
        if not status.get("phase"):
            status["phase"] = "Pending"
            status.setdefault("startTime", now_iso())
            status.pop("endTime", None)
            if status.get("tasks") is None:
                status["tasks"] = [{"name": t["name"]} for t in templates]
        entries = {e.get("name"): e for e in status.get("tasks") or []}
        missing = [t["name"] for t in templates if t["name"] not in entries]
        if missing:
            # RLark dereferences a nil status entry here: panic, recovered and retried forever.
            if (job["metadata"]["uid"], tuple(missing)) not in self._panicked:
                self._panicked.add((job["metadata"]["uid"], tuple(missing)))
                log.error("job %s: panic: no status.tasks entry for %s (status frozen, as in RLark)", name, missing)
            return
        namespaces = [resolve_namespace(t.get("nodeSelector"), self.node_index.first_match) for t in templates]
        # (2) copy Task phase/message
        for template, ns in zip(templates, namespaces):
            task = self.tasks.get(ns, child_name(name, template["name"]))
            tstatus = (task or {}).get("status") or {}
            entry = entries[template["name"]]
            for key in ("phase", "message"):
                if tstatus.get(key) and tstatus.get(key) != entry.get(key):
                    entry[key] = tstatus[key]
        # (3) create/update every Task
        for i, ns in enumerate(namespaces):
            self.ensure_task(desired_task(job, i, ns))
        # (4) phase event
        phases = [entries[t["name"]].get("phase", "") for t in templates]
        phase, ended = next_phase(status["phase"], bool(spec.get("stopped")), phases)
        if phase != status["phase"]:
            log.info("job %s: %s -> %s", name, status["phase"], phase)
            status["phase"] = phase
        if ended:
            status["endTime"] = now_iso()
        if status != (job.get("status") or {}):
            body = copy.deepcopy(job)
            body["status"] = status
            updated = self.kube.replace(crd_path("jobs", name=name, sub="status"), body)
            self.jobs.put(updated)

    def ensure_task(self, want):
        meta = want["metadata"]
        path = crd_path("tasks", meta["namespace"])
        have = self.tasks.get(meta["namespace"], meta["name"])
        if have is None:
            try:
                created = self.kube.create(path, want)
                log.info("created task %s/%s", meta["namespace"], meta["name"])
                self.tasks.put(created)
            except ApiError as exc:
                if exc.status != 409:
                    raise
            return
        if have["metadata"].get("deletionTimestamp"):
            return
        if have.get("spec") == want["spec"] and (have["metadata"].get("annotations") or {}) == meta["annotations"]:
            return
        fingerprint = json.dumps([want["spec"], meta["annotations"]], sort_keys=True)
        if self._written.get((meta["namespace"], meta["name"])) == (fingerprint, have["metadata"]["resourceVersion"]):
            return
        body = copy.deepcopy(have)
        body["spec"] = want["spec"]
        body["metadata"]["annotations"] = meta["annotations"]
        updated = self.kube.replace(crd_path("tasks", meta["namespace"], meta["name"]), body)
        self._written[(meta["namespace"], meta["name"])] = (fingerprint, updated["metadata"]["resourceVersion"])
        log.info("updated task %s/%s", meta["namespace"], meta["name"])
        self.tasks.put(updated)

    def cascade_delete(self, live_uids):
        """Bare kube-apiserver has no ownerRef GC: delete Tasks whose owner Job is gone."""
        for task in self.tasks.snapshot():
            meta = task["metadata"]
            if JOB_LABEL not in (meta.get("labels") or {}) or meta.get("deletionTimestamp"):
                continue
            owners = [o for o in meta.get("ownerReferences") or [] if o.get("kind") == "Job" and o.get("controller")]
            if not owners or owners[0].get("uid") in live_uids:
                continue
            owner = self.kube.get_or_none(crd_path("jobs", name=owners[0]["name"]))
            if owner is not None and owner["metadata"]["uid"] == owners[0]["uid"]:
                continue  # our cache was stale
            log.info("owner job of task %s/%s is gone: deleting", meta.get("namespace"), meta["name"])
            self.kube.delete(crd_path("tasks", meta.get("namespace"), meta["name"]))
