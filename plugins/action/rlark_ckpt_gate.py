# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_ckpt_gate: on a local connection the gate runs in the worker process.

A one-task play then pays one walk of the newest step, not a module run (``in_worker.py`` says when;
elsewhere the module runs as usual). It does not preload the collection's filters: the gate uses none.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate_task import gate_task
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.options import argument_spec
from ansible_collections.rlark.ops.plugins.plugin_utils.in_worker import InWorkerAction


class ActionModule(InWorkerAction):
    RULES = dict(mutually_exclusive=[("path", "s3")], required_one_of=[("path", "s3")])

    def argument_spec(self):
        return argument_spec()

    def run_here(self, params, log):
        return gate_task(params, check_mode=self._play_context.check_mode)
