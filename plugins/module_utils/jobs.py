# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Job, Task, Node and Pod-CR reads, guarded writes and waits on top of ``kube.Client``.

Writes are minimal and guarded: stop/start is a JSON merge patch of ``spec.stopped`` alone with a
resourceVersion precondition (a conflict re-reads and re-decides), updates never touch
``spec.stopped``, and changes RLark cannot apply safely (task set, nodeSelector, frozen
Succeeded/Failed Jobs) are refused as findings instead of written.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.findings import Refused, finding, has_errors
from ansible_collections.rlark.ops.plugins.module_utils.job_diff import (
    normalised_spec,
    spec_merge_patch,
    structural_findings,
)
from ansible_collections.rlark.ops.plugins.module_utils.kube import ApiError, resource_path
from ansible_collections.rlark.ops.plugins.module_utils.naming import task_object_name
from ansible_collections.rlark.ops.plugins.module_utils.task_identity import (
    duplicate_findings,
    placement_findings,
    pods_of,
    task_key,
)

JOBS = resource_path("jobs")
TASKS = resource_path("tasks")
PODS = resource_path("pods")
JOB_LABEL = jobspec.JOB_LABEL
POD_TASK_LABEL = jobspec.TASK_NAME_LABEL
TERMINAL_PHASES = ("Succeeded", "Failed")
MAX_CONFLICT_RETRIES = 5
POD_SELECTOR_CHUNK = 50


def job_path(name):
    return resource_path("jobs", name)


job_name = jobspec.job_name


def job_phase(job):
    return (job.get("status") or {}).get("phase") or ""


# --- reads ----------------------------------------------------------------------------------------


def get_job(client, name):
    return client.get_or_none(job_path(name))


def list_tasks(client, name):
    """Every Task of the Job in any namespace (label rlinf.io/job), orphaned ones included."""
    items = client.list(TASKS, label_selector="%s=%s" % (JOB_LABEL, name))[0]
    return sorted(items, key=lambda t: (t["metadata"].get("namespace", ""), t["metadata"]["name"]))


