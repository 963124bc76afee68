# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A flat view of an rlark_ckpt_gate result for the guarded-stop and resume decisions.

A guarded stop needs the *newest* step complete (a partial newest step means a save is running or
was killed), while a resume may take the newest complete step; both read it from here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import step_names


def _reasons(result, step):
    for entry in result.get("steps") or []:
        if entry.get("step") == step:
            return [str(r) for r in entry.get("reasons") or []]
    return []


def _findings(result):
    """The gate's findings."""
    return result.get("findings") or []


def summarize(result):
    """``{ran, complete, step, newest_step, newest_complete, latest_complete_step, reason, ...}``."""
    result = result or {}
    if not result or result.get("skipped") or "complete" not in result:
        reason = result.get("msg") or "the checkpoint gate did not run"
        return {
            "ran": False,
            "complete": False,
            "step": None,
            "newest_step": None,
            "newest_complete": False,
            "latest_complete_step": None,
            "reason": reason,
        }
    newest = result.get("newest_step")
    latest_complete = result.get("latest_complete_step")
    complete = bool(result.get("complete"))
    newest_complete = newest is not None and newest == latest_complete
    reason = ""
    if newest is None:
        reason = "no global_step_* checkpoint found under %s" % (result.get("checkpoint") or "the checkpoint root")
    elif not newest_complete:
        why = _reasons(result, newest) or [p.get("message", "") for p in _findings(result)]
        reason = "the newest checkpoint %s is incomplete (a save is running or was cut off): %s" % (
            step_names.step_name(newest),
            "; ".join(r for r in why if r) or "see the gate result",
        )
    elif not complete:
        reason = "; ".join(p.get("message", "") for p in _findings(result)) or "incomplete"
    return {
        "ran": True,
        "complete": complete,
        "step": result.get("step"),
        "checkpoint": result.get("checkpoint"),
        "newest_step": newest,
        "newest_complete": newest_complete,
        "latest_complete_step": latest_complete,
        "runner": result.get("runner"),
        "backend": result.get("backend"),
        "world_size": result.get("world_size"),
        "rule": result.get("rule"),
        "files": result.get("files"),
        "bytes": result.get("bytes"),
        "newest_mtime": result.get("newest_mtime"),
        "reason": reason,
    }


__all__ = ["summarize"]
