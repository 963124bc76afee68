# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory keys that map RLark Nodes to inventory hosts, read from Ansible's ``hostvars``.

They are the collection's documented host variables (rlark_node_name, rlark_node_cluster, rlark_node_root), never a
role's variables; module_utils.placement takes the plain result.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import placement
from ansible_collections.rlark.ops.plugins.module_utils.query import plain

HOST_KEYS = ("rlark_node_name", "rlark_node_cluster", "rlark_node_root", "ansible_host")


def inventory_hosts(hostvars, names=None):
    """Only the inventory keys the mapping needs, as plain data (hostvars is lazy and large).

    ``names`` limits the hosts read (every inventory host when None): each ``hostvars[host]`` puts
    together all of that host's variables.
    """
    out = {}
    for host in list(hostvars or {}) if names is None else [h for h in names if h in hostvars]:
        hv = hostvars[host]
        out[str(host)] = {k: plain(hv.get(k)) for k in HOST_KEYS if hv.get(k) is not None}
    return out


def node_host(node, hostvars, groups, hosts=None):
    """The inventory host of one RLark Node (module_utils.placement decides), or None.

    ``hosts``: the only hosts that may be the Node's (every host when None; group rlark_nodes is always read).
    """
    groups = plain(dict(groups or {}))
    names = None if hosts is None else sorted(set(plain(hosts)) | set(groups.get("rlark_nodes") or []))
    return placement.host_for_node(plain(node), inventory_hosts(hostvars, names), groups)
