# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Review a Job against seed 001 (stop conditions, Step 6 YAML review) and the platform gotchas.

``review_job(job, manifest, profile)`` returns findings ``{id, severity, path, message, hint}``;
any ``error`` means: do not submit. Paths start with ``spec.``/``metadata.`` for the Job,
``manifest.`` and ``profile.`` for the two records. Every id is documented in docs/findings.md.
Inputs of any shape are accepted: bad ones become findings, never exceptions. ``manifest`` and
``profile`` may be None to review a Job on its own (e.g. a copy for resume).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

from ansible_collections.rlark.ops.plugins.module_utils import manifest as manifest_io
from ansible_collections.rlark.ops.plugins.module_utils import render
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, WARNING, finding
from ansible_collections.rlark.ops.plugins.module_utils.labels import metadata_findings
from ansible_collections.rlark.ops.plugins.module_utils.naming import name_findings
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact, redact_text, secret_reason
from ansible_collections.rlark.ops.plugins.module_utils.selectors import static_selector_findings

ROLES = ("Actor", "Rollout", "Env")
COMPUTE_RESOURCES_APPROVAL = "profile.compute_requests.approved"
SECRETS_HINT = (
    "Put the value in a Kubernetes Secret and reference it in the launch manifest instead: give the env item "
    "a 'secret' mapping with the Secret's name and key in place of 'value' (it renders valueFrom.secretKeyRef); "
    "never put the value itself in the manifest or the Job."
)

# Seed 001, "从旧模型迁移到当前模型": legacy names and what replaces them.
LEGACY_FIELDS = {
    "worker_group": "one spec.tasks[] template per role that needs its own image, resources or prepare steps "
    "(manifest roles[])",
    "node_names": "each template's single-value nodeSelector plus replicas, proven against the global Node list "
    "(profile roles[].selector, global_matches, replicas)",
    "num_workers": "the template's replicas, equal to the admin's global match count (profile roles[].replicas); "
    "per-worker GPUs/devices go to container requests and limits",
    "disable_ray": "nothing: RLark always starts Ray (head/worker scripts); do not invent a field",
    "submit_job": "nothing: create a new rlinf.io/v1alpha1 Job (rlark.ops.rlark_job); never copy the legacy JobSpec",
    "runtime_env_json": "the image (dependencies), non-secret role env (manifest roles[].env) and prepareScript",
    "extra_files": "mounts (hostPath, PVC or object storage via pvcStorageMap) or files baked into the image",
    "rlinf_node_rank": "nothing: RLark derives RLINF_NODE_RANK from template order and pod ordinal; keep the head "
    "first",
    "run_on_host": "nothing: workloads run as Kubernetes StatefulSets (agentType Kubernetes); node directories "
    "are hostPath mounts approved in the profile",
}

JOB_SPEC_KEYS = ("domain", "stopped", "tasks", "sshPublicKey")
TASK_KEYS = (
    "name",
    "head",
    "agentType",
    "role",
    "domain",
    "sshPublicKey",
    "downstreamName",
    "nodeSelector",
    "kubernetes",
    "docker",
    "raw",
    "tensorBoardDir",
    "prepareScript",
    "runScript",
)
WORKLOAD_KEYS = ("kind", "replicas", "template", "pvcStorageMap")
SUPPORTED_VOLUME_TYPES = ("hostPath", "persistentVolumeClaim", "emptyDir")
# Container paths a mount must never cover: system dirs, RLark's script mount, the head's ~/.ssh.
RESERVED_EXACT = (
    "/",
    "/bin",
    "/boot",
    "/etc",
    "/lib",
    "/lib64",
    "/root",
    "/sbin",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/local/bin",
    "/var",
    "/tmp",
    "/home",
)
RESERVED_TREES = ("/rlark", "/proc", "/sys", "/dev")
ROBOT_CHECKLIST = ("compatibility", "site", "emergency", "limits", "audit")
INSTALL_WORDS = ("pip install", "apt-get install", "apt install", "yum install", "conda install", "npm install")


# ---------------------------------------------------------------- small safe accessors
def _d(value):
    return value if isinstance(value, dict) else {}


def _l(value):
    return value if isinstance(value, list) else []


def _s(value):
    return value if isinstance(value, str) else ""


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _norm(path):
    path = _s(path)
    return posixpath.normpath(path) if path.startswith("/") else path


def _under(path, root):
    """``path`` equals ``root`` or lies below it (normalised absolute container/host paths)."""
    path, root = _norm(path), _norm(root)
    if not path or not root:
        return False
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def _quantity(value):
    if isinstance(value, bool):
        return str(value).lower()
    return str(value).strip() if value is not None else ""


