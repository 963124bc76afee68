# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Job on its own: schema keys, tasks, the head, the workload (seed 001 Step 6 YAML review)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import manifest as manifest_io
from ansible_collections.rlark.ops.plugins.module_utils import render
from ansible_collections.rlark.ops.plugins.module_utils.findings import WARNING, finding
from ansible_collections.rlark.ops.plugins.module_utils.jobspec import API_VERSION, KIND, pod_spec
from ansible_collections.rlark.ops.plugins.module_utils.labels import metadata_findings
from ansible_collections.rlark.ops.plugins.module_utils.naming import name_findings
from ansible_collections.rlark.ops.plugins.module_utils.review.legacy import is_legacy_key
from ansible_collections.rlark.ops.plugins.module_utils.review.pod_rules import device_findings, volume_findings
from ansible_collections.rlark.ops.plugins.module_utils.review.secret_rules import env_secret_findings
from ansible_collections.rlark.ops.plugins.module_utils.review.values import as_dict, as_int, as_list, as_text
from ansible_collections.rlark.ops.plugins.module_utils.selectors import static_selector_findings

ROLES = ("Actor", "Rollout", "Env")
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
INSTALL_WORDS = ("pip install", "apt-get install", "apt install", "yum install", "conda install", "npm install")


def check_keys(found, data, allowed, path):
    for key in sorted(as_dict(data)):
        if key not in allowed and not is_legacy_key(key):
            found.append(
                finding(
                    "job-unknown-field",
                    "Field %r is not in the rlinf.io/v1alpha1 schema: the API server prunes it silently." % key,
                    path=manifest_io.field_path([key], path),
                    hint="Remove it; RLark only keeps the fields of its CRD.",
                )
            )


def indexed_tasks(job):
    return [
        (i, t) for i, t in enumerate(as_list(as_dict(as_dict(job).get("spec")).get("tasks"))) if isinstance(t, dict)
    ]


def main_container(task):
    containers = as_list(pod_spec(task).get("containers"))
    for c in containers:
        if isinstance(c, dict) and c.get("name") == render.CONTAINER:
            return c
    return None


def job_findings(job):
    """Step 6 and gotcha rules that need nothing but the Job."""
    found = []
    if not isinstance(job, dict):
        return [finding("job-invalid", "The Job is not a mapping; nothing to submit.", path="")]
    if job.get("apiVersion") != API_VERSION or job.get("kind") != KIND:
        found.append(
            finding(
                "job-api-invalid",
                "apiVersion/kind is %s/%s, not %s/%s." % (job.get("apiVersion"), job.get("kind"), API_VERSION, KIND),
                path="apiVersion",
                hint="Submit an rlinf.io/v1alpha1 Job.",
            )
        )
    spec = job.get("spec")
    found.extend(metadata_findings(job.get("metadata")))
    check_keys(found, spec, JOB_SPEC_KEYS, "spec")
    tasks = indexed_tasks(job)
    found.extend(
        name_findings(as_text(as_dict(job.get("metadata")).get("name")), [t.get("name") for _index, t in tasks])
    )
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
    check_keys(found, task, TASK_KEYS, path)
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
    found.extend(static_selector_findings(as_dict(task.get("nodeSelector")), path + ".nodeSelector"))
    run = task.get("runScript")
    if head:
        if not as_text(run).strip():
            found.append(
                finding(
                    "runscript-missing",
                    "The head template has no runScript.",
                    path=path + ".runScript",
                    hint="Give the head role the verified entrypoint in the launch manifest.",
                )
            )
        elif not as_text(run).lstrip().startswith("cd "):
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
    if any(w in as_text(task.get("prepareScript")) for w in INSTALL_WORDS):
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
    workload = as_dict(task.get("kubernetes")).get("workload")
    wpath = path + ".kubernetes.workload"
    if not isinstance(workload, dict):
        return [finding("workload-missing", "The template has no kubernetes.workload.", path=wpath)]
    check_keys(found, workload, WORKLOAD_KEYS, wpath)
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
    if as_int(replicas) is None or replicas < 1:
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
    template = as_dict(workload.get("template"))
    if as_dict(template.get("metadata")):
        found.append(
            finding(
                "template-metadata-pruned",
                "template.metadata is set; RLark's CRD prunes pod template labels/annotations silently.",
                path=wpath + ".template.metadata",
                hint="Remove template.metadata; pod labels are always app=<job>-<task>.",
            )
        )
    pod = as_dict(template.get("spec"))
    found.extend(_container_findings(task, pod, wpath))
    found.extend(volume_findings(pod, workload, wpath))
    return found


def _container_findings(task, pod, wpath):
    """The containers of a workload: one named main, pinned images, no secret env, device requests."""
    found = []
    containers = [c for c in as_list(pod.get("containers")) if isinstance(c, dict)]
    main = main_container(task)
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
        image = as_text(container.get("image"))
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
        found.extend(device_findings(as_dict(container.get("resources")), cpath + ".resources"))
    return found
