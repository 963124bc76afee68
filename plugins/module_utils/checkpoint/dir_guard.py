# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who writes where: a new Job's planned checkpoint location, the directory-reuse guard and the
original-tree proof of a resume, as findings.

RLinf never refuses an output directory that already holds ``global_step_*`` (it overwrites step by
step, and ``auto`` resume picks up whatever is newest), so a run must start in a directory no other
run wrote, and a resume must leave the original's tree exactly as it was.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.location import head_template, locate
from ansible_collections.rlark.ops.plugins.module_utils.findings import WARNING, finding
from ansible_collections.rlark.ops.plugins.module_utils.placement import matched_nodes_by_task

ALLOW_VAR = "rlark_allow_checkpoint_dir_reuse"
LISTED = 5


def planned_location(job, manifest=None, proof=None, object_storage=None, node=None):
    """Where a Job that does not run yet will write: :func:`location.locate` with the head node from
    ``node`` or the selector proof (the head task matches exactly one node)."""
    out = locate({"job": job or {}}, manifest, None, object_storage)
    if out["kind"] == "hostPath" and not out["node"]:
        head = head_template(job).get("name")
        matches = matched_nodes_by_task(proof).get(head) or []
        first = matches[0] if matches else None
        out["node"] = node or (first if isinstance(first, str) else (first or {}).get("name"))
        out["ok"] = bool(out["node"])
        out["reason"] = "" if out["node"] else "no proven head node holds hostPath %s" % out["host_path"]
    return out


def _where(location):
    if location.get("kind") == "s3":
        s3 = location.get("s3") or {}
        return "s3://%s/%s" % (s3.get("bucket"), s3.get("prefix") or "")
    return "node %s:%s" % (location.get("node"), location.get("host_path"))


def reuse_findings(job_name, steps, location, allowed=False):
    """``checkpoint-dir-reuse`` when the new Job's checkpoint directory already holds ``global_step_*``.

    An error unless ``allowed`` (the recorded acknowledgement), then a warning.
    """
    if not steps:
        return []
    shown = ", ".join(steps[:LISTED]) + (" and %d more" % (len(steps) - LISTED) if len(steps) > LISTED else "")
    return [
        finding(
            "checkpoint-dir-reuse",
            "Job %s would write its checkpoints to %s (%s), which already holds %s written by another run: "
            "RLinf overwrites same-numbered steps there and mixes two runs in one directory."
            % (job_name, location.get("container_root"), _where(location), shown),
            severity=WARNING if allowed else "error",
            path="spec.tasks[head].runScript",
            hint="Give the run its own runner.logger.experiment_name (or runner.experiment_name), or set %s=true "
            "to acknowledge writing there (recorded)." % ALLOW_VAR,
        )
    ]


def reuse_report(job_name, tree, location, allowed=False):
    """The guard's report on a new Job's checkpoint directory: ``{job, checked, location, steps, acknowledged,
    findings}``. ``tree`` is the directory's listing (``rlark_ckpt_tree``; no ``steps`` when it was not listed)."""
    tree = tree or {}
    steps = list(tree.get("steps") or [])
    return {
        "job": job_name,
        "checked": "steps" in tree,
        "location": location or {},
        "steps": steps,
        "acknowledged": bool(allowed),
        "findings": reuse_findings(job_name, steps, location or {}, allowed),
    }


def tree_findings(diff, location, limit=LISTED):
    """``resume-original-changed`` when the original run's checkpoint tree is not as it was snapshotted."""
    if diff.get("same"):
        return []
    parts = []
    for what in ("changed", "vanished", "appeared"):
        items = diff.get(what) or []
        if items:
            more = " and %d more" % (len(items) - limit) if len(items) > limit else ""
            parts.append("%s: %s%s" % (what, ", ".join(items[:limit]), more))
    return [
        finding(
            "resume-original-changed",
            "The original run's checkpoints at %s are not as they were before the new Job started (%s)."
            % (_where(location), "; ".join(parts)),
            path="original checkpoints",
            hint="The new Job was stopped; find what else writes there before resuming again. "
            "Nothing was deleted or restored.",
        )
    ]


__all__ = ["ALLOW_VAR", "planned_location", "reuse_findings", "reuse_report", "tree_findings"]
