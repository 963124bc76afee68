# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find where a running Job's RLinf checkpoints really live, from its stored spec.

The checkpoint root is a *container* path (Hydra overrides in the head's runScript, or the launch
manifest). It only survives a pod move when it lies under a volume mount: a hostPath on the head
pod's node, or a PVC whose StorageClass is object storage (RLark's rclone classes map the claim to
the bucket root, so the object key is the path relative to the mountPath). Anything else is the
container filesystem, which disappears with the pod: a guarded stop must refuse.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import posixpath

from ansible_collections.rlark.ops.plugins.module_utils import hydra, jobspec
from ansible_collections.rlark.ops.plugins.module_utils.naming import task_object_name


def hydra_overrides(script):
    """``{key: value}`` of the ``runner.*`` Hydra overrides in a run script (the last one wins)."""
    return hydra.overrides(script, "runner.")


def parts(resource):
    """(job, tasks, pods) of an rlark_job_info / rlark_job result item, or of a bare Job."""
    resource = resource or {}
    job = resource.get("job") if isinstance(resource.get("job"), dict) else resource
    return job, resource.get("tasks") or [], resource.get("pods") or []


head_template = jobspec.head_task


def checkpoint_root(job, manifest=None, explicit=None):
    """(container path of the ``checkpoints`` dir, where it came from, overrides)."""
    head = head_template(job)
    overrides = hydra_overrides(head.get("runScript"))
    if explicit:
        return explicit.rstrip("/"), "explicit input", overrides
    log_path = overrides.get("runner.logger.log_path")
    log_exp = overrides.get("runner.logger.experiment_name")
    if log_path and log_exp:
        return posixpath.join(log_path, log_exp, "checkpoints"), "runner.logger overrides", overrides
    out_dir = overrides.get("runner.output_dir")
    out_exp = overrides.get("runner.experiment_name")
    if out_dir and out_exp:
        return posixpath.join(out_dir, out_exp, "checkpoints"), "runner.output_dir overrides", overrides
    # The run script is what RLinf really reads; the manifest's root is the fallback.
    ckpt = ((manifest or {}).get("checkpoint") or {}) if isinstance(manifest, dict) else {}
    if ckpt.get("root"):
        return str(ckpt["root"]).rstrip("/"), "launch manifest checkpoint.root", overrides
    return None, "no checkpoint location in the run script or the launch manifest", overrides


def head_pod_node(job, tasks, pods):
    """The node of the head task's pod 0 (the RLinf driver writes the checkpoints), or None."""
    head = head_template(job)
    task_object = task_object_name(jobspec.job_name(job), head.get("name"))
    candidates = []
    for pod in pods:
        if jobspec.pod_task_name(pod) != task_object:
            continue
        local = jobspec.pod_local_name(pod) or ""
        candidates.append((not local.endswith("-0"), local, (pod.get("status") or {}).get("node")))
    for _rest, _local, node in sorted(candidates):
        if node:
            return node
    for task in tasks:
        if (task.get("metadata") or {}).get("name") == task_object:
            observed = (task.get("status") or {}).get("observedNodes") or []
            if observed:
                return observed[0]
    return None


def _covering_mount(head, root):
    """(mountPath, volumeMount) of the head's main container's deepest mount that holds ``root``, or None."""
    best = None
    for m in jobspec.main_container(head).get("volumeMounts") or []:
        mp = (m.get("mountPath") or "").rstrip("/") or "/"
        covers = root == mp or root.startswith(mp.rstrip("/") + "/")
        # The same mount point twice ("/data" and "/data/"): the runtime mounts them in order, the last one shows.
        if covers and (best is None or len(mp) >= len(best[0])):
            best = (mp, m)
    return best


def locate(resource, manifest=None, explicit_root=None, object_storage=None):
    """Where the checkpoints of one Job live.

    Returns ``{ok, kind (hostPath|s3|pvc|container|unknown), container_root, source, volume,
    node, host_path, s3: {bucket, prefix, ...}, reason, overrides}``. ``ok`` is False when a
    guarded stop must refuse.
    """
    job, tasks, pods = parts(resource)
    object_storage = object_storage or {}
    root, source, overrides = checkpoint_root(job, manifest, explicit_root)
    out = {
        "ok": False,
        "kind": "unknown",
        "container_root": root,
        "source": source,
        "volume": None,
        "node": None,
        "host_path": None,
        "s3": None,
        "reason": "",
        "overrides": overrides,
    }
    if not root:
        out["reason"] = "The checkpoint directory is unknown: %s." % source
        return out
    head = head_template(job)
    spec = jobspec.pod_spec(head)
    best = _covering_mount(head, root)
    if best is None:
        out["kind"] = "container"
        out["reason"] = (
            "Checkpoint root %s is on the container filesystem (no volume mount covers it): "
            "it disappears with the pod." % root
        )
        return out
    mount_path, mount = best
    rest = root[len(mount_path) :].lstrip("/")
    if mount.get("subPath"):
        rest = posixpath.join(mount["subPath"], rest) if rest else mount["subPath"]
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    vol = volumes.get(mount.get("name")) or {}
    out["volume"] = mount.get("name")
    if vol.get("hostPath"):
        node = head_pod_node(job, tasks, pods)
        base = vol["hostPath"].get("path") or "/"
        out.update(kind="hostPath", node=node, host_path=posixpath.join(base, rest) if rest else base)
        if not node:
            out["reason"] = "Checkpoint root %s is a hostPath, but no head pod shows which node holds it." % root
            return out
        out["ok"] = True
        return out
    claim = vol.get("persistentVolumeClaim")
    if claim is not None:
        name = claim.get("claimName") or jobspec.agent_claim_name(
            jobspec.job_name(job), head.get("name"), vol.get("name")
        )
        storage_map = jobspec.workload(head).get("pvcStorageMap") or {}
        cls = storage_map.get(name)  # keyed by the claim's name, the agent's own one when claimName is empty
        if cls in object_storage:
            target = dict(object_storage[cls])
            prefix = target.get("prefix", "").strip("/")
            target["prefix"] = posixpath.join(prefix, rest) if prefix else rest
            target["storage_class"] = cls
            out.update(kind="s3", s3=target, ok=True)
            return out
        out["kind"] = "pvc"
        out["reason"] = (
            "Checkpoint root %s is on claim %s (StorageClass %s), which is not a configured object storage class: "
            "it cannot be inspected from here and is deleted with the Job." % (root, name, cls or "default")
        )
        return out
    out["kind"] = "container"
    out["reason"] = "Checkpoint root %s is on volume %s, which does not survive the pod." % (root, mount.get("name"))
    return out


def without_resume_override(job):
    """A copy of ``job`` whose head runScript has no ``runner.resume_dir`` override, and the values removed.

    A resume copy must equal what the records describe except for that one intended override, so the
    review runs on the copy without it.
    """
    out = copy.deepcopy(job or {})
    removed = []
    head = head_template(out)
    if head.get("runScript"):
        head["runScript"], removed = hydra.strip_override(head["runScript"], "runner.resume_dir")
    return {"job": out, "resume_dirs": removed}


def step_dir(container_root, step):
    """The container path RLinf resumes from (no trailing slash: RLinf parses the step from it)."""
    return hydra.step_dir(container_root, step)


__all__ = [
    "checkpoint_root",
    "head_pod_node",
    "head_template",
    "hydra_overrides",
    "locate",
    "parts",
    "step_dir",
    "without_resume_override",
]
