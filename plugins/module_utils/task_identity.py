# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Task is identified by namespace AND name.

RLark's controller resolves each Task's namespace on every reconcile from an unordered Node list
(rlark-platform.md section 2a): a nodeSelector matching Nodes in two clusters can leave one Task of the
same name in EACH namespace, and a selector that matches nothing (or whose first comma value carries
whitespace) puts the Task in ``default``, where no agent runs it. Readers key Tasks and their Pod CRs
by ``(namespace, name)`` and report both cases at once instead of waiting for a phase that never comes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.findings import finding
from ansible_collections.rlark.ops.plugins.module_utils.naming import task_object_name

DEFAULT_NAMESPACE = "default"


def task_key(task):
    meta = task.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name")


def pods_of(task, pods):
    """The Pod CRs of one Task: its namespace and its name (label rlark.io/task-name)."""
    namespace, name = task_key(task)
    return [
        p for p in pods if (p.get("metadata") or {}).get("namespace") == namespace and jobspec.pod_task_name(p) == name
    ]


def _template_paths(job):
    meta_name = (job.get("metadata") or {}).get("name")
    paths = {}
    for index, tmpl in enumerate((job.get("spec") or {}).get("tasks") or []):
        paths.setdefault(task_object_name(meta_name, tmpl.get("name")), "spec.tasks[%d].nodeSelector" % index)
    return paths


def namespaces_by_name(tasks):
    out = {}
    for task in tasks:
        namespace, name = task_key(task)
        if namespace not in out.setdefault(name, []):
            out[name].append(namespace)
    return {name: sorted(spaces) for name, spaces in out.items()}


def duplicate_findings(job, tasks):
    """A Task name in two or more namespaces: RLark resolved the selector to more than one cluster."""
    paths = _template_paths(job or {})
    found = []
    for name, spaces in sorted(namespaces_by_name(tasks).items()):
        if len(spaces) > 1:
            found.append(
                finding(
                    "task-duplicate-namespaces",
                    "Task %s exists in %d namespaces (%s): RLark resolved its nodeSelector to more than one "
                    "cluster, so at most one copy is the real run and a stop or edit may reach only some."
                    % (name, len(spaces), ", ".join(spaces)),
                    path=paths.get(name, "spec.tasks"),
                    hint="Delete the Job and create it again with a selector whose first values match Nodes of "
                    "exactly one cluster (prove it with rlark.ops.rlark_node_match).",
                )
            )
    return found


def default_namespace_findings(job, tasks):
    """A Task in ``default``: its selector matched no Node when RLark resolved it; nothing will run it."""
    paths = _template_paths(job or {})
    found = []
    for name, spaces in sorted(namespaces_by_name(tasks).items()):
        if DEFAULT_NAMESPACE in spaces:
            found.append(
                finding(
                    "task-default-namespace",
                    "Task %s is in namespace 'default': its nodeSelector matched no Node when RLark resolved it "
                    "(or a value carries whitespace), and no agent runs Tasks there, so it never starts." % name,
                    path=paths.get(name, "spec.tasks"),
                    hint="Fix the nodeSelector (prove it with rlark.ops.rlark_node_match), then delete the Job "
                    "and create it again.",
                )
            )
    return found


def placement_findings(job, tasks):
    return duplicate_findings(job, tasks) + default_namespace_findings(job, tasks)
