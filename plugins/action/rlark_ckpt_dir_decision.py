# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_ckpt_dir_decision: the checkpoint-directory guard's verdict on a new Job's
directory, made by module_utils/checkpoint/dir_guard (``reuse_report``).

Wiring only, on the controller (no module is sent, nothing is read or written): the directory's listing becomes
the guard's report with its ``checkpoint-dir-reuse`` finding.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dir_guard
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload
from ansible_collections.rlark.ops.plugins.plugin_utils.decision_action import DecisionAction

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()

SPEC = dict(
    job=dict(type="str", required=True),
    location=dict(type="dict", default={}),
    tree=dict(type="dict", default={}),
    allow_reuse=dict(type="bool", default=False),
)


class ActionModule(DecisionAction):
    SPEC = SPEC

    def decide(self, options, check_mode):
        return dir_guard.reuse_report(options["job"], options["tree"], options["location"], options["allow_reuse"])
