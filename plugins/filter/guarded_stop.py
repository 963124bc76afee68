# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the guarded stop's records.

The guarded stop's decisions (the selection, a refusal's outcome, the run's summary) are made by
module_utils/guarded_stop and asked through the rlark_guarded_stop and rlark_guarded_stop_decision actions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def log_record_name(item):
    """``{key: pod, value: text}`` -> ``{key: "log-<pod>", value: text}`` for rlark_record ``files``."""
    return {"key": "log-%s" % item["key"], "value": item["value"]}


class FilterModule:
    def filters(self):
        return {
            "log_record_name": log_record_name,
        }
