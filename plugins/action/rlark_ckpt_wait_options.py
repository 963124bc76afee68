# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_ckpt_wait_options: the options of one checkpoint wait for a located checkpoint,
put together by module_utils/checkpoint/wait_args.py.

Wiring only, on the controller (no module is sent, nothing is read or written): the checkpoint_gate role's inputs
become the rlark_ckpt_wait options it passes on (RV(decision)); bad input fails the task with one sentence. With
O(find_node_host), the inventory host of a hostPath checkpoint's Node (plugin_utils/inventory_hosts.node_host, as the
node_host filter finds it) gives the node root and is returned as RV(host); a Node without one fails the task.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.wait_args import wait_args
from ansible_collections.rlark.ops.plugins.module_utils.wait_options import wait_spec
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload
from ansible_collections.rlark.ops.plugins.plugin_utils.decision_action import DecisionAction
from ansible_collections.rlark.ops.plugins.plugin_utils.inventory_hosts import node_host

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
    find_node_host=dict(type="bool", default=False),
    node_hosts=dict(type="list", elements="str"),
)
NO_NODE_HOST = (
    "The checkpoint lies on node %s, which has no inventory host (set rlark_node_name on a host, or add it to group "
    "rlark_nodes)."
)


class ActionModule(DecisionAction):
    SPEC = SPEC

    def run(self, tmp=None, task_vars=None):
        self.host = None
        result = super().run(tmp, task_vars)
        if not result.get("failed"):
            result["host"] = self.host
        return result

    def decide(self, options, check_mode):
        find, hosts = options.pop("find_node_host"), options.pop("node_hosts")
        location = options["location"] or {}
        if find and location.get("kind") == "hostPath":
            variables = self.task_vars
            self.host = node_host(location.get("node"), variables.get("hostvars"), variables.get("groups"), hosts)
            if not self.host:
                raise ValueError(NO_NODE_HOST % location.get("node"))
            options["node_root"] = variables["hostvars"][self.host].get("rlark_node_root") or ""
        return wait_args(**options)

    def describe(self, options, exc):
        return str(exc)
