# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stdout callback for the integration-test helpers: all task results as one JSON document.

ansible-core 2.19 no longer ships a json callback (it lives in ansible.posix, not installed here).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: rlark_test_json
type: stdout
short_description: Task results as one JSON document (integration-test helper)
description:
  - At the end of the run, prints one line of JSON with the keys C(tasks) (task, host, status, result) and C(stats).
  - Used by tests/integration/helpers.py only; not part of the collection.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "rlark_test_json"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tasks = []

    def _record(self, result, status):
        data = getattr(result, "result", None)
        if data is None:  # ansible-core < 2.19
            data = result._result
        clean = json.loads(self._dump_results(data, keep_invocation=True))
        # _dump_results hides what a screen callback shows elsewhere; tests need it in the result.
        hidden = {k: data[k] for k in ("diff", "exception", "warnings", "deprecations") if k in data}
        clean.update(json.loads(json.dumps(hidden, default=str)))
        if status in ("failed", "unreachable", "skipped"):
            clean[status] = True
        self.tasks.append(
            {"task": result.task_name, "host": result._host.get_name(), "status": status, "result": clean}
        )

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "ignored" if ignore_errors else "failed")

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._record(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        summary = {host: stats.summarize(host) for host in sorted(stats.processed)}
        self._display.display(json.dumps({"tasks": self.tasks, "stats": summary}, sort_keys=True))
