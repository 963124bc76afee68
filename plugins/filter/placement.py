# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that map RLark Nodes to inventory hosts and plan the hostPath checks (logic in module_utils.placement).

The inventory keys they read are the collection's documented host variables (rlark_node_name,
rlark_node_cluster, rlark_node_root), never a role's variables.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import deployment_profile, placement
from ansible_collections.rlark.ops.plugins.module_utils.query import plain

HOST_KEYS = ("rlark_node_name", "rlark_node_cluster", "rlark_node_root", "ansible_host")


def _hosts(hostvars, names=None):
    """Only the inventory keys the mapping needs, as plain data (hostvars is lazy and large).

    ``names`` limits the hosts read (every inventory host when None): each ``hostvars[host]`` puts
    together all of that host's variables.
    """
    out = {}
    for host in list(hostvars or {}) if names is None else [h for h in names if h in hostvars]:
        hv = hostvars[host]
        out[str(host)] = {k: plain(hv.get(k)) for k in HOST_KEYS if hv.get(k) is not None}
    return out


def hostpath_plan(job, proof, hostvars, groups):
    return placement.hostpath_plan(plain(job), plain(proof), _hosts(hostvars), plain(dict(groups or {})))


def hostpath_results(plan, loop_results):
    """``loop_results`` is the ``results`` list of a raw task looped over ``plan.hosts``."""
    outputs = {}
    for r in loop_results or []:
        item = r.get("item") or {}
        outputs[item.get("host")] = {
            "stdout": r.get("stdout") or "",
            "rc": r.get("rc"),
            "msg": r.get("msg") or (r.get("stderr") or "").strip(),
        }
    return placement.hostpath_results(plain(plan), outputs)


def node_host(node, hostvars, groups, hosts=None):
    """``hosts``: the only hosts that may be the Node's (every host when None; group rlark_nodes is always read)."""
    groups = plain(dict(groups or {}))
    names = None if hosts is None else sorted(set(plain(hosts)) | set(groups.get("rlark_nodes") or []))
    return placement.host_for_node(plain(node), _hosts(hostvars, names), groups)


def expected_nodes(profile):
    """Task name -> the admin's recorded global match list, from a deployment profile (rlark_node_match's
    O(profile) reads it the same way)."""
    return deployment_profile.expected_nodes(plain(profile))


class FilterModule:
    def filters(self):
        return {
            "hostpath_plan": hostpath_plan,
            "hostpath_results": hostpath_results,
            "node_host": node_host,
            "expected_nodes": expected_nodes,
        }
