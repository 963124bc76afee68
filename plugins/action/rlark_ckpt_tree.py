# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_ckpt_tree: on a local connection the snapshot runs in the worker process.

The gate snapshots a tree before and after each stop and resume; a module run costs more than most listings
(``in_worker.py`` says when; elsewhere, as on a node reached over SSH, the module runs there as usual).
It does not preload the collection's filters: the snapshot uses none.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.tree_task import TREE_RULES, TREE_SPEC, tree_task
from ansible_collections.rlark.ops.plugins.plugin_utils.in_worker import InWorkerAction


class ActionModule(InWorkerAction):
    OPTIONS = TREE_SPEC
    RULES = TREE_RULES

    def run_here(self, params, log):
        return tree_task(params)
