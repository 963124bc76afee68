# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checkpoint gate's wait for an action plugin: poll the gate on the action's target until the wanted
checkpoint is complete (rlark_ckpt_wait, and rlark_guarded_stop which then stops in the same call).

On a local connection (the controller, or a node host reached with the local connection) the gate
runs in the worker process, so a poll costs one directory walk instead of a module run; elsewhere
every poll runs rlark.ops.rlark_ckpt_gate on the target. Either way the gate decides, unchanged.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import gate_task, layouts
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.options import GATE_OPTIONS, WAIT_OPTIONS
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.options import argument_spec as gate_spec
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.sources import source_from_params
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.waiting import wait_for_gate
from ansible_collections.rlark.ops.plugins.module_utils.wait_options import all_names, wait_spec
from ansible_collections.rlark.ops.plugins.plugin_utils.in_worker import runs_in_worker

# The one wait vocabulary (module_utils/wait_options); newer_than, timeout and interval are the older names.
WAIT_SPEC = dict(
    wait_spec(0, 1.0, after_step=-1, older=("newer_than", "timeout", "interval")),
    newest_complete=dict(type="bool", default=True),
)
WAIT_NAMES = all_names(WAIT_SPEC)
# Applied once to the step the wait ended on, never on every poll.
INTEGRITY_ARGS = ("integrity", "integrity_path", "integrity_store", "integrity_manifest", "hash_workers", "backup")


def checkpoint_wait(action, args, task_vars, progress=None):
    """Validate ``args`` (the options of rlark_ckpt_wait) and wait on the gate for ``action``'s target host.

    Shared by rlark_ckpt_wait and rlark_guarded_stop, which stops in the same call once the verdict allows it.
    Returns the last gate result plus the wait fields of ``waiting.wait_for_gate``.
    """
    spec = {k: v for k, v in gate_spec().items() if k not in WAIT_OPTIONS}  # this action waits with its own options
    spec.update(WAIT_SPEC)
    checked = ArgumentSpecValidator(
        spec, mutually_exclusive=[("path", "s3")], required_one_of=[("path", "s3")]
    ).validate(args)
    if checked.error_messages:
        raise AnsibleActionFail("Invalid checkpoint wait options: %s" % "; ".join(checked.error_messages))
    params = checked.validated_parameters
    gate_args = {k: v for k, v in args.items() if k not in WAIT_NAMES and k not in INTEGRITY_ARGS}
    gate_args["fail_when_incomplete"] = False
    in_process = runs_in_worker(action)

    def judge():
        if not in_process:
            return action._execute_module(
                module_name="rlark.ops.rlark_ckpt_gate", module_args=gate_args, task_vars=task_vars
            )
        try:
            return run_gate(source_from_params(params), {name: params[name] for name in GATE_OPTIONS})
        except (layouts.GateError, ImportError) as exc:
            return {"failed": True, "msg": str(exc)}

    waited = wait_for_gate(
        judge,
        newer_than=params["after_step"],
        newest_complete=params["newest_complete"],
        timeout=params["wait_timeout"],
        interval=params["wait_sleep"],
        progress=progress if params["wait_timeout"] > 0 else None,
    )
    waited.pop("invocation", None)
    waited["changed"] = False
    once = params["integrity"] != "off" or params["backup"]
    if once and waited.get("complete") and not waited.get("failed"):
        waited["changed"] = _integrity(action, waited, params, gate_args, in_process, task_vars, progress)
    return waited


def _integrity(action, waited, params, gate_args, in_process, task_vars, progress=None):
    """Write or verify the manifest of the step the wait settled on, then make and judge its backup
    (checkpoint/backup.py); True when a manifest was written or backup files were copied."""
    if params["hash_workers"] is not None and params["hash_workers"] < 1:
        waited.update(failed=True, msg="hash_workers must be at least 1, got %d" % params["hash_workers"])
        return False
    options = {name: params[name] for name in INTEGRITY_ARGS}
    if not in_process:
        args = dict(gate_args, step=str(waited["step"]), **{k: v for k, v in options.items() if v is not None})
        again = action._execute_module(module_name="rlark.ops.rlark_ckpt_gate", module_args=args, task_vars=task_vars)
        if again.get("failed") and "complete" not in again:
            waited.update(failed=True, msg=again.get("msg", "integrity manifest failed"))
            return False
        for key in ("complete", "findings", "integrity", "backup"):
            if key in again:
                waited[key] = again[key]
        return bool(again.get("changed"))
    check_mode = action._play_context.check_mode
    try:
        source = source_from_params(params)
        written = gate_task.apply_integrity(params, source, waited, check_mode)
    except (layouts.GateError, OSError) as exc:
        waited.update(failed=True, msg="integrity manifest: %s" % exc)
        return False
    try:
        copied = gate_task.apply_backup(params, source, waited, check_mode, progress)
    except (layouts.GateError, OSError) as exc:
        waited.update(failed=True, msg="checkpoint backup: %s" % exc)
        return written
    return written or copied


__all__ = ["checkpoint_wait"]
