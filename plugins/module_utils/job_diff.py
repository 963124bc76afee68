# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``state: present`` compares and what ``--diff`` shows: a Job spec without noise, its changes.

The task set and the nodeSelectors are what RLark cannot change on an existing Job
(``structural_findings``); everything else becomes a merge patch that leaves ``spec.stopped`` alone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.findings import finding
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact

# Server-owned metadata that never counts as a difference.
VOLATILE_METADATA = ("resourceVersion", "generation", "managedFields", "uid", "creationTimestamp", "selfLink")


def prune_empty(value):
    """Drop None values recursively: the server does not store them, so they are no difference."""
    if isinstance(value, dict):
        return {k: prune_empty(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [prune_empty(v) for v in value]
    return value


def normalised_spec(spec):
    """The spec as compared for ``state: present``: None values dropped, ``stopped`` ignored."""
    spec = prune_empty(copy.deepcopy(spec or {}))
    spec.pop("stopped", None)
    return spec


def diff_view(job):
    """A Job as shown in a diff: without server bookkeeping that changes on every write."""
    if not job:
        return {}
    view = copy.deepcopy(job)
    meta = view.get("metadata") or {}
    for key in VOLATILE_METADATA:
        meta.pop(key, None)
    view.pop("status", None)
    return view


def make_diff(before, after):
    """What --diff prints: secrets masked (a live Job may carry env values set in the console)."""
    return {"before": redact(diff_view(before)), "after": redact(diff_view(after))}


def structural_findings(live, desired):
    """Changes RLark cannot apply to an existing Job: the task set and any nodeSelector."""
    found = []
    live_names = [t.get("name") for t in jobspec.tasks(live)]
    want_names = [t.get("name") for t in jobspec.tasks(desired)]
    if live_names != want_names:
        added = [n for n in want_names if n not in live_names]
        removed = [n for n in live_names if n not in want_names]
        found.append(
            finding(
                "job-task-set-change",
                "The task set would change (live %s, desired %s%s%s): RLark never deletes the old Tasks and "
                "their workloads, and a task missing from status.tasks freezes the Job."
                % (
                    live_names,
                    want_names,
                    "; added %s" % added if added else "",
                    "; removed %s" % removed if removed else "",
                ),
                path="spec.tasks",
                hint="Create a new Job with the new task set (copy_from), then delete the old one.",
            )
        )
        return found
    for index, (old, new) in enumerate(zip(jobspec.tasks(live), jobspec.tasks(desired))):
        if prune_empty(old.get("nodeSelector") or {}) != prune_empty(new.get("nodeSelector") or {}):
            found.append(
                finding(
                    "job-node-selector-change",
                    "The nodeSelector of task %r would change from %s to %s: RLark leaves the old cluster's "
                    "Task, StatefulSet and PVCs behind until the Job is deleted."
                    % (old.get("name"), old.get("nodeSelector") or {}, new.get("nodeSelector") or {}),
                    path="spec.tasks[%d].nodeSelector" % index,
                    hint="Migrate instead: stop, verify the checkpoint, create a new Job on the target.",
                )
            )
    return found


def spec_merge_patch(live_spec, desired_spec):
    """Merge patch turning the live spec into the desired one, leaving ``stopped`` alone."""
    live = normalised_spec(live_spec)
    want = normalised_spec(desired_spec)
    patch = {k: v for k, v in want.items() if live.get(k) != v}
    patch.update({k: None for k in live if k not in want})
    return patch


__all__ = [
    "VOLATILE_METADATA",
    "diff_view",
    "make_diff",
    "normalised_spec",
    "prune_empty",
    "spec_merge_patch",
    "structural_findings",
]
