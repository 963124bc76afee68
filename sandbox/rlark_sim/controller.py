"""RLark's Job controller (rlark-platform.md section 2), reproduced against the real API server.

Pure functions (desired Task, namespace resolution, phase machine) are kept separate from the
reconcile loop so they can be unit tested.
"""

import copy
import datetime
import logging
import random
import re

from .goencode import go_encoded_spec, go_memory_view
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


def ray_annotations(job, template):
    """RLark's buildRayAnnotations: totals and rank start from the Job's (possibly stop-zeroed) templates;
    no `ray-head-task-name` key at all when no template is the head (divergence 6)."""
    templates = job.get("spec", {}).get("tasks") or []
    rank = 0
    for other in templates:  # rankStartForTask: stops at the first template of the same name
        if other.get("name") == template.get("name"):
            break
        rank += template_replicas(other)
    annotations = {
        ANN_TOTAL: str(sum(template_replicas(t) for t in templates)),
        ANN_RANK_START: str(rank),
        ANN_ROLE: "head" if template.get("head") else "worker",
    }
    head = next((t for t in templates if t.get("head")), None)
    if head is not None:
        annotations[ANN_HEAD] = child_name(job["metadata"]["name"], head["name"])
    return annotations


def desired_task_spec(job, template):
    """Template TaskSpec with domain/sshPublicKey forced from the Job and replicas 0 when stopped.

    Like RLark's buildTask the copy is shallow: zeroing the replicas of a stopped Job writes through to
    the Job's own template, so annotations computed afterwards count it as 0 (divergence 5).
    """
    spec = dict(template)
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
    """Equality selector from the first element of each comma list, NOT trimmed (divergence 8)."""
    return {k: str(v).split(",")[0] for k, v in (node_selector or {}).items()}


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

    def matches(self, selector):
        self._refresh()
        keys = None
        for item in selector.items():
            found = self._index.get(item, set())
            keys = set(found) if keys is None else keys & found
            if not keys:
                return set()
        return keys or set()

    def first_match(self, selector):
        keys = self.matches(selector)
        return min(keys) if keys else None

    def random_match(self, selector, rng=random):
        """RLark lists Nodes from an unordered cache and takes Items[0]: any match, per call (divergence 1)."""
        keys = self.matches(selector)
        return rng.choice(sorted(keys)) if keys else None

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


def sync_status_entry(entry, phase, message):
    """RLark's SyncStatusEntry: copy only on a phase change, and then the message too, even "" (divergence 3)."""
    if not phase or phase == entry.get("phase"):
        return False
    entry["phase"] = phase
    if message:
        entry["message"] = message
    else:  # "" replaces the old message; Go's omitempty then drops the key
        entry.pop("message", None)
    return True


def build_task(job, template, namespace):
    """RLark's buildTask; `template` must be the Job's own template dict (stop zeroing writes through)."""
    name = child_name(job["metadata"]["name"], template["name"])
    spec = desired_task_spec(job, template)
    return {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Task",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {JOB_LABEL: job["metadata"]["name"]},
            "annotations": ray_annotations(job, template),
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
        "spec": spec,
    }


def owned_task_keys(tasks):
    """job uid -> sorted (namespace, name, resourceVersion) of the Tasks it controls."""
    out = {}
    for task in tasks:
        meta = task["metadata"]
        for owner in meta.get("ownerReferences") or []:
            if owner.get("kind") == "Job" and owner.get("controller"):
                out.setdefault(owner.get("uid"), []).append(
                    (
                        meta.get("namespace", ""),
                        meta["name"],
                        meta.get("resourceVersion", ""),
                        bool(meta.get("deletionTimestamp")),
                    )
                )
    return {uid: tuple(sorted(keys)) for uid, keys in out.items()}