# ---------------------------------------------------------------- legacy fields
def legacy_findings(data, prefix):
    """Legacy keys anywhere in a document (seed 001 migration table)."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                here = manifest_io.field_path([key], path)
                norm = str(key).lower().replace("-", "_")
                if norm in LEGACY_FIELDS:
                    found.append(
                        finding(
                            "legacy-field",
                            "'%s' is a legacy field, not part of the current RLark Job API." % key,
                            path=here,
                            hint="Current equivalent: %s." % LEGACY_FIELDS[norm],
                        )
                    )
                walk(value, here)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, "%s[%d]" % (path, index))

    walk(data, prefix)
    return found


def is_legacy_key(name):
    return str(name).lower().replace("-", "_") in LEGACY_FIELDS


# ---------------------------------------------------------------- secrets
def env_secret_findings(env, path):
    found = []
    for index, item in enumerate(_l(env)):
        item = _d(item)
        name, here = _s(item.get("name")), "%s[%d]" % (path, index)
        if "valueFrom" in item or "secret" in item:
            continue
        reason = secret_reason(name, item.get("value"))
        if not reason:
            continue
        found.append(
            finding(
                "env-secret",
                "Environment variable %s carries a literal value and %s; the console writes env values into "
                "the pod template in clear text." % (name or "(unnamed)", reason),
                path=here,
                hint=SECRETS_HINT,
            )
        )
    return found


def inline_secret_findings(data, prefix, skip=()):
    """Every value ``redact`` would mask (outside the env values in ``skip``): the review and the
    redaction share one definition, so clean records are never altered by redaction."""
    found = []

    def walk(node, masked, path):
        if path in skip:
            return
        if isinstance(node, dict) and isinstance(masked, dict):
            for k, v in node.items():
                walk(v, masked.get(k), manifest_io.field_path([k], path))
        elif isinstance(node, list) and isinstance(masked, list) and len(node) == len(masked):
            for i, v in enumerate(node):
                walk(v, masked[i], "%s[%d]" % (path, i))
        elif node != masked:
            found.append(
                finding(
                    "inline-secret",
                    "The value at %s looks like a credential (by its name or shape); records and Jobs must not "
                    "carry secrets." % path,
                    path=path,
                    hint=SECRETS_HINT,
                )
            )

    walk(data, redact(data), prefix)
    return found


# ---------------------------------------------------------------- the Job on its own
def _check_keys(found, data, allowed, path):
    for key in sorted(_d(data)):
        if key not in allowed and not is_legacy_key(key):
            found.append(
                finding(
                    "job-unknown-field",
                    "Field %r is not in the rlinf.io/v1alpha1 schema: the API server prunes it silently." % key,
                    path=manifest_io.field_path([key], path),
                    hint="Remove it; RLark only keeps the fields of its CRD.",
                )
            )


def _tasks(job):
    return [(i, t) for i, t in enumerate(_l(_d(_d(job).get("spec")).get("tasks"))) if isinstance(t, dict)]


def _container(task):
    containers = _l(
        _d(_d(_d(_d(task.get("kubernetes")).get("workload")).get("template")).get("spec")).get("containers")
    )
    for c in containers:
        if isinstance(c, dict) and c.get("name") == render.CONTAINER:
            return c
    return None


def job_findings(job):
    """Step 6 and gotcha rules that need nothing but the Job."""
    found = []
    if not isinstance(job, dict):
        return [finding("job-invalid", "The Job is not a mapping; nothing to submit.", path="")]
    if job.get("apiVersion") != render.API_VERSION or job.get("kind") != "Job":
        found.append(
            finding(
                "job-api-invalid",
                "apiVersion/kind is %s/%s, not %s/Job." % (job.get("apiVersion"), job.get("kind"), render.API_VERSION),
                path="apiVersion",
                hint="Submit an rlinf.io/v1alpha1 Job.",
            )
        )
    spec = job.get("spec")
    found.extend(metadata_findings(job.get("metadata")))
    _check_keys(found, spec, JOB_SPEC_KEYS, "spec")
    tasks = _tasks(job)
    found.extend(name_findings(_s(_d(job.get("metadata")).get("name")), [t.get("name") for _index, t in tasks]))
    if not tasks:
        found.append(
            finding("job-no-tasks", "spec.tasks is empty.", path="spec.tasks", hint="Render one template per role.")
        )
        return found
    heads = [i for i, t in tasks if t.get("head") is True]
    if len(heads) != 1:
        found.append(
            finding(
                "head-count",
                "%d templates have head: true; exactly one is required." % len(heads),
                path="spec.tasks",
                hint="Mark exactly one Header role with head: true in the launch manifest.",
            )
        )
    elif heads[0] != tasks[0][0]:
        found.append(
            finding(
                "head-not-first",
                "The head template is not listed first: RLark numbers ranks in template order and RLinf's "
                "head is rank 0.",
                path="spec.tasks[%d]" % heads[0],
                hint="Move the head template to spec.tasks[0].",
            )
        )
    for index, task in tasks:
        found.extend(_task_findings(index, task))
    return found


def _task_findings(index, task):
    found = []
    path = "spec.tasks[%d]" % index
    head = task.get("head") is True
    _check_keys(found, task, TASK_KEYS, path)
    agent = task.get("agentType")
    if agent != render.AGENT_TYPE:
        found.append(
            finding(
                "agent-type-unsupported",
                "agentType is %r; the migration submits Kubernetes StatefulSet workloads only (Docker/Raw are not "
                "implemented by the agent)." % (agent,),
                path=path + ".agentType",
                hint="Set agentType: Kubernetes.",
            )
        )
    if task.get("role") not in ROLES:
        found.append(
            finding(
                "role-invalid",
                "role is %r; RLark roles are Actor, Rollout or Env." % (task.get("role"),),
                path=path + ".role",
            )
        )
    found.extend(static_selector_findings(_d(task.get("nodeSelector")), path + ".nodeSelector"))
    run = task.get("runScript")
    if head:
        if not _s(run).strip():
            found.append(
                finding(
                    "runscript-missing",
                    "The head template has no runScript.",
                    path=path + ".runScript",
                    hint="Give the head role the verified entrypoint in the launch manifest.",
                )
            )
        elif not _s(run).lstrip().startswith("cd "):
            found.append(
                finding(
                    "runscript-no-workdir",
                    "runScript does not start by entering its working directory; the image ENTRYPOINT never runs.",
                    path=path + ".runScript",
                    hint="Start the run script with 'cd <workdir>'.",
                )
            )
    elif run not in (None, ""):
        found.append(
            finding(
                "runscript-outside-head",
                "A non-head template has a runScript; only the head template may carry it.",
                path=path + ".runScript",
                hint="Move the entrypoint to the head role.",
            )
        )
    if not head and task.get("tensorBoardDir"):
        found.append(
            finding(
                "tensorboard-outside-head",
                "tensorBoardDir is set on a non-head template.",
                WARNING,
                path + ".tensorBoardDir",
                "The console only sets it on the head template.",
            )
        )
    if any(w in _s(task.get("prepareScript")) for w in INSTALL_WORDS):
        found.append(
            finding(
                "prepare-installs",
                "prepareScript installs packages on every start.",
                WARNING,
                path + ".prepareScript",
                "Bake stable dependencies into the image; keep prepare steps repeatable and low-risk.",
            )
        )
    found.extend(_workload_findings(path, task, head))
    return found


def _workload_findings(path, task, head):
    found = []
    workload = _d(task.get("kubernetes")).get("workload")
    wpath = path + ".kubernetes.workload"
    if not isinstance(workload, dict):
        return [finding("workload-missing", "The template has no kubernetes.workload.", path=wpath)]
    _check_keys(found, workload, WORKLOAD_KEYS, wpath)
    if workload.get("kind") != render.WORKLOAD_KIND:
        found.append(
            finding(
                "workload-kind-unsupported",
                "workload kind is %r: Deployments break ranks and can fail the Job, DaemonSets ignore stop, "
                "CloneSets are ignored." % (workload.get("kind"),),
                path=wpath + ".kind",
                hint="Use kind: StatefulSet.",
            )
        )
    replicas = workload.get("replicas", 1)
    if _int(replicas) is None or replicas < 1:
        found.append(
            finding(
                "replicas-zero",
                "replicas is %r; every template needs at least one replica." % (replicas,),
                path=wpath + ".replicas",
            )
        )
    elif head and replicas != 1:
        found.append(
            finding(
                "head-replicas",
                "The head template has %d replicas; every replica would start a Ray head and run the runScript."
                % replicas,
                path=wpath + ".replicas",
                hint="Set the head replicas to 1 with a selector that matches exactly one Node.",
            )
        )
    template = _d(workload.get("template"))
    if _d(template.get("metadata")):
        found.append(
            finding(
                "template-metadata-pruned",
                "template.metadata is set; RLark's CRD prunes pod template labels/annotations silently.",
                path=wpath + ".template.metadata",
                hint="Remove template.metadata; pod labels are always app=<job>-<task>.",
            )
        )
    pod = _d(template.get("spec"))
    containers = [c for c in _l(pod.get("containers")) if isinstance(c, dict)]
    main = _container(task)
    if main is None:
        found.append(
            finding(
                "container-not-main",
                "No container is named 'main'; RLark's Ray init only touches the container named main.",
                path=wpath + ".template.spec.containers",
                hint="Name the workload container 'main'.",
            )
        )
    elif len(containers) > 1:
        found.append(
            finding(
                "container-extra",
                "The pod has %d containers; console edit/copy keeps only the first." % len(containers),
                WARNING,
                wpath + ".template.spec.containers",
            )
        )
    for ci, container in enumerate(containers):
        cpath = "%s.template.spec.containers[%d]" % (wpath, ci)
        image = _s(container.get("image"))
        if "@sha256:" not in image:
            found.append(
                finding(
                    "image-not-pinned",
                    "Image %r is not pinned by digest." % image,
                    path=cpath + ".image",
                    hint="Render images as repository@sha256:<verified digest>.",
                )
            )
        found.extend(env_secret_findings(container.get("env"), cpath + ".env"))
        found.extend(_device_findings(_d(container.get("resources")), cpath + ".resources"))
    found.extend(_volume_findings(pod, workload, wpath))
    return found


def _device_findings(resources, path):
    found = []
    requests, limits = _d(resources.get("requests")), _d(resources.get("limits"))
    for name in sorted(set(requests) | set(limits)):
        if render.is_device_resource(name) and _quantity(requests.get(name)) != _quantity(limits.get(name)):
            found.append(
                finding(
                    "device-request-limit-mismatch",
                    "%s is %r in requests and %r in limits; GPUs and devices must be equal in both."
                    % (name, requests.get(name), limits.get(name)),
                    path="%s[%s]" % (path, name),
                )
            )
    return found


def _volume_findings(pod, workload, wpath):
    found = []
    volumes = {}
    for vi, volume in enumerate(_l(pod.get("volumes"))):
        volume = _d(volume)
        volumes[volume.get("name")] = volume
        kinds = [k for k in volume if k != "name"]
        if not any(k in SUPPORTED_VOLUME_TYPES for k in kinds):
            found.append(
                finding(
                    "volume-type-unsupported",
                    "Volume %r uses %s; the migration supports hostPath, PVC (incl. object storage) and emptyDir."
                    % (volume.get("name"), ", ".join(kinds) or "no source"),
                    path="%s.template.spec.volumes[%d]" % (wpath, vi),
                )
            )
    for ci, container in enumerate(_l(pod.get("containers"))):
        for mi, mount in enumerate(_l(_d(container).get("volumeMounts"))):
            mount = _d(mount)
            mpath = "%s.template.spec.containers[%d].volumeMounts[%d]" % (wpath, ci, mi)
            if mount.get("name") not in volumes:
                found.append(
                    finding("mount-volume-missing", "volumeMount %r has no volume." % (mount.get("name"),), path=mpath)
                )
            found.extend(_reserved_path_findings(mount.get("mountPath"), mpath + ".mountPath"))
    claims = {_d(v.get("persistentVolumeClaim")).get("claimName") for v in volumes.values()}
    for claim in sorted(_d(workload.get("pvcStorageMap")), key=str):
        if claim not in claims:
            found.append(
                finding(
                    "storage-map-orphan",
                    "pvcStorageMap names claim %r that no volume uses." % (claim,),
                    WARNING,
                    "%s.pvcStorageMap[%s]" % (wpath, claim),
                )
            )
    return found


def _reserved_path_findings(target, path):
    target = _norm(target)
    if not target.startswith("/"):
        return [finding("mount-unclear", "Mount target %r is not an absolute container path." % (target,), path=path)]
    if target in RESERVED_EXACT or any(_under(target, root) for root in RESERVED_TREES):
        return [
            finding(
                "mount-reserved-path",
                "Mount target %s covers a system or RLark path (RLark mounts its Ray scripts at /rlark/scripts and "
                "writes ~/.ssh for the head)." % target,
                path=path,
                hint="Mount external data under a dedicated directory such as /data or /mnt.",
            )
        ]
    return []


# ---------------------------------------------------------------- the two records
def records_findings(manifest, profile):
    """Stop conditions that only the launch manifest and deployment profile can show."""
    found = []
    m_ver, p_ver = _s(manifest.get("version")), _s(profile.get("version"))
    manifest_stale = _s(_d(manifest.get("profile")).get("version")) != p_ver
    if manifest_stale or _s(_d(profile.get("manifest")).get("version")) != m_ver:
        found.append(
            finding(
                "records-not-linked",
                "The launch manifest (version %s, references profile %s) and the deployment profile (version %s, "
                "references manifest %s) do not reference each other."
                % (
                    m_ver,
                    _d(manifest.get("profile")).get("version"),
                    p_ver,
                    _d(profile.get("manifest")).get("version"),
                ),
                path="manifest.profile.version" if manifest_stale else "profile.manifest.version",
                hint="Each record must name the other's current version.",
            )
        )
    signals = _d(manifest.get("signals"))
    for kind in ("startup", "normal"):
        if not _l(signals.get(kind)):
            found.append(
                finding(
                    "signals-missing",
                    "No expected %s signal: a StatefulSet Task never reports Succeeded/Failed, so 'no failure' "
                    "proves nothing." % kind,
                    path="manifest.signals.%s" % kind,
                    hint="Record the log line, metric or output that proves it.",
                )
            )
    if not _l(signals.get("failure")):
        found.append(
            finding("signals-failure-missing", "No expected failure signal.", WARNING, "manifest.signals.failure")
        )
    roles = [(i, r) for i, r in enumerate(_l(manifest.get("roles"))) if isinstance(r, dict)]
    prof_roles = render.profile_roles(profile)
    found.extend(_head_record_findings(roles))
    found.extend(_image_findings(manifest, roles))
    compute_ok = _d(profile.get("compute_requests")).get("approved") is True
    for i, role in roles:
        rpath = "manifest.roles[%d]" % i
        entry = prof_roles.get(role.get("name"))
        if entry is None:
            found.append(
                finding(
                    "profile-role-missing",
                    "Role %r has no entry in the deployment profile (selector, matches, replicas, resources)."
                    % (role.get("name"),),
                    path=rpath + ".name",
                    hint="Ask the platform admin to approve this role.",
                )
            )
            entry = {}
        found.extend(_resource_record_findings(role, entry, rpath, compute_ok))
        found.extend(_mount_findings(role, rpath, profile, entry))
        found.extend(_robot_findings(manifest, profile, role, entry, rpath))
    names = {r.get("name") for _index, r in roles}
    for pi, entry in enumerate(_l(profile.get("roles"))):
        if isinstance(entry, dict) and entry.get("name") not in names:
            found.append(
                finding(
                    "profile-role-unknown",
                    "Profile role %r is not in the manifest." % (entry.get("name"),),
                    WARNING,
                    "profile.roles[%d].name" % pi,
                )
            )
    found.extend(_selector_record_findings(profile, roles))
    found.extend(_location_findings(manifest, roles))
    if render.cross_cluster(manifest, profile) and not render.approved_domain(profile):
        found.append(
            finding(
                "domain-unapproved",
                "The roles communicate across clusters (%s) but the profile has no approved Domain with confirmed "
                "connectivity." % (", ".join(render.role_clusters(profile)) or "declared in manifest.network"),
                path="profile.domain",
                hint="Ask the platform admin to create and approve a Domain and confirm end-to-end connectivity.",
            )
        )
    return found


def _head_record_findings(roles):
    """Script placement in the manifest (the head count itself is checked on the rendered Job)."""
    found = []
    for i, role in roles:
        if role.get("head") is True and not _s(role.get("entrypoint")).strip():
            found.append(
                finding(
                    "runscript-missing",
                    "The head role %r has no entrypoint: the Job would have nothing to run." % role.get("name"),
                    path="manifest.roles[%d].entrypoint" % i,
                    hint="Record the exact start command verified in the image.",
                )
            )
        if role.get("head") is not True and (role.get("entrypoint") or role.get("checks")):
            found.append(
                finding(
                    "runscript-outside-head",
                    "Role %r is not the head but declares an entrypoint/checks; only the head runs a script."
                    % role.get("name"),
                    path="manifest.roles[%d].entrypoint" % i,
                    hint="Non-head roles run Ray workers only; move the entrypoint to the head role.",
                )
            )
    return found


def _image_findings(manifest, roles):
    found = []
    digests = {}
    for i, role in roles:
        image = _d(role.get("image"))
        ipath = "manifest.roles[%d].image" % i
        _repo, tag, ref_digest = render.split_reference(image.get("reference"))
        digest = image.get("digest")
        if ref_digest and digest and ref_digest != digest:
            found.append(
                finding(
                    "image-digest-conflict",
                    "The reference pins %s but the recorded digest is %s." % (ref_digest, digest),
                    path=ipath + ".digest",
                )
            )
        if not digest and not ref_digest:
            found.append(
                finding(
                    "image-not-pinned",
                    "Image %r has no verified digest%s."
                    % (image.get("reference"), " (tag %r only)" % tag if tag else ""),
                    path=ipath + ".digest",
                    hint="Record the actual sha256 digest the reference resolved to.",
                )
            )
        verification = _d(image.get("verification"))
        missing = [k for k in ("verified", "command_verified") if verification.get(k) is not True]
        if missing:
            found.append(
                finding(
                    "image-unverified",
                    "Image content/source/digest or command is not recorded as verified (%s)." % ", ".join(missing),
                    path=ipath + ".verification",
                    hint="Verify the image and the exact command in the workload's own environment first.",
                )
            )
        for key in ("source", "contact"):
            if not _s(image.get(key)).strip():
                found.append(
                    finding(
                        "image-provenance-missing",
                        "The image has no recorded %s." % key,
                        path="%s.%s" % (ipath, key),
                        hint="Record the build source and the contact person.",
                    )
                )
        pinned = digest or ref_digest
        if pinned:
            digests.setdefault(pinned, i)
    found.extend(_compat_findings(manifest, sorted(digests)))
    return found


def _compat_findings(manifest, digests):
    groups = [set(_l(_d(r).get("images"))) for r in _l(manifest.get("compatibility"))]
    found = []
    for a_index, a in enumerate(digests):
        for b in digests[a_index + 1 :]:
            if not any(a in g and b in g for g in groups):
                found.append(
                    finding(
                        "image-compat-missing",
                        "Roles use different images %s and %s without a compatibility record." % (a[:19], b[:19]),
                        path="manifest.compatibility",
                        hint="Record that Ray, Python, RLinf, config format, drivers and devices were checked "
                        "for this pair, or use one image.",
                    )
                )
    return found


def _resource_record_findings(role, entry, rpath, compute_ok):
    found = []
    approved = _d(entry.get("resources"))
    for name, quantity in sorted(_d(role.get("resources")).items()):
        here = "%s.resources[%s]" % (rpath, name)
        if not render.is_device_resource(name) and not compute_ok:
            found.append(
                finding(
                    "cpu-memory-unapproved",
                    "The role needs an explicit %s request but no CPU/memory submission path is approved." % name,
                    path=here,
                    hint="Stop: the console cannot carry CPU/memory; the admin must approve a supported path "
                    "(%s)." % COMPUTE_RESOURCES_APPROVAL,
                )
            )
        if name not in approved or _quantity(approved[name]) != _quantity(quantity):
            found.append(
                finding(
                    "resources-not-approved",
                    "The role needs %s=%s but the profile approves %s."
                    % (name, _quantity(quantity), approved.get(name, "nothing")),
                    path=here,
                    hint="Write the quantity into the approved deployment profile.",
                )
            )
    return found


def _image_paths(role):
    return [_norm(p) for p in _l(_d(role.get("image")).get("paths")) if _s(p).startswith("/")]


def _mount_findings(role, rpath, profile, entry):
    found = []
    workdir = _norm(role.get("workdir"))
    seen = {}
    classes = {c.get("name"): c for c in _l(profile.get("storage_classes")) if isinstance(c, dict)}
    for mi, mount in enumerate(_l(role.get("mounts"))):
        mount = _d(mount)
        mpath = "%s.mounts[%d]" % (rpath, mi)
        source, target = _d(mount.get("source")), _norm(mount.get("target"))
        missing = [
            k
            for k, ok in (
                ("source", len(source) == 1),
                ("target", target.startswith("/")),
                ("mode", mount.get("mode") in ("ro", "rw")),
            )
            if not ok
        ]
        if missing:
            found.append(
                finding(
                    "mount-unclear",
                    "Mount %d does not state its %s." % (mi, ", ".join(missing)),
                    path=mpath,
                    hint="Every mount needs exactly one source, an absolute target and ro/rw intent.",
                )
            )
        if target in seen:
            found.append(
                finding(
                    "mount-unclear",
                    "Mounts %d and %d use the same target %s." % (seen[target], mi, target),
                    path=mpath + ".target",
                )
            )
        seen.setdefault(target, mi)
        if target.startswith("/"):
            found.extend(_shadow_findings(mount, target, workdir, _image_paths(role), mpath))
        if "host_path" in source:
            found.extend(_host_path_findings(source.get("host_path"), mount.get("mode"), profile, entry, mpath))
        for kind in ("pvc", "object_storage"):
            cls = _s(_d(source.get(kind)).get("storage_class"))
            if kind in source and cls not in classes:
                found.append(
                    finding(
                        "storage-class-unapproved",
                        "StorageClass %r is not approved in the deployment profile." % cls,
                        path="%s.source.%s.storage_class" % (mpath, kind),
                        hint="Use a StorageClass the admin confirmed exists in every target cluster.",
                    )
                )
            elif kind == "object_storage" and kind in source and _d(classes.get(cls)).get("kind") != "object":
                found.append(
                    finding(
                        "storage-class-unapproved",
                        "StorageClass %r is not approved as object storage." % cls,
                        path="%s.source.%s.storage_class" % (mpath, kind),
                    )
                )
    return found


def _shadow_findings(mount, target, workdir, image_paths, mpath):
    acknowledged = mount.get("shadows") is True
    protected = ([workdir] if workdir.startswith("/") else []) + image_paths
    for path in protected:
        if _under(path, target):
            return [
                finding(
                    "mount-shadows-image",
                    "Mount target %s covers %s (image content or the workdir)%s."
                    % (target, path, ", acknowledged" if acknowledged else ""),
                    WARNING if acknowledged else ERROR,
                    mpath + ".target",
                    "Mount outside the image's code/config directories, or set shadows: true after checking "
                    "which files come from the image.",
                )
            ]
        if _under(target, path) and not acknowledged:
            return [
                finding(
                    "mount-inside-image-path",
                    "Mount target %s lies inside %s: files there are hidden by the mount." % (target, path),
                    WARNING,
                    mpath + ".target",
                    "Confirm the directory is meant to come from outside the image (shadows: true).",
                )
            ]
    return []


def _host_path_findings(host_path, mode, profile, entry, mpath):
    approvals = [a for a in _l(profile.get("host_paths")) if isinstance(a, dict) and _under(host_path, a.get("path"))]
    problem = None
    if not approvals:
        problem = "hostPath %s is not approved in the deployment profile" % host_path
    else:
        approval = approvals[0]
        nodes = approval.get("nodes")
        matched = [_s(_d(m).get("name")) for m in _l(entry.get("global_matches"))]
        if not _s(approval.get("cleanup")).strip():
            problem = "hostPath %s has no cleanup plan" % host_path
        elif mode == "rw" and approval.get("mode") != "rw":
            problem = "hostPath %s is approved read-only but mounted read-write" % host_path
        elif isinstance(nodes, list) and any(n not in nodes for n in matched):
            problem = "hostPath %s is not approved on node(s) %s" % (
                host_path,
                ", ".join(n for n in matched if n not in nodes),
            )
    if problem is None:
        return []
    return [
        finding(
            "hostpath-unapproved",
            problem + ".",
            path=mpath + ".source.host_path",
            hint="Host directories need the admin's approval of path, permissions, read/write impact and cleanup "
            "plan on every matching node; otherwise use managed storage.",
        )
    ]


def _robot_findings(manifest, profile, role, entry, rpath):
    selector = _d(entry.get("selector"))
    needs = (
        role.get("real_robot") is True
        or any(
            str(k).startswith("rlinf.io/device")
            for k in list(_d(role.get("resources"))) + list(_d(entry.get("resources")))
        )
        or selector.get("rlark.io/node-category") == "robot"
        or selector.get("rlark.io/node-category-robot") == "true"
    )
    if not needs:
        return []
    checklist = _d(_d(profile.get("robot_safety")).get("checklist"))
    missing = [k for k in ROBOT_CHECKLIST if _d(checklist.get(k)).get("confirmed") is not True]
    if not _d(profile.get("robot_safety")).get("approved_by"):
        missing.insert(0, "approved_by")
    if not isinstance(manifest.get("robot_safety"), dict):
        missing.append("manifest.robot_safety (approval and stop plan)")
    if not missing:
        return []
    return [
        finding(
            "robot-safety-missing",
            "Role %r may drive real hardware (robot node or rlinf.io/device) but the safety approval is incomplete: "
            "%s." % (role.get("name"), ", ".join(missing)),
            path=rpath,
            hint="Stop and use simulation until the device team and safety approver confirm every checklist item "
            "(profile.robot_safety.checklist) and the approval and stop plan are in the manifest.",
        )
    ]


def _selector_record_findings(profile, roles):
    found = []
    default = profile.get("cluster")
    heads = {r.get("name") for _index, r in roles if r.get("head") is True}
    for pi, entry in enumerate(_l(profile.get("roles"))):
        if not isinstance(entry, dict):
            continue
        ppath = "profile.roles[%d]" % pi
        cluster = entry.get("cluster") or default
        matches = [m for m in _l(entry.get("global_matches")) if isinstance(m, dict)]
        replicas = _int(entry.get("replicas"))
        if not matches:
            found.append(
                finding(
                    "selector-unproven",
                    "No global match record for role %r: the creator only shows one cluster's nodes."
                    % (entry.get("name"),),
                    path=ppath + ".global_matches",
                    hint="Have the admin apply the full selector to the global Node list and record every match "
                    "(rlark.ops.rlark_node_match does it).",
                )
            )
            continue
        others = sorted({_s(m.get("namespace")) for m in matches if m.get("namespace") != cluster})
        if others:
            found.append(
                finding(
                    "selector-other-cluster",
                    "The selector of role %r also matches Nodes in %s, not only in %s: RLark may place the Task in "
                    "another cluster." % (entry.get("name"), ", ".join(others), cluster),
                    path=ppath + ".selector",
                    hint="Add a label that makes the selector unique to the target cluster.",
                )
            )
        if entry.get("name") in heads and len(matches) != 1:
            found.append(
                finding(
                    "head-match-count",
                    "The head selector matches %d Nodes globally; it must match exactly 1." % len(matches),
                    path=ppath + ".global_matches",
                    hint="Narrow the head selector (e.g. kubernetes.io/hostname) to one Node.",
                )
            )
        elif replicas is not None and replicas != len(matches):
            found.append(
                finding(
                    "replicas-match-mismatch",
                    "Role %r has %d replicas but the global match record lists %d Nodes (one pod per node)."
                    % (entry.get("name"), replicas, len(matches)),
                    path=ppath + ".replicas",
                    hint="Set replicas to the admin's recorded match count.",
                )
            )
    return found


def _location_findings(manifest, roles):
    """Checkpoint and output must land on a persistent read-write mount of the head role."""
    found = []
    head = next((r for _index, r in roles if r.get("head") is True), None)
    if head is None:
        return found
    mounts = [_d(m) for m in _l(head.get("mounts"))]
    for key, loc in (
        ("checkpoint", _d(manifest.get("checkpoint")).get("root")),
        ("output", _d(manifest.get("output")).get("location")),
    ):
        if not _s(loc).startswith("/"):
            continue
        covering = [m for m in mounts if _under(loc, m.get("target"))]
        if not any(m.get("mode") == "rw" for m in covering):
            found.append(
                finding(
                    "location-not-persistent",
                    "The %s location %s is not inside a read-write mount of the head role: it would vanish with "
                    "the pod." % (key, loc),
                    path="manifest.%s" % ("checkpoint.root" if key == "checkpoint" else "output.location"),
                    hint="Mount persistent storage (object storage, PVC or an approved hostPath) read-write at or "
                    "above it.",
                )
            )
    return found


# ---------------------------------------------------------------- Job against the records
def consistency_findings(job, manifest, profile):
    """The Job must be exactly what the records describe (Step 6: YAML matches the confirmed results)."""
    found = []
    tasks = {t.get("name"): (i, t) for i, t in _tasks(job)}
    expected = render.render_job(manifest, profile, _s(_d(job.get("metadata")).get("name")) or None)
    exp_spec = expected["spec"]
    spec = _d(job.get("spec"))
    if spec.get("domain") and spec.get("domain") != exp_spec.get("domain"):
        found.append(
            finding(
                "domain-unapproved",
                "spec.domain %r is not the approved Domain of a workload that needs cross-cluster traffic."
                % (spec.get("domain"),),
                path="spec.domain",
                hint="Only set a Domain the profile approves (connectivity confirmed) when roles span clusters.",
            )
        )
    if spec.get("sshPublicKey") and spec.get("sshPublicKey") != exp_spec.get("sshPublicKey"):
        found.append(
            finding(
                "ssh-key-unapproved",
                "spec.sshPublicKey is not the key registered in the deployment profile.",
                path="spec.sshPublicKey",
                hint="Only set a public key registered in RLark's SSH key management, when remote access is needed.",
            )
        )
    prof_roles = render.profile_roles(profile)
    roles = {r.get("name"): r for r in render.ordered_roles(manifest.get("roles"))}
    for exp in exp_spec["tasks"]:
        name = exp["name"]
        if name not in tasks:
            found.append(
                finding(
                    "role-template-missing",
                    "No template for manifest role %r." % (name,),
                    path="spec.tasks",
                    hint="Render one template per role.",
                )
            )
            continue
        index, task = tasks[name]
        found.extend(_compare_task(index, task, exp, roles.get(name) or {}, prof_roles.get(name) or {}, profile))
    for name, (index, _task) in sorted(tasks.items(), key=lambda kv: kv[1][0]):
        if name not in roles:
            found.append(
                finding(
                    "role-template-unexpected",
                    "Template %r is not a role of the launch manifest." % (name,),
                    path="spec.tasks[%d].name" % index,
                )
            )
    return found


def _compare_task(index, task, exp, role, entry, profile):
    found = []
    path = "spec.tasks[%d]" % index
    if task.get("role") != exp["role"]:
        found.append(
            finding(
                "role-mismatch",
                "role is %r, the manifest says %r." % (task.get("role"), exp["role"]),
                path=path + ".role",
            )
        )
    if (task.get("head") is True) != exp["head"]:
        found.append(
            finding(
                "head-mismatch",
                "head is %r, the manifest says %r." % (task.get("head"), exp["head"]),
                path=path + ".head",
            )
        )
    if _d(task.get("nodeSelector")) != exp["nodeSelector"]:
        found.append(
            finding(
                "selector-mismatch",
                "nodeSelector differs from the admin-verified selector of the profile.",
                path=path + ".nodeSelector",
                hint="Use profile.roles[].selector exactly.",
            )
        )
    workload, exp_w = _d(_d(task.get("kubernetes")).get("workload")), exp["kubernetes"]["workload"]
    wpath = path + ".kubernetes.workload"
    replicas = workload.get("replicas", 1)
    if _int(entry.get("replicas")) is not None and replicas != entry.get("replicas"):
        found.append(
            finding(
                "replicas-mismatch",
                "replicas is %r, the profile approves %r." % (replicas, entry.get("replicas")),
                path=wpath + ".replicas",
            )
        )
    main, exp_c = _container(task) or {}, exp_w["template"]["spec"]["containers"][0]
    cpath = wpath + ".template.spec.containers[0]"
    pinned = render.pinned_image(role.get("image"))
    if pinned and main.get("image") != pinned:
        found.append(
            finding(
                "image-mismatch",
                "image is %r, the manifest records %r." % (main.get("image"), pinned),
                path=cpath + ".image",
            )
        )
    found.extend(_job_resource_findings(_d(main.get("resources")), entry, profile, cpath + ".resources"))
    for key, where, actual, wanted in (
        ("runScript", path, task.get("runScript"), exp.get("runScript")),
        ("prepareScript", path, task.get("prepareScript"), exp.get("prepareScript")),
        ("tensorBoardDir", path, task.get("tensorBoardDir"), exp.get("tensorBoardDir")),
        ("env", cpath, main.get("env"), exp_c.get("env")),
        ("volumeMounts", cpath, main.get("volumeMounts"), exp_c.get("volumeMounts")),
        (
            "volumes",
            wpath + ".template.spec",
            _d(_d(workload.get("template")).get("spec")).get("volumes"),
            exp_w["template"]["spec"].get("volumes"),
        ),
        ("pvcStorageMap", wpath, workload.get("pvcStorageMap"), exp_w.get("pvcStorageMap")),
    ):
        if (actual or None) != (wanted or None):
            found.append(
                finding(
                    "job-differs-from-records",
                    "%s differs from what the launch manifest and deployment profile describe." % key,
                    path="%s.%s" % (where, key),
                    hint="Render the Job from the records (rlark.ops.render_job) instead of editing it by hand.",
                )
            )
    return found


def _job_resource_findings(resources, entry, profile, path):
    found = []
    approved = _d(entry.get("resources"))
    compute_ok = _d(profile.get("compute_requests")).get("approved") is True
    for section in ("requests", "limits"):
        for name, quantity in sorted(_d(resources.get(section)).items()):
            here = "%s.%s[%s]" % (path, section, name)
            if not render.is_device_resource(name) and not compute_ok:
                found.append(
                    finding(
                        "cpu-memory-unapproved",
                        "%s %s is set without an approved CPU/memory submission path." % (section, name),
                        path=here,
                        hint="Remove it, or have the admin approve a supported path (%s)." % COMPUTE_RESOURCES_APPROVAL,
                    )
                )
            elif _quantity(approved.get(name)) != _quantity(quantity):
                found.append(
                    finding(
                        "resources-not-approved",
                        "%s %s=%s is not the approved quantity (%s)."
                        % (section, name, _quantity(quantity), approved.get(name, "none")),
                        path=here,
                        hint="Use the per-worker quantities of the deployment profile.",
                    )
                )
    return found


# ---------------------------------------------------------------- entry points
def input_findings(data, kind):
    """Schema + legacy findings for one record; returns ``(findings, valid_data_or_None)``."""
    prefix = manifest_io.MANIFEST if kind == manifest_io.MANIFEST else manifest_io.PROFILE
    if data is None:
        return [finding("%s-missing" % prefix, "No %s was given." % manifest_io.TITLES[kind], path=prefix)], None
    result = manifest_io.load_and_validate(data, kind, extra_ok=is_legacy_key)
    found = legacy_findings(result.get("raw"), prefix)
    for error in result["errors"]:
        found.append(
            finding(
                "%s-invalid" % prefix,
                "%s: %s" % (manifest_io.TITLES[kind], error["message"]),
                path=manifest_io.field_path([], prefix) + ("." + error["path"] if error["path"] else ""),
                hint=_input_hint(kind, error),
            )
        )
    return found, (result["data"] if not found else None)


def _input_hint(kind, error):
    """What to do about one input error, naming the playbook variable that passes the record."""
    variable, title = manifest_io.VARIABLES[kind], manifest_io.TITLES[kind]
    if error.get("unreadable") and "not valid YAML" in error["message"]:
        return "Fix the YAML syntax at the line and column shown, in the file given as %s." % variable
    if error.get("unreadable"):
        return (
            "Pass the %s as a readable YAML file: -e %s=PATH (a relative PATH is resolved from the directory "
            % (
                title,
                variable,
            )
            + "you run ansible-playbook in)."
        )
    if not error["path"]:
        return "Give %s a %s: a YAML mapping as described in schemas/%s." % (
            variable,
            title,
            manifest_io.SCHEMA_FILES[kind],
        )
    return "Fix %s in the %s given as %s (schemas/%s lists every field)." % (
        error["path"],
        title,
        variable,
        manifest_io.SCHEMA_FILES[kind],
    )


def review_records(job, manifest, profile):
    """Review with records already validated (or None): the core of ``review_job`` and ``preflight``."""
    found = job_findings(job)
    found.extend(legacy_findings(job, ""))
    if manifest is None or profile is None:
        if isinstance(job, dict):
            found.extend(inline_secret_findings(job, "", skip=_env_paths(job)))
        return found
    # A secret in env is the user's to fix in the launch manifest: report it there, not in the rendered Job.
    for i, role in enumerate(_l(manifest.get("roles"))):
        found.extend(env_secret_findings(_d(role).get("env"), "manifest.roles[%d].env" % i))
    rendered_from_manifest = _manifest_env_paths_in_job(job, manifest)
    found = [f for f in found if not (f["id"] == "env-secret" and f["path"] in rendered_from_manifest)]
    found.extend(records_findings(manifest, profile))
    found.extend(inline_secret_findings(manifest, "manifest", skip=_env_paths_manifest(manifest)))
    found.extend(inline_secret_findings(profile, "profile"))
    if isinstance(job, dict):
        found.extend(consistency_findings(job, manifest, profile))
    return found


def _env_paths(job):
    paths = set()
    for i, task in _tasks(job):
        pod = _d(_d(_d(_d(task.get("kubernetes")).get("workload")).get("template")).get("spec"))
        for ci, container in enumerate(_l(pod.get("containers"))):
            for ei in range(len(_l(_d(container).get("env")))):
                paths.add("spec.tasks[%d].kubernetes.workload.template.spec.containers[%d].env[%d].value" % (i, ci, ei))
    return paths


def _manifest_env_paths_in_job(job, manifest):
    """Paths of the Job's env items that carry a manifest env item of the same name (rendered from it)."""
    by_role = {
        _s(_d(r).get("name")): {_s(_d(e).get("name")) for e in _l(_d(r).get("env"))} for r in _l(manifest.get("roles"))
    }
    paths = set()
    for i, task in _tasks(job):
        names = by_role.get(_s(task.get("name")), set())
        pod = _d(_d(_d(_d(task.get("kubernetes")).get("workload")).get("template")).get("spec"))
        for ci, container in enumerate(_l(pod.get("containers"))):
            for ei, item in enumerate(_l(_d(container).get("env"))):
                if _s(_d(item).get("name")) in names:
                    paths.add("spec.tasks[%d].kubernetes.workload.template.spec.containers[%d].env[%d]" % (i, ci, ei))
    return paths


