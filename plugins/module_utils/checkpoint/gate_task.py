# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One rlark_ckpt_gate task on validated parameters: open the source, judge (waiting when asked), apply
integrity, and say whether the task fails. The module and its action plugin (which runs it in the
controller's worker on a local connection) both return :func:`gate_task`'s result unchanged.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import incomplete_message, run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.options import GATE_OPTIONS
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.sources import source_from_params
from ansible_collections.rlark.ops.plugins.module_utils.s3_options import boto3_missing

BOTO3_MISSING = boto3_missing("rlark.ops.rlark_ckpt_gate")


class TaskFailed(Exception):
    """The task ends failed with ``result`` (its ``msg`` says why)."""

    def __init__(self, msg, **result):
        super().__init__(msg)
        self.result = dict(result, msg=msg)


def option_problem(params):
    """The message for an option value the argument spec cannot reject on its own, else ''."""
    if params["hash_workers"] is not None and params["hash_workers"] < 1:
        return "hash_workers must be at least 1, got %d" % params["hash_workers"]
    if params["wait_timeout"] < 0 or params["wait_sleep"] <= 0:
        return "wait_timeout must not be negative and wait_sleep must be above 0"
    return ""


def open_source(params):
    if not params["path"]:
        from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.s3 import import_boto3

        try:
            import_boto3()
        except ImportError as exc:
            raise TaskFailed(BOTO3_MISSING, exception=str(exc)) from exc
    return source_from_params(params)


def judge(params, source, options):
    """(gate result, why the wait condition does not hold or ''), waiting inside this run when asked."""
    if not params["wait_timeout"] and params["after_step"] is None:
        return run_gate(source, options), ""
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import normalize_options
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.waiting import (
        not_ready_reason,
        satisfied,
        wait_for_gate,
    )

    normalize_options(options)  # a wrong option fails now, not after the whole wait

    def once():
        try:
            return run_gate(source, options)
        except layouts.LayoutError:
            raise
        except layouts.GateError as exc:  # nothing saved yet: keep waiting
            return {"msg": str(exc)}

    after = -1 if params["after_step"] is None else params["after_step"]
    wait = dict(newer_than=after, newest_complete=params["newest_complete"])
    waited = wait_for_gate(once, timeout=params["wait_timeout"], interval=params["wait_sleep"], **wait)
    if "complete" not in waited:  # never got a gate result: nothing saved under the root yet
        why = "%s %s" % (waited.get("wait_msg", ""), waited.pop("msg", ""))
        raise TaskFailed(why.strip(), changed=False, **waited)
    done, state = satisfied(waited, **wait)
    if done:
        return waited, ""
    if waited["timed_out"]:
        return waited, not_ready_reason(waited, **wait)
    return waited, "Waited for %s, not there yet (wait_timeout=%d): %s" % (
        waited["wait_for"],
        params["wait_timeout"],
        state,
    )


def apply_integrity(params, source, result, check_mode):
    """Write or verify the integrity manifest of the chosen step; True when a manifest was written."""
    if params["integrity"] == "off":
        return False
    # hashlib and the thread pool are imported only when asked for: the plain gate stays light to start
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import integrity

    return integrity.apply(
        source,
        result,
        params["integrity"],
        path=params["integrity_path"],
        manifest=params["integrity_manifest"],
        workers=params["hash_workers"],
        check_mode=check_mode,
        store=params["integrity_store"],
    )


def apply_backup(params, source, result, check_mode, progress=None):
    """Make (when asked) and judge the backup of the chosen step (checkpoint/backup.py); True when files were copied."""
    if not params["backup"]:
        return False
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup

    return backup.apply(source, result, params["backup"], params["integrity_manifest"], check_mode, progress)


def gate_task(params, check_mode=False):
    """The task result for validated ``params``: ``failed`` and ``msg`` set when the task fails."""
    problem = option_problem(params)
    if problem:
        return {"failed": True, "changed": False, "msg": problem}
    try:
        source = open_source(params)
        result, not_ready = judge(params, source, {name: params[name] for name in GATE_OPTIONS})
        changed = apply_integrity(params, source, result, check_mode)
        changed = apply_backup(params, source, result, check_mode) or changed
    except TaskFailed as exc:
        return dict(exc.result, failed=True)
    except layouts.GateError as exc:
        return {"failed": True, "changed": False, "msg": str(exc)}
    except OSError as exc:
        return {"failed": True, "changed": False, "msg": "integrity manifest: %s" % exc}
    result = dict(result, changed=changed)
    if params["fail_when_incomplete"] and (not_ready or not result["complete"]):
        result.update(failed=True, msg=not_ready or incomplete_message(result))
    return result


__all__ = ["gate_task", "option_problem"]