class Controller:
    """RLark's Job reconciler. Like controller-runtime's `For(Job).Owns(Task)` it reconciles a Job only
    when the Job or one of its Tasks changed (or the last attempt failed): a Node that appears later
    does not move a Task (divergence 9)."""

    def __init__(self, kube, jobs, tasks, nodes, random_resolution=True, rng=None):
        self.kube = kube
        self.jobs = jobs
        self.tasks = tasks
        self.node_index = NodeIndex(nodes)
        self.random_resolution = random_resolution
        self.rng = rng or random.Random()
        self._observed = {}  # job uid -> (job resourceVersion, owned Task keys) seen by the previous pass
        self._dirty = set()  # job uids with an event not yet reconciled successfully
        self._wrote = False
        self._panicked = set()

    def pending(self):
        """Jobs whose last reconcile failed or wrote (retried soon, like a work queue's requeue)."""
        return bool(self._dirty)

    def first_match(self, selector):
        if self.random_resolution:
            return self.node_index.random_match(selector, self.rng)
        return self.node_index.first_match(selector)

    def resolve(self, template):
        return resolve_namespace(template.get("nodeSelector"), self.first_match)

    def reconcile_all(self):
        owned = owned_task_keys(self.tasks.snapshot())
        live = set()
        for job in self.jobs.snapshot():
            uid = job["metadata"]["uid"]
            live.add(uid)
            # An "event": the Job or one of its Tasks differs from what the previous pass observed.
            observed = (job["metadata"].get("resourceVersion"), owned.get(uid, ()))
            if self._observed.get(uid) != observed:
                self._observed[uid] = observed
                self._dirty.add(uid)
            if uid not in self._dirty:
                continue
            try:
                self._wrote = False
                # A write of ours is an event of its own (controller-runtime sees our create even when the
                # Task is gone again by the next pass): reconcile once more.
                if self.reconcile(job) and not self._wrote:
                    self._dirty.discard(uid)
            except ApiError as exc:
                if exc.status not in (404, 409):  # deleted or changed meanwhile: next pass
                    log.warning("job %s: %s", job["metadata"]["name"], exc)
            except Exception:
                log.exception("job %s: reconcile failed", job["metadata"]["name"])
        for uid in set(self._observed) - live:
            del self._observed[uid]
            self._dirty.discard(uid)

    def reconcile(self, job):
        """One reconcile; False when it "panicked" (retried on the next pass, as controller-runtime does).

        No deletionTimestamp check, as in RLark: a Job being deleted in the foreground keeps getting its
        Tasks re-created (divergence 10).
        """
        status = copy.deepcopy(job.get("status") or {})
        if status.get("phase") in TERMINAL:
            return True  # frozen: no later stop, edit or Task update is processed
        name = job["metadata"]["name"]
        spec = job.get("spec") or {}
        # A private copy the stop zeroing may write through; Go zero value for a nameless template.
        templates = [dict(copy.deepcopy(t), name=t.get("name") or "") for t in spec.get("tasks") or []]
        job = dict(job, spec=dict(spec, tasks=templates))
        if not status.get("phase"):  # EventInit
            status["phase"] = "Pending"
            status.setdefault("startTime", now_iso())
            status.pop("endTime", None)
            if status.get("tasks") is None:
                status["tasks"] = [{"name": t["name"]} for t in templates]
        entries = {e.get("name"): e for e in status.get("tasks") or []}
        # syncTaskStatuses: only entries that already have a phase
        for template in templates:
            entry = entries.get(template["name"])
            if entry is None or not entry.get("phase"):
                continue
            task = self.tasks.get(self.resolve(template), child_name(name, template["name"]))
            if task is not None:
                tstatus = task.get("status") or {}
                sync_status_entry(entry, tstatus.get("phase"), tstatus.get("message"))
        # dispatchTasks: create/update each Task, then sync its entry (nil entry: panic after the create)
        for template in templates:
            task = self.ensure_task(job, template, self.resolve(template))
            entry = entries.get(template["name"])
            tstatus = task.get("status") or {}
            if entry is None and tstatus.get("phase"):  # SyncStatusEntry returns early on an empty phase
                key = (job["metadata"]["uid"], template["name"])
                if key not in self._panicked:
                    self._panicked.add(key)
                    log.error(
                        "job %s: panic: no status.tasks entry for %r (after its Task was made)", name, template["name"]
                    )
                return False
            if entry is not None:
                sync_status_entry(entry, tstatus.get("phase"), tstatus.get("message"))
        phases = [e.get("phase", "") for e in status.get("tasks") or []]
        phase, ended = next_phase(status["phase"], bool(spec.get("stopped")), phases)
        if phase != status["phase"]:
            log.info("job %s: %s -> %s", name, status["phase"], phase)
            status["phase"] = phase
        if ended:
            status["endTime"] = now_iso()
        if status != (job.get("status") or {}):
            body = copy.deepcopy(job)
            body["spec"] = spec
            body["status"] = status
            updated = self.kube.replace(crd_path("jobs", name=name, sub="status"), body)
            self.jobs.put(updated)
            self._wrote = True
        return True

    def ensure_task(self, job, template, namespace):
        """RLark's reconcileTask: the Task as read (or as created, phase Pending)."""
        want = build_task(job, template, namespace)
        meta = want["metadata"]
        have = self.tasks.get(namespace, meta["name"])
        if have is None:
            want["spec"] = go_encoded_spec(want["spec"])
            try:
                created = self.kube.create(crd_path("tasks", namespace), want)
                log.info("created task %s/%s", namespace, meta["name"])
                self.tasks.put(created)
                self._wrote = True
            except ApiError as exc:
                if exc.status != 409:
                    raise
            return dict(want, status={"phase": "Pending"})
        # taskSpecEqual compares the spec alone: annotation-only changes are never written (divergence 4).
        if go_memory_view(have.get("spec") or {}) == go_memory_view(want["spec"]):
            return have
        body = copy.deepcopy(have)
        body["spec"] = go_encoded_spec(want["spec"])
        body["metadata"]["annotations"] = meta["annotations"]
        updated = self.kube.replace(crd_path("tasks", namespace, meta["name"]), body)
        if updated["metadata"]["resourceVersion"] != have["metadata"]["resourceVersion"]:
            log.info("updated task %s/%s", namespace, meta["name"])
            self._wrote = True
        else:  # a re-encoding difference only (e.g. 1000m vs 1): re-sent every reconcile, a no-op
            log.debug("re-sent unchanged task %s/%s", namespace, meta["name"])
        self.tasks.put(updated)
        return updated
