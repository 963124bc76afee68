# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_record: write a redacted record on the controller, no module run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible_collections.rlark.ops.plugins.module_utils.log_records import move_exports
from ansible_collections.rlark.ops.plugins.module_utils.query import plain
from ansible_collections.rlark.ops.plugins.module_utils.records import (
    acting_identity,
    file_mode,
    new_run_id,
    write_record,
)
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()

ARGUMENT_SPEC = {
    "records_dir": {"type": "path", "required": True},
    "job": {"type": "str", "required": True},
    "kind": {"type": "str", "required": True},
    "data": {"type": "raw", "required": True},
    "files": {"type": "dict", "default": {}},
    "log_exports": {"type": "list", "elements": "dict", "default": []},
    "run_id": {"type": "str"},
    "stamp": {"type": "str"},
    "outcome": {"type": "str"},
    "mode": {"type": "raw"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        task_vars = task_vars or {}
        # One id per playbook run (rlark_run_id, set at the start of each playbook) groups its records.
        run_id = args.get("run_id") or self._templar.template(task_vars.get("rlark_run_id") or "") or args.get("stamp")
        run_id = run_id or new_run_id(args["kind"])
        # Records are audit output on the controller, not managed state: never "changed", never in check mode.
        result["changed"] = False
        if self._task.check_mode:
            result.update(skipped_write=True, path=None, run_id=run_id, msg="check mode: no record written")
            return result
        try:
            mode = file_mode(args.get("mode") or self._templar.template(task_vars.get("rlark_records_mode") or ""))
        except ValueError as exc:
            result.update(failed=True, msg="rlark_records_mode: %s" % exc)
            return result
        identity = acting_identity(task_vars.get("rlark_api_user"), task_vars.get("rlark_api_identity"))
        options = {"mode": mode, "identity": identity}
        try:
            path = write_record(
                args["records_dir"], args["job"], args["kind"], plain(args["data"]), run_id,
                outcome=args.get("outcome"), **options
            )  # fmt: skip
            extra = [
                write_record(args["records_dir"], args["job"], name, {"text": plain(content)}, run_id, **options)
                for name, content in sorted((args.get("files") or {}).items())
            ]
            extra += move_exports(args["records_dir"], args["job"], run_id, plain(args["log_exports"]), mode)
        except (OSError, ValueError) as exc:
            result.update(
                failed=True,
                msg="Could not write the %s record under %s (rlark_records_dir): %s"
                % (args["kind"], args["records_dir"], exc),
            )
            return result
        directory = path.rsplit("/", 1)[0]
        result.update(path=path, files=extra, run_id=run_id, stamp=run_id, directory=directory)
        return result
