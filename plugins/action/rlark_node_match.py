# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_node_match: prove the selectors on the controller, no module run.

The proof only reads the API, so on a local connection it runs in the controller's worker process;
on any other connection, or with a task ``environment``, the module runs (``controller_run.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.module_options import NODE_MATCH_RULES, NODE_MATCH_SPEC
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import run_core
from ansible_collections.rlark.ops.plugins.module_utils.nodes import node_match, node_match_timeout
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_run import ControllerRunAction


class ActionModule(ControllerRunAction):
    OPTIONS = NODE_MATCH_SPEC
    RULES = NODE_MATCH_RULES

    def run_here(self, params, log):
        return run_core(params, node_match, node_match_timeout(params), log=log)
