# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape of an ``rlinf.io/v1alpha1`` Job: its task templates, its head task, their workload, and the
live objects RLark makes of them (Task objects, Pod CRs, the agent's claims).

Every reader of a Job spec walks it through these accessors, so there is one answer to "which task
is the head" and one tolerant walk down ``kubernetes.workload.template.spec``. Each accessor accepts
a missing or malformed level (a reviewed Job may be anything) and returns an empty value for it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

API_GROUP = "rlinf.io"
API_VERSION = API_GROUP + "/v1alpha1"
KIND = "Job"
MAIN_CONTAINER = "main"
# Set by RLark on the objects it makes for a Job (rlark-platform.md: Task naming, Pod CRs).
JOB_LABEL = "rlinf.io/job"
TASK_NAME_LABEL = "rlark.io/task-name"
LOCAL_POD_NAME_LABEL = "rlark.io/local-pod-name"


def as_dict(value):
    return value if isinstance(value, dict) else {}


def as_list(value):
    return value if isinstance(value, list) else []


def job_name(job):
    return as_dict(as_dict(job).get("metadata")).get("name")


def tasks(job):
    """The task templates of a Job (``spec.tasks``), ``[]`` when there are none."""
    return as_list(as_dict(as_dict(job).get("spec")).get("tasks"))


def head_index(job):
    """Index of the head task: the first template with ``head`` set; None when no template is the head."""
    for index, task in enumerate(tasks(job)):
        if isinstance(task, dict) and task.get("head"):
            return index
    return None


def head_task(job):
    """The head task template (see ``head_index``), ``{}`` when the Job has none."""
    index = head_index(job)
    return {} if index is None else tasks(job)[index]


def workload(task):
    """``kubernetes.workload`` of a task template (or the ``spec`` of a Task object)."""
    return as_dict(as_dict(as_dict(task).get("kubernetes")).get("workload"))


def replicas(task):
    """The workload's replicas; RLark's default is 1."""
    value = workload(task).get("replicas")
    return 1 if value is None else value


def pod_template(task):
    return as_dict(workload(task).get("template"))


def pod_spec(task):
    return as_dict(pod_template(task).get("spec"))


def containers(task, init=False):
    """The pod's containers (with ``init``, its init containers after them)."""
    spec = pod_spec(task)
    out = as_list(spec.get("containers"))
    return out + as_list(spec.get("initContainers")) if init else out


def main_container(task):
    """The container named ``main``, else the first one, else ``{}``."""
    found = containers(task)
    for container in found:
        if isinstance(container, dict) and container.get("name") == MAIN_CONTAINER:
            return container
    return found[0] if found and isinstance(found[0], dict) else {}


def volumes(task):
    return as_list(pod_spec(task).get("volumes"))


def task_object_name(job_name_, task_name):
    """The Task (and StatefulSet) name RLark derives from a Job and one of its templates."""
    return "%s-%s" % (job_name_, task_name)


def agent_claim_name(job_name_, task_name, volume):
    """The claim RLark's agent creates for a PVC volume whose ``claimName`` is empty."""
    return "pvc-%s-%s" % (task_object_name(job_name_, task_name), volume)


def _labels(obj):
    return as_dict(as_dict(as_dict(obj).get("metadata")).get("labels"))


def pod_task_name(pod):
    """The Task object a Pod CR belongs to (its ``rlark.io/task-name`` label), or None."""
    return _labels(pod).get(TASK_NAME_LABEL)


def pod_local_name(pod):
    """The data-plane pod name of a Pod CR (``rlark.io/local-pod-name``, ``<task object>-<ordinal>``), or None."""
    return _labels(pod).get(LOCAL_POD_NAME_LABEL)


__all__ = [
    "API_GROUP",
    "API_VERSION",
    "JOB_LABEL",
    "KIND",
    "LOCAL_POD_NAME_LABEL",
    "MAIN_CONTAINER",
    "TASK_NAME_LABEL",
    "agent_claim_name",
    "containers",
    "head_index",
    "head_task",
    "job_name",
    "main_container",
    "pod_local_name",
    "pod_spec",
    "pod_task_name",
    "pod_template",
    "replicas",
    "task_object_name",
    "tasks",
    "volumes",
    "workload",
]