def _env_paths_manifest(manifest):
    paths = set()
    for i, role in enumerate(_l(manifest.get("roles"))):
        for ei in range(len(_l(_d(role).get("env")))):
            paths.add("manifest.roles[%d].env[%d].value" % (i, ei))
    return paths


def safe(found):
    """Findings with secrets masked in every text field; a stable order (errors first)."""
    out = []
    for f in found:
        out.append({k: redact_text(v) if isinstance(v, str) else v for k, v in f.items()})
    return sorted(out, key=lambda f: (f["severity"] != ERROR, f["path"], f["id"], f["message"]))


def review_job(job, manifest=None, profile=None):
    """Findings for a Job and (optionally) the records it was rendered from. Never raises."""
    try:
        found = []
        records = []
        for data, kind in ((manifest, manifest_io.MANIFEST), (profile, manifest_io.PROFILE)):
            if data is None and manifest is None and profile is None:
                records.append(None)
                continue
            more, valid = input_findings(data, kind)
            found.extend(more)
            records.append(valid)
        found.extend(review_records(manifest_io.to_plain(job), records[0], records[1]))
    except Exception as exc:  # a review must report, never crash the play
        found.append(internal_error(exc))
    return safe(found)


def internal_error(exc):
    return finding(
        "review-internal-error",
        "The review could not finish (%s: %s); treat the input as not reviewed." % (type(exc).__name__, exc),
        path="",
        hint="Report this as a bug with the redacted inputs.",
    )
