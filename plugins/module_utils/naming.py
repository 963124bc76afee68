# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Name rules RLark does not enforce but its data plane depends on.

RLark names a Task ``<job>-<task>`` (plain dash join), the agent names the StatefulSet after the
Task (its revision-hash label limits the name to 52 characters) and the head Service
``<job>-<task>-ray-head`` must stay a DNS-1035 label of at most 63 characters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.findings import finding

DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# The console's job-name rule (DNS-1123 label); Jobs are cluster-scoped objects.
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
TASK_NAME_MAX = 52
JOB_NAME_MAX = 63
HEAD_SERVICE_SUFFIX = "-ray-head"


task_object_name = jobspec.task_object_name


def name_findings(job_name, task_names):
    """Findings for a Job name and its template names, with paths under ``metadata``/``spec.tasks``."""
    found = []
    if not job_name or not isinstance(job_name, str):
        return [
            finding(
                "job-name-missing",
                "The Job has no metadata.name.",
                path="metadata.name",
                hint="Give the Job a DNS-1035 name of at most %d characters." % JOB_NAME_MAX,
            )
        ]
    if not DNS1035.match(job_name) or len(job_name) > JOB_NAME_MAX:
        found.append(
            finding(
                "job-name-invalid",
                "Job name %r is not a DNS-1035 label of at most %d characters." % (job_name, JOB_NAME_MAX),
                path="metadata.name",
                hint="Use lower-case letters, digits and '-', starting with a letter.",
            )
        )
    seen = {}
    for index, task in enumerate(task_names):
        path = "spec.tasks[%d].name" % index
        if not task or not isinstance(task, str):
            found.append(finding("task-name-missing", "Task template %d has no name." % index, path=path))
            continue
        if task in seen:
            found.append(
                finding(
                    "task-name-duplicate",
                    "Task name %r is used by templates %d and %d." % (task, seen[task], index),
                    path=path,
                )
            )
        seen.setdefault(task, index)
        full = task_object_name(job_name, task)
        if not DNS1035.match(task):
            found.append(
                finding(
                    "task-name-invalid",
                    "Task name %r is not DNS-1035." % task,
                    path=path,
                    hint="RLark names Tasks, StatefulSets and Services after it.",
                )
            )
        if len(full) > TASK_NAME_MAX:
            found.append(
                finding(
                    "task-name-too-long",
                    "Task object name %r has %d characters; RLark's StatefulSet needs at most %d."
                    % (full, len(full), TASK_NAME_MAX),
                    path=path,
                    hint="Shorten the Job or task name.",
                )
            )
    return found


def collision_findings(job_name, task_names, other_jobs):
    """Task-name collisions such as job ``a-b``/task ``c`` against job ``a``/task ``b-c``.

    ``other_jobs`` maps existing Job names to their template names.
    """
    mine = {task_object_name(job_name, t): t for t in task_names if t}
    found = []
    for other, tasks in sorted(other_jobs.items()):
        if other == job_name:
            continue
        for t in tasks:
            name = task_object_name(other, t)
            if name in mine:
                found.append(
                    finding(
                        "task-name-collision",
                        "Task %r of this Job has the same object name as task %r of Job %r." % (name, t, other),
                        path="spec.tasks",
                        hint="Rename the Job or the task.",
                    )
                )
    return found
