# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_ckpt_wait_options: the options of one checkpoint wait for a located checkpoint,
put together by module_utils/checkpoint/wait_args.py.

Wiring only, on the controller (no module is sent, nothing is read or written): the checkpoint_gate role's inputs
become the rlark_ckpt_wait options it passes on (RV(decision)); bad input fails the task with one sentence.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.wait_args import wait_args
from ansible_collections.rlark.ops.plugins.module_utils.wait_options import wait_spec
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload
from ansible_collections.rlark.ops.plugins.plugin_utils.decision_action import DecisionAction

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()

# Raw like the role's variables (a YAML ``off`` is false, a step is a number or 'latest'): wait_args reads them.
SPEC = dict(
    wait_spec(0, 2, after_step=-1, timeout_type="raw", sleep_type="raw"),
    location=dict(type="dict", required=True),
    node_root=dict(type="raw", default=""),
    step=dict(type="raw", default="latest"),
    newest_complete=dict(type="bool", default=False),
    integrity=dict(type="raw", default="off"),
    integrity_manifest=dict(type="raw"),
    options=dict(type="raw"),
    integrity_store=dict(type="raw", default="file"),
    backup=dict(type="raw"),
)


class ActionModule(DecisionAction):
    SPEC = SPEC

    def decide(self, options, check_mode):
        return wait_args(**options)

    def describe(self, options, exc):
        return str(exc)
