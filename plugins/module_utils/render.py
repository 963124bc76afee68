# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render the rlinf.io/v1alpha1 Job that a launch manifest and its deployment profile describe.

The output follows seed 001 ("Job YAML structure") and the platform facts: the head template is
listed first (RLark computes rank starts in template order and RLinf's head is rank 0), has replicas
from the profile (review insists on 1) and the only ``runScript``, which enters the workdir
explicitly because the image ENTRYPOINT never runs. Every template is a Kubernetes StatefulSet with
one container named ``main``; GPUs and ``rlinf.io/*`` devices go into requests and limits, CPU and
memory only when the profile approved a submission path for them. ``template.metadata`` is never
written (RLark prunes it). Same inputs give the same dict in the same key order, hence the same YAML.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import shlex

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.jobspec import API_VERSION, KIND
from ansible_collections.rlark.ops.plugins.module_utils.labels import render_metadata

WORKLOAD_KIND = "StatefulSet"
AGENT_TYPE = "Kubernetes"
CONTAINER = jobspec.MAIN_CONTAINER
TASK_ROLE_ENV = "RLARK_TASK_ROLE"

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def is_device_resource(name):
    """GPUs and RLark devices: the resources the console writes into requests AND limits."""
    name = str(name)
    return name == "nvidia.com/gpu" or name.endswith("/gpu") or name.startswith("rlinf.io/")


def split_reference(reference):
    """``registry:5000/repo:tag@sha256:...`` -> ``(repository, tag, digest)`` (missing parts None)."""
    reference = str(reference or "")
    digest = None
    if "@" in reference:
        reference, digest = reference.split("@", 1)
    tag = None
    last = reference.rsplit("/", 1)[-1]
    if ":" in last:
        reference, tag = reference.rsplit(":", 1)
    return reference, tag, digest


def pinned_image(image):
    """``repository@sha256:...`` from an image record, or None without a well-formed digest."""
    image = image if isinstance(image, dict) else {}
    repository, _tag, ref_digest = split_reference(image.get("reference"))
    digest = image.get("digest") or ref_digest
    if not repository or not isinstance(digest, str) or not _DIGEST.match(digest):
        return None
    return "%s@%s" % (repository, digest)


def ordered_roles(roles):
    """Head roles first, otherwise manifest order (stable)."""
    roles = [r for r in roles or [] if isinstance(r, dict)]
    return [r for r in roles if r.get("head") is True] + [r for r in roles if r.get("head") is not True]


def profile_roles(profile):
    """Profile role entries by name (first one wins; review reports duplicates)."""
    found = {}
    for entry in (profile or {}).get("roles") or []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            found.setdefault(entry["name"], entry)
    return found


def volume_name(mount, used):
    """The mount's name, or one derived from its target like the console does, unique per template."""
    name = mount.get("name")
    if not name:
        name = re.sub(r"[^a-z0-9]+", "-", str(mount.get("target", "")).lower()).strip("-")[:63].strip("-") or "vol"
    base, n = name, 2
    while name in used:
        suffix = "-%d" % n
        name = base[: 63 - len(suffix)] + suffix
        n += 1
    used.add(name)
    return name


def claim_name(job_name, task_name, volume):
    """Explicit claim name in the pattern RLark's agent uses for an empty one, so pvcStorageMap has a stable key."""
    return jobspec.agent_claim_name(job_name, task_name, volume)


def _scalar(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def hydra_arguments(hydra):
    hydra = hydra if isinstance(hydra, dict) else {}
    args = []
    if hydra.get("config_path"):
        args += ["--config-path", hydra["config_path"]]
    if hydra.get("config_name"):
        args += ["--config-name", hydra["config_name"]]
    for item in hydra.get("overrides") or []:
        text = item.get("override") if isinstance(item, dict) else item
        if text:
            args.append(str(text))
    return args


def run_script(role, hydra):
    """Head runScript: explicit ``cd <workdir>``, dependency checks, entrypoint + Hydra inputs."""
    lines = ["cd %s" % shlex.quote(str(role.get("workdir") or "/"))]
    lines += [str(c) for c in role.get("checks") or []]
    command = str(role.get("entrypoint") or "").strip()
    if command:
        lines.append(" ".join([command] + [shlex.quote(a) for a in hydra_arguments(hydra)]))
    return "\n".join(lines)


def _env(role):
    env = []
    for item in role.get("env") or []:
        if not isinstance(item, dict) or not item.get("name"):
            continue
        if isinstance(item.get("secret"), dict):
            ref = item["secret"]
            env.append(
                {"name": item["name"], "valueFrom": {"secretKeyRef": {"name": ref.get("name"), "key": ref.get("key")}}}
            )
        else:
            env.append({"name": item["name"], "value": _scalar(item.get("value", ""))})
    if not any(e["name"] == TASK_ROLE_ENV for e in env):
        env.append({"name": TASK_ROLE_ENV, "value": str(role.get("display_name") or role.get("role") or "")})
    return env


def _resources(role, compute_approved):
    requests, limits = {}, {}
    for name, quantity in (role.get("resources") or {}).items():
        text = _scalar(quantity)
        if is_device_resource(name):
            if text.strip() in ("0", ""):
                continue
            requests[name] = text
            limits[name] = text
        elif compute_approved:
            requests[name] = text
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return resources


def _storage(role, job_name, task_name):
    mounts, volumes, storage_map, used = [], [], {}, set()
    for mount in role.get("mounts") or []:
        if not isinstance(mount, dict):
            continue
        name = volume_name(mount, used)
        entry = {"name": name, "mountPath": mount.get("target")}
        if mount.get("mode") == "ro":
            entry["readOnly"] = True
        mounts.append(entry)
        source = mount.get("source") or {}
        if "host_path" in source:
            volumes.append({"name": name, "hostPath": {"path": source["host_path"], "type": "Directory"}})
            continue
        claim = source.get("pvc") or source.get("object_storage") or {}
        claim_ref = claim.get("claim") or claim_name(job_name, task_name, name)
        volumes.append({"name": name, "persistentVolumeClaim": {"claimName": claim_ref}})
        if claim.get("storage_class"):
            storage_map[claim_ref] = claim["storage_class"]
    return mounts, volumes, storage_map


def render_task(role, profile_role, job_name, hydra, compute_approved):
    task_name = role.get("name")
    head = role.get("head") is True
    task = {"name": task_name, "head": head, "agentType": AGENT_TYPE, "role": role.get("role")}
    task["nodeSelector"] = {str(k): _scalar(v) for k, v in ((profile_role or {}).get("selector") or {}).items()}
    if role.get("prepare"):
        task["prepareScript"] = "\n".join(str(p) for p in role["prepare"])
    if head:
        task["runScript"] = run_script(role, hydra)
    if role.get("tensorboard_dir"):
        task["tensorBoardDir"] = role["tensorboard_dir"]
    mounts, volumes, storage_map = _storage(role, job_name, task_name)
    container = {
        "name": CONTAINER,
        "image": pinned_image(role.get("image")) or str((role.get("image") or {}).get("reference", "")),
    }
    container["env"] = _env(role)
    resources = _resources(role, compute_approved)
    if resources:
        container["resources"] = resources
    if mounts:
        container["volumeMounts"] = mounts
    pod_spec = {"containers": [container]}
    if volumes:
        pod_spec["volumes"] = volumes
    replicas = (profile_role or {}).get("replicas")
    workload = {
        "kind": WORKLOAD_KIND,
        "replicas": replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 0,
    }
    if storage_map:
        workload["pvcStorageMap"] = storage_map
    workload["template"] = {"spec": pod_spec}
    task["kubernetes"] = {"workload": workload}
    return task


def job_name_of(manifest, job_name=None):
    return job_name or ((manifest or {}).get("job") or {}).get("name") or ""


def cross_cluster(manifest, profile):
    """The workload needs cross-cluster traffic: declared, or its roles target several clusters."""
    declared = ((manifest or {}).get("network") or {}).get("cross_cluster") is True
    return declared or len(role_clusters(profile)) > 1


def role_clusters(profile):
    profile = profile or {}
    default = profile.get("cluster")
    return sorted({str(r.get("cluster") or default) for r in profile_roles(profile).values()})


def approved_domain(profile):
    domain = (profile or {}).get("domain") or {}
    if domain.get("approved") is True and domain.get("connectivity_confirmed") is True and domain.get("name"):
        return domain["name"]
    return None


def render_job(manifest, profile, job_name=None):
    """The Job dict for validated inputs (see ``preflight`` for the checked path)."""
    manifest = manifest or {}
    profile = profile or {}
    name = job_name_of(manifest, job_name)
    by_name = profile_roles(profile)
    compute_approved = ((profile.get("compute_requests") or {}).get("approved")) is True
    spec = {}
    domain = approved_domain(profile)
    if domain and cross_cluster(manifest, profile):
        spec["domain"] = domain
    if profile.get("ssh_public_key"):
        spec["sshPublicKey"] = profile["ssh_public_key"]
    spec["tasks"] = [
        render_task(role, by_name.get(role.get("name")), name, manifest.get("hydra"), compute_approved)
        for role in ordered_roles(manifest.get("roles"))
    ]
    metadata = render_metadata(name, manifest.get("job"))
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}
