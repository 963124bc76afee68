# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Aggregate callback for the benches: counts Python-module task runs (retries and loop items included).

A task whose action has no action plugin runs a Python module (through the ``normal`` action);
action-only tasks (set_fact, debug, assert, add_host, include_*, raw, rlark.ops.rlark_record)
have their own action plugin and send nothing to a host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import action_loader

DOCUMENTATION = r"""
name: rlark_module_count
type: aggregate
short_description: Count Python-module task runs
description:
  - Writes a JSON object with C(module_runs) and C(by_action) to the file named by E(RLARK_MODULE_COUNT_FILE).
requirements:
  - enable in callbacks_enabled
"""


# Task keywords that run on the controller and have no action plugin for action_loader to find.
CONTROLLER_KEYWORDS = frozenset(("include_tasks", "include_role", "import_tasks", "import_role", "meta"))


def is_controller_keyword(action):
    prefix, short = action.rpartition(".")[::2]
    return short in CONTROLLER_KEYWORDS and prefix in ("", "ansible.builtin", "ansible.legacy")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "rlark_module_count"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.by_action = {}
        self.kinds = {}
        self.in_process = {}

    def _is_module(self, task):
        action = getattr(task, "resolved_action", None) or task.action
        if action not in self.kinds:
            self.kinds[action] = not is_controller_keyword(action) and not action_loader.has_plugin(
                action, collection_list=task.collections
            )
        return self.kinds[action]

    def _count(self, result, *args, **kwargs):
        data = getattr(result, "result", None) or getattr(result, "_result", {})
        if isinstance(data, dict) and (data.get("skipped") or "results" in data):
            return  # a skip ran nothing; a loop's summary repeats its items
        action = getattr(result._task, "resolved_action", None) or result._task.action
        if self._is_module(result._task):
            self.by_action[action] = self.by_action.get(action, 0) + 1
        elif action.startswith("rlark.ops."):
            # The collection's own action plugins (rlark_node_match in-process, rlark_record): no module run.
            self.in_process[action] = self.in_process.get(action, 0) + 1

    v2_runner_on_ok = v2_runner_on_failed = v2_runner_retry = _count
    v2_runner_item_on_ok = v2_runner_item_on_failed = _count

    def v2_playbook_on_stats(self, stats):
        target = os.environ.get("RLARK_MODULE_COUNT_FILE")
        if target:
            with open(target, "w") as fh:
                json.dump(
                    {
                        "module_runs": sum(self.by_action.values()),
                        "by_action": self.by_action,
                        "in_process_actions": self.in_process,
                    },
                    fh,
                )
