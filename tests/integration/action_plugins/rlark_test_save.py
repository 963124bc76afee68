# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action for the integration-test helpers: write a registered result to a file on the controller.

``ansible.builtin.copy`` did this before and cost a stat and a copy module process (about 0.75 CPU-s) on
every one-module play; this writes in the worker that runs the task (tests/integration/job_test_support.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dest, content = self._task.args["dest"], self._task.args["content"]
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(content)
        result["changed"] = True
        return result
