# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_ckpt_wait: poll the checkpoint gate with progress lines
(plugin_utils/checkpoint_wait.py); the gate decides, unchanged."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.rlark.ops.plugins.plugin_utils.checkpoint_wait import checkpoint_wait

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        host = task_vars.get("inventory_hostname", "")

        def progress(line):
            display.display("%s: %s" % (host, line), stderr=True)

        result.update(checkpoint_wait(self, self._task.args, task_vars, progress))
        return result
