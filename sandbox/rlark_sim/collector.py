"""The garbage collector a bare kube-apiserver lacks (kube-controller-manager's, reduced to Jobs -> Tasks).

It runs whether or not rlark-sim's controller does (off with `--no-gc`), because cascade delete is not
RLark's: with RLark's real controller the sandbox still needs it.
- Background: a Task whose controlling Job (by uid) is gone is deleted.
- Foreground (`foregroundDeletion` finalizer on a deleting Job): its Tasks are deleted; the finalizer
  goes once none is left. RLark's controller re-creates them meanwhile, so with it this never ends.
- Orphan (`orphan` finalizer): the Job's ownerReference is removed from its Tasks, then the finalizer.
"""

import logging

from .kube import ApiError, crd_path

log = logging.getLogger("rlark_sim.collector")

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


def controlling_job(task):
    owners = [
        o for o in task["metadata"].get("ownerReferences") or [] if o.get("kind") == "Job" and o.get("controller")
    ]
    return owners[0] if owners else None


class GarbageCollector:
    def __init__(self, kube, jobs, tasks):
        self.kube = kube
        self.jobs = jobs
        self.tasks = tasks
        self._no_dependents = set()  # uids of foreground-deleting Jobs seen without Tasks in the last pass

    def reconcile_all(self):
        jobs = {j["metadata"]["uid"]: j for j in self.jobs.snapshot()}
        dependents = {}
        for task in self.tasks.snapshot():
            owner = controlling_job(task)
            if owner is not None:
                dependents.setdefault(owner.get("uid"), []).append(task)
        for uid, tasks in dependents.items():
            if uid not in jobs:
                self._delete_orphaned(tasks)
        for job in jobs.values():
            finalizers = job["metadata"].get("finalizers") or []
            if not job["metadata"].get("deletionTimestamp"):
                continue
            try:
                if FOREGROUND in finalizers:
                    self._foreground(job, dependents.get(job["metadata"]["uid"], []))
                elif ORPHAN in finalizers:
                    self._orphan(job, dependents.get(job["metadata"]["uid"], []))
            except ApiError as exc:
                if exc.status not in (404, 409):
                    log.warning("job %s: %s", job["metadata"]["name"], exc)

    def _delete_orphaned(self, tasks):
        tasks = [t for t in tasks if not t["metadata"].get("deletionTimestamp")]
        if not tasks:
            return
        owner = controlling_job(tasks[0])
        live = self.kube.get_or_none(crd_path("jobs", name=owner["name"]))
        if live is not None and live["metadata"]["uid"] == owner["uid"]:
            return  # our cache was stale
        for task in tasks:
            meta = task["metadata"]
            log.info("owner job of task %s/%s is gone: deleting", meta.get("namespace"), meta["name"])
            self.kube.delete(crd_path("tasks", meta.get("namespace"), meta["name"]))

    def _foreground(self, job, tasks):
        uid = job["metadata"]["uid"]
        if not tasks:
            # Only after a whole pass without dependents: the controller ran in between and had its chance
            # to re-create them (the real garbage collector's graph sees such a create as a new dependent).
            if uid in self._no_dependents:
                self._no_dependents.discard(uid)
                self._drop_finalizer(job, FOREGROUND)
            else:
                self._no_dependents.add(uid)
            return
        self._no_dependents.discard(uid)
        for task in tasks:
            meta = task["metadata"]
            if not meta.get("deletionTimestamp"):
                log.info(
                    "foreground deletion of job %s: deleting task %s/%s",
                    job["metadata"]["name"],
                    meta.get("namespace"),
                    meta["name"],
                )
                self.kube.delete(crd_path("tasks", meta.get("namespace"), meta["name"]))

    def _orphan(self, job, tasks):
        for task in tasks:
            meta = task["metadata"]
            refs = [o for o in meta.get("ownerReferences") or [] if o.get("uid") != job["metadata"]["uid"]]
            body = {"metadata": {"ownerReferences": refs or None, "resourceVersion": meta["resourceVersion"]}}
            self.kube.merge_patch(crd_path("tasks", meta.get("namespace"), meta["name"]), body)
        self._drop_finalizer(job, ORPHAN)

    def _drop_finalizer(self, job, finalizer):
        meta = job["metadata"]
        rest = [f for f in meta.get("finalizers") or [] if f != finalizer]
        body = {"metadata": {"finalizers": rest or None, "resourceVersion": meta["resourceVersion"]}}
        self.kube.merge_patch(crd_path("jobs", name=meta["name"]), body)
        log.info("job %s: %s done, finalizer removed", meta["name"], finalizer)