def list_pods(client, task_names):
    """Pod CRs of the given Tasks (label rlark.io/task-name), in one call per 50 names."""
    names = sorted(set(task_names))
    pods = []
    for start in range(0, len(names), POD_SELECTOR_CHUNK):
        chunk = names[start : start + POD_SELECTOR_CHUNK]
        items = client.list(PODS, label_selector="%s in (%s)" % (POD_TASK_LABEL, ",".join(chunk)))[0]
        pods.extend(items)
    return sorted(pods, key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"]))


def task_names_of(job, tasks):
    """Object names of the Job's Tasks: the listed ones plus those its templates imply."""
    names = {t["metadata"]["name"] for t in tasks}
    names.update(task_object_name(job_name(job), t.get("name")) for t in jobspec.tasks(job) if t.get("name"))
    return sorted(names)


def read_tree(client, name, with_pods=True, job=None):
    """``{job, tasks, pods}`` for one Job (``job`` None when it does not exist)."""
    job = job if job is not None else get_job(client, name)
    if job is None:
        return {"job": None, "tasks": [], "pods": []}
    tasks = list_tasks(client, name)
    pods = list_pods(client, task_names_of(job, tasks)) if with_pods else []
    return {"job": job, "tasks": tasks, "pods": pods}


def list_jobs(client, label_selector=None):
    items = client.list(JOBS, label_selector=label_selector)[0]
    return items


def get_nodes(client, pods):
    """The Node CRs the pods run on (status.node in the pod's namespace), fetched once each."""
    nodes = {}
    for pod in pods:
        node = (pod.get("status") or {}).get("node")
        ns = pod["metadata"].get("namespace")
        if node and (ns, node) not in nodes:
            nodes[(ns, node)] = client.get_or_none(resource_path("nodes", node, ns))
    return [nodes[k] for k in sorted(nodes) if nodes[k] is not None]


# --- writes ---------------------------------------------------------------------------------------


def terminal_refusal(job, action):
    phase = job_phase(job)
    if phase not in TERMINAL_PHASES:
        return None
    return finding(
        "job-terminal-phase",
        "Job %r is %s: RLark ignores every %s of a Succeeded or Failed Job." % (job_name(job), phase, action),
        path="status.phase",
        hint="Delete it and create a new Job (copy_from) instead.",
    )


def read_back_if(client, name, check_mode, done):
    """``on_ambiguous`` for a Job write: after a 5xx or a dropped connection the server may have applied it.

    Returns the live Job when ``done(job)`` holds (the write is reported as made, never re-sent with a
    stale resourceVersion that would 409 and read as "someone else did it"), else None to resend.
    """

    def read_back():
        if check_mode:
            return None
        now = get_job(client, name)
        return now if now is not None and done(now) else None

    return read_back


def ensure_present(client, desired, update=False, check_mode=False, before_write=None):
    """Create the Job when absent; compare and (with ``update``) patch the spec when present.

    ``before_write()`` (findings; raises ``Refused``) runs only when a create or patch follows.
    Returns ``{changed, job, before, action, findings}``; raises ``Refused`` on unsafe changes.
    """
    name = job_name(desired)
    wanted = normalised_spec(desired.get("spec"))
    before_write = before_write or list
    for _attempt in range(MAX_CONFLICT_RETRIES):
        live = get_job(client, name)
        if live is None:
            found = before_write()
            created = client.create(JOBS, desired, dry_run=check_mode)
            return {"changed": True, "job": created, "before": None, "action": "created", "findings": found}
        found = []
        if (desired.get("spec") or {}).get("stopped") is not None and bool(desired["spec"]["stopped"]) != bool(
            (live.get("spec") or {}).get("stopped")
        ):
            found.append(
                finding(
                    "job-stopped-ignored",
                    "state=present never changes spec.stopped (live %s, desired %s)."
                    % (bool((live.get("spec") or {}).get("stopped")), bool(desired["spec"]["stopped"])),
                    severity="warning",
                    path="spec.stopped",
                    hint="Use state=stopped or state=started.",
                )
            )
        if normalised_spec(live.get("spec")) == normalised_spec(desired.get("spec")):
            return {"changed": False, "job": live, "before": live, "action": "unchanged", "findings": found}
        found.extend(structural_findings(live, desired))
        refusal = terminal_refusal(live, "edit")
        if refusal:
            found.append(refusal)
        if not update:
            found.append(
                finding(
                    "job-spec-differs",
                    "The live Job %r differs from the definition and update is false." % name,
                    path="spec",
                    hint="See the difference by re-running with -e rlark_update=true --check --diff (a server-side "
                    "dry run: nothing changes; the module option is update=true), then run again without --check "
                    "to apply it; spec.stopped stays as it is.",
                )
            )
        if has_errors(found):
            raise Refused("Refusing to change Job %r." % name, found)
        found.extend(before_write())
        patch = {
            "metadata": {"resourceVersion": live["metadata"]["resourceVersion"]},
            "spec": spec_merge_patch(live.get("spec"), desired.get("spec")),
        }
        applied = read_back_if(client, name, check_mode, lambda now: normalised_spec(now.get("spec")) == wanted)
        try:
            patched = client.merge_patch(job_path(name), patch, dry_run=check_mode, on_ambiguous=applied)
        except ApiError as exc:
            if exc.conflict:
                continue
            raise
        return {"changed": True, "job": patched, "before": live, "action": "updated", "findings": found}
    raise Refused(
        "Job %r kept changing while it was updated." % name,
        [finding("job-conflict", "Gave up after %d conflicting writes." % MAX_CONFLICT_RETRIES, path="metadata")],
    )


def set_stopped(client, name, stopped, check_mode=False, annotations=None):
    """Guarded stop/start: merge patch of ``spec.stopped`` with a resourceVersion precondition.

    A 409 means someone else wrote the Job: re-read and decide again, so of two concurrent stops
    exactly one reports a change. ``annotations`` ride along in the same patch (a guarded stop names
    its run, so a later read tells its stop from anyone else's). Returns ``{changed, job, before, action}``.
    """
    action = "stop" if stopped else "start"
    for _attempt in range(MAX_CONFLICT_RETRIES):
        live = get_job(client, name)
        if live is None:
            raise Refused(
                "Job %r does not exist." % name,
                [
                    finding(
                        "job-not-found",
                        "Job %r does not exist, so it cannot %s." % (name, action),
                        path="metadata.name",
                    )
                ],
            )
        refusal = terminal_refusal(live, action)
        if refusal:
            raise Refused("Refusing to %s Job %r." % (action, name), [refusal])
        if bool((live.get("spec") or {}).get("stopped")) == bool(stopped):
            return {"changed": False, "job": live, "before": live, "action": "unchanged"}
        patch = {"metadata": {"resourceVersion": live["metadata"]["resourceVersion"]}, "spec": {"stopped": stopped}}
        if annotations:
            patch["metadata"]["annotations"] = dict(annotations)
        applied = read_back_if(client, name, check_mode, lambda now: _carries(now, stopped, annotations))
        try:
            patched = client.merge_patch(job_path(name), patch, dry_run=check_mode, on_ambiguous=applied)
        except ApiError as exc:
            if exc.conflict:
                continue
            raise
        return {"changed": True, "job": patched, "before": live, "action": "stopped" if stopped else "started"}
    raise Refused(
        "Job %r kept changing while trying to %s it." % (name, action),
        [finding("job-conflict", "Gave up after %d conflicting writes." % MAX_CONFLICT_RETRIES, path="metadata")],
    )


def _carries(job, stopped, annotations=None):
    """The Job reads ``spec.stopped == stopped`` with every one of ``annotations`` (a write that landed)."""
    held = ((job.get("metadata") or {}).get("annotations")) or {}
    same = bool((job.get("spec") or {}).get("stopped")) == bool(stopped)
    return same and all(held.get(k) == v for k, v in (annotations or {}).items())


def pvc_claims(job):
    """PVC volumes of every template: the claims the agent creates when missing and deletes with the Job.

    An empty claimName becomes ``pvc-<task object name>-<volume>``.
    """
    claims = []
    for index, tmpl in enumerate(jobspec.tasks(job)):
        for vol in jobspec.volumes(tmpl):
            pvc = vol.get("persistentVolumeClaim")
            if pvc is None:
                continue
            claim = pvc.get("claimName") or jobspec.agent_claim_name(job_name(job), tmpl.get("name"), vol.get("name"))
            storage_map = jobspec.workload(tmpl).get("pvcStorageMap") or {}
            claims.append(
                {
                    "task": tmpl.get("name"),
                    "volume": vol.get("name"),
                    "claim": claim,
                    "generated_name": not pvc.get("claimName"),
                    "storage_class": storage_map.get(pvc.get("claimName") or claim),
                    "path": "spec.tasks[%d].kubernetes.workload.template.spec.volumes" % index,
                }
            )
    return claims


def pvc_refusal(job):
    """The ``job-delete-pvc`` refusal for a Job whose templates have agent-created PVCs, else None."""
    claims = pvc_claims(job)
    if not claims:
        return None
    name = job_name(job)
    names = ", ".join(sorted({c["claim"] for c in claims}))
    return Refused(
        "Refusing to delete Job %r." % name,
        [
            finding(
                "job-delete-pvc",
                "Deleting Job %r also deletes the PVCs the agent created for it: %s." % (name, names),
                path=claims[0]["path"],
                hint="Keep their data safe (reclaimPolicy Retain or copied), then set allow_pvc_deletion=true.",
            )
        ],
    )


def delete_job(client, name, allow_pvc_deletion=False, check_mode=False):
    """Delete with background propagation; refuse while agent-created PVCs would go with it.

    The DELETE carries the resourceVersion that was checked: a 409 means the Job changed since, so it
    is read and checked again (it may have gained a PVC) before the next guarded DELETE.
    """
    for _attempt in range(MAX_CONFLICT_RETRIES):
        live = get_job(client, name)
        if live is None:
            return {"changed": False, "job": None, "before": None, "action": "unchanged"}
        refusal = None if allow_pvc_deletion else pvc_refusal(live)
        if refusal is not None:
            raise refusal

        def gone():
            # A 5xx or reset may hide an applied DELETE: a resend would 404 and read as "unchanged".
            if check_mode:
                return None
            now = get_job(client, name)
            return {} if now is None or now["metadata"].get("deletionTimestamp") else None

        try:
            client.delete(
                job_path(name),
                dry_run=check_mode,
                resource_version=live["metadata"].get("resourceVersion"),
                on_ambiguous=gone,
            )
        except ApiError as exc:
            if exc.not_found:
                return {"changed": False, "job": None, "before": None, "action": "unchanged"}
            if exc.conflict:
                continue
            raise
        return {"changed": True, "job": None, "before": live, "action": "deleted"}
    raise Refused(
        "Job %r kept changing while it was deleted." % name,
        [finding("job-conflict", "Gave up after %d conflicting writes." % MAX_CONFLICT_RETRIES, path="metadata")],
    )


# --- wait predicates ------------------------------------------------------------------------------


def task_replicas(task):
    return jobspec.replicas(task.get("spec"))


def stop_state(name, tree):
    """``(done, summary)`` of a stop from one read of the Job's tree: done when every Task has replicas 0 and
    no Pod CR remains (phase alone proves nothing). The one predicate of rlark_job and the guarded stop."""
    if tree["job"] is None:
        return True, "the Job is gone"
    found = duplicate_findings(tree["job"], tree["tasks"])
    if found:  # a stop may reach only one copy: waiting for the other would only time out
        raise Refused("Cannot wait for Job %r to stop." % name, found)
    scaling = ["%s/%s" % task_key(t) for t in tree["tasks"] if task_replicas(t) != 0]
    pods = len(tree["pods"])
    return not scaling and pods == 0, "%d task(s) not yet at replicas 0, %d Pod CR(s) remaining" % (len(scaling), pods)


def stopped_check(client, name):
    """``check`` for a Waiter: ``stop_state`` of a fresh read."""

    def check():
        tree = read_tree(client, name)
        done, summary = stop_state(name, tree)
        return done, summary, tree

    return check


def started_check(client, name):
    """Done when a Task exists for every template and every Task of the Job is Running."""

    def check():
        tree = read_tree(client, name)
        if tree["job"] is None:
            return False, "the Job is gone", tree
        found = placement_findings(tree["job"], tree["tasks"])
        if found:  # RLark will never run these Tasks as they are: say so now, not at the timeout
            raise Refused("Job %r cannot become Running." % name, found)
        want = {task_object_name(name, t.get("name")) for t in jobspec.tasks(tree["job"])}
        have = {task_key(t): (t.get("status") or {}).get("phase") or "" for t in tree["tasks"]}
        missing = sorted(want - {key[1] for key in have})
        not_running = sorted("%s/%s" % key for key, p in have.items() if p != "Running")
        summary = "%d of %d task(s) Running%s" % (
            len(have) - len(not_running),
            len(want),
            ", missing %s" % missing if missing else "",
        )
        return not missing and not not_running, summary, tree

    return check


def absent_check(client, name):
    """Done when the Job and every Task labelled with it are gone."""

    def check():
        job = get_job(client, name)
        tasks = list_tasks(client, name)
        summary = "Job %s, %d task(s) remaining" % ("present" if job else "gone", len(tasks))
        return job is None and not tasks, summary, {"job": job, "tasks": tasks, "pods": []}

    return check


def phase_check(client, name, phase):
    """Done when the Job's ``status.phase`` is ``phase``; a Job frozen in another terminal phase never gets there."""

    def check():
        job = get_job(client, name)
        current = job_phase(job) if job is not None else None
        if job is not None and current != phase and current in TERMINAL_PHASES:
            raise Refused(
                "Job %r is %s and will never be %s." % (name, current, phase),
                [
                    finding(
                        "wait-phase-unreachable",
                        "Job %r is %s: RLark never changes the phase of a Succeeded or Failed Job, so it will not "
                        "become %s." % (name, current, phase),
                        path="status.phase",
                        hint="Delete the Job and create a new one (copy_from) to run it again.",
                    )
                ],
            )
        summary = "phase %s" % (current or "(none yet)") if job is not None else "the Job is gone"
        return current == phase, summary, {"job": job, "tasks": [], "pods": []}

    return check


def read_many(client, jobs, with_nodes=True):
    """``[{job, tasks, pods, nodes}]`` for many Jobs with few calls: Tasks and Pod CRs in chunks of 50."""
    names = sorted(job_name(j) for j in jobs)
    tasks_by_job = {}
    for start in range(0, len(names), POD_SELECTOR_CHUNK):
        chunk = names[start : start + POD_SELECTOR_CHUNK]
        items = client.list(TASKS, label_selector="%s in (%s)" % (JOB_LABEL, ",".join(chunk)))[0]
        for task in items:
            tasks_by_job.setdefault(task["metadata"].get("labels", {}).get(JOB_LABEL), []).append(task)
    all_task_names = []
    for job in jobs:
        all_task_names.extend(task_names_of(job, tasks_by_job.get(job_name(job), [])))
    pods = list_pods(client, all_task_names) if all_task_names else []
    pods_by_task = {}
    for pod in pods:
        pods_by_task.setdefault(jobspec.pod_task_name(pod), []).append(pod)
    out = []
    for job in sorted(jobs, key=job_name):
        tasks = sorted(
            tasks_by_job.get(job_name(job), []),
            key=lambda t: (t["metadata"].get("namespace", ""), t["metadata"]["name"]),
        )
        job_pods = [pod for task in tasks for pod in pods_of(task, pods_by_task.get(task_key(task)[1], []))]
        listed = {task_key(t)[1] for t in tasks}
        for task_name in task_names_of(job, tasks):
            if task_name not in listed:  # Pod CRs left by a Task that is already gone
                job_pods.extend(pods_by_task.get(task_name, []))
        entry = {"job": job, "tasks": tasks, "pods": job_pods, "findings": placement_findings(job, tasks)}
        if with_nodes:
            entry["nodes"] = get_nodes(client, job_pods)
        out.append(entry)
    return out
