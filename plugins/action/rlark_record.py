# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_record: write a redacted record on the controller, no module run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible_collections.rlark.ops.plugins.module_utils.query import plain
from ansible_collections.rlark.ops.plugins.module_utils.records import utc_stamp, write_record

ARGUMENT_SPEC = {
    "records_dir": {"type": "path", "required": True},
    "job": {"type": "str", "required": True},
    "kind": {"type": "str", "required": True},
    "data": {"type": "raw", "required": True},
    "files": {"type": "dict", "default": {}},
    "stamp": {"type": "str"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        stamp = args.get("stamp") or utc_stamp()
        # Records are audit output on the controller, not managed state: never "changed", never in check mode.
        result["changed"] = False
        if self._task.check_mode:
            result.update(skipped_write=True, path=None, msg="check mode: no record written")
            return result
        data = plain(args["data"])
        for attempt in range(3):
            try:
                path = write_record(args["records_dir"], args["job"], args["kind"], data, stamp)
                break
            except ValueError as exc:
                # Two runs on the same Job within one second (concurrent guarded stops): take the next second.
                if "already exists" not in str(exc) or args.get("stamp") or attempt == 2:
                    result.update(failed=True, msg="Could not write the %s record: %s" % (args["kind"], exc))
                    return result
                time.sleep(1.0)
                stamp = utc_stamp()
            except OSError as exc:
                result.update(failed=True, msg="Could not write the %s record: %s" % (args["kind"], exc))
                return result
        extra = []
        try:
            for name, content in sorted((args.get("files") or {}).items()):
                extra.append(write_record(args["records_dir"], args["job"], name, {"text": plain(content)}, stamp))
        except (OSError, ValueError) as exc:
            result.update(failed=True, msg="Could not write the %s files: %s" % (args["kind"], exc))
            return result
        result.update(path=path, files=extra, stamp=stamp, directory=path.rsplit("/", 1)[0])
        return result
