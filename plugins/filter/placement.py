# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that map RLark Nodes to inventory hosts (logic in module_utils.placement).

The inventory keys they read are the collection's documented host variables (rlark_node_name,
rlark_node_cluster, rlark_node_root), never a role's variables.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import deployment_profile
from ansible_collections.rlark.ops.plugins.module_utils.query import plain
from ansible_collections.rlark.ops.plugins.plugin_utils import inventory_hosts


def node_host(node, hostvars, groups, hosts=None):
    """``hosts``: the only hosts that may be the Node's (every host when None; group rlark_nodes is always read)."""
    return inventory_hosts.node_host(node, hostvars, groups, hosts)


def expected_nodes(profile):
    """Task name -> the admin's recorded global match list, from a deployment profile (rlark_node_match's
    O(profile) reads it the same way)."""
    return deployment_profile.expected_nodes(plain(profile))


class FilterModule:
    def filters(self):
        return {
            "node_host": node_host,
            "expected_nodes": expected_nodes,
        }
