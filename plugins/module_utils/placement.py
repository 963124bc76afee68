# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a Job's hostPath volumes must exist: RLark Node names -> inventory hosts -> paths to check.

The inventory maps a Node to the host that holds its filesystem with the host variable
``rlark_node_name`` (optionally ``rlark_node_cluster`` when a name exists in two clusters), or by
putting the host in group ``rlark_nodes`` under the Node's name or one of its addresses.
``rlark_node_root`` prefixes every path on that host (the sandbox keeps each node's filesystem in
``.sandbox/nodes/<node>``). A Node without a host is a finding: skipping it would hide exactly the
node on which a path is missing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from shlex import quote as sh_quote
except ImportError:  # pragma: no cover
    sh_quote = None

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.findings import finding

MARKER = "RLARK_HOSTPATH"


def _node_ref(node):
    """(name, cluster, addresses) of a Node given as a name, a proof match or a Node CR."""
    if isinstance(node, str):
        return node, None, []
    meta = node.get("metadata") or {}
    name = node.get("name") or meta.get("name")
    ids = [node.get("cluster"), node.get("namespace"), meta.get("namespace")]
    # A cluster is named by its id (a100) or its namespace (rlark-a100): accept both spellings.
    cluster = set(i for i in ids if i) | set("rlark-" + i for i in ids if i and not i.startswith("rlark-"))
    addresses = [a.get("address") if isinstance(a, dict) else a for a in node.get("addresses") or []]
    addresses += [a.get("address") for a in (node.get("status") or {}).get("addresses") or [] if isinstance(a, dict)]
    return name, cluster, [a for a in addresses if a]


def host_for_node(node, hostvars, groups):
    """The inventory host of one Node, or None."""
    name, cluster, addresses = _node_ref(node)
    hostvars = hostvars or {}
    for host in sorted(hostvars):
        hv = hostvars[host] or {}
        if hv.get("rlark_node_name") != name:
            continue
        want_cluster = hv.get("rlark_node_cluster")
        if want_cluster and cluster and want_cluster not in cluster:
            continue
        return host
    wanted = set([name] + list(addresses))
    for host in (groups or {}).get("rlark_nodes", []):
        hv = hostvars.get(host) or {}
        if host in wanted or hv.get("ansible_host") in wanted:
            return host
    return None


def matched_nodes_by_task(proof):
    """``{task name: [match, ...]}`` from a node_match proof (list or dict of tasks)."""
    tasks = (proof or {}).get("tasks") or []
    if isinstance(tasks, dict):
        tasks = [dict(v, name=v.get("name", k)) for k, v in tasks.items()]
    out = {}
    for task in tasks:
        matches = task.get("matches") or task.get("nodes") or []
        out[task.get("name") or task.get("task")] = list(matches)
    return out


def hostpath_volumes(job):
    """Every hostPath volume of a Job: ``[{task, volume, path, writable}]`` (writable = any rw mount)."""
    out = []
    for task in jobspec.tasks(job):
        mounts = {}
        for container in jobspec.containers(task, init=True):
            for m in container.get("volumeMounts") or []:
                mounts.setdefault(m.get("name"), []).append(not m.get("readOnly", False))
        for vol in jobspec.volumes(task):
            hp = vol.get("hostPath")
            if not hp:
                continue
            out.append(
                {
                    "task": task.get("name"),
                    "volume": vol.get("name"),
                    "path": hp.get("path"),
                    "writable": any(mounts.get(vol.get("name"), [])),
                }
            )
    return out


def hostpath_plan(job, proof, hostvars, groups):
    """Per inventory host, the paths to stat; plus findings for Nodes without a host.

    Returns ``{"hosts": [{host, node, root, checks: [...], script}], "findings": [...]}``.
    """
    volumes = hostpath_volumes(job)
    by_task = matched_nodes_by_task(proof)
    plan = {}
    found = []
    for vol in volumes:
        for node in by_task.get(vol["task"], []):
            name = _node_ref(node)[0]
            host = host_for_node(node, hostvars, groups)
            if host is None:
                found.append(
                    finding(
                        "hostpath-node-unmapped",
                        "Node %s (task %s) has no inventory host, so hostPath %s cannot be checked on it."
                        % (name, vol["task"], vol["path"]),
                        path="spec.tasks[%s].volumes[%s]" % (vol["task"], vol["volume"]),
                        hint="Add a host with rlark_node_name: %s (or put it in group rlark_nodes)." % name,
                    )
                )
                continue
            entry = plan.setdefault(
                host,
                {"host": host, "node": name, "root": ((hostvars or {}).get(host) or {}).get("rlark_node_root") or ""},
            )
            entry.setdefault("checks", [])
            check = dict(vol, node=name, full_path=entry["root"].rstrip("/") + vol["path"])
            if check not in entry["checks"]:
                entry["checks"].append(check)
    hosts = []
    for host in sorted(plan):
        entry = plan[host]
        entry["script"] = stat_script(entry["checks"])
        hosts.append(entry)
    # Findings are de-duplicated: one Node without a host is named once per path.
    unique = []
    for f in found:
        if f not in unique:
            unique.append(f)
    return {"hosts": hosts, "findings": unique, "volumes": volumes}


def stat_script(checks):
    """A POSIX sh script (for ``raw``: no Python needed on the node) printing one line per check."""
    lines = []
    for index, check in enumerate(checks):
        p = sh_quote(check["full_path"])
        lines.append(
            "e=0;d=0;w=0;[ -e %s ]&&e=1;[ -d %s ]&&d=1;[ -w %s ]&&w=1;echo %s %d $e $d $w" % (p, p, p, MARKER, index)
        )
    return "\n".join(lines) or "true"


def hostpath_results(plan, outputs):
    """Turn each host's ``raw`` output into per-check results and findings.

    ``outputs`` maps host -> ``{"stdout": ..., "rc": ..., "unreachable": bool, "msg": ...}``.
    """
    results = []
    found = list(plan.get("findings") or [])
    for entry in plan.get("hosts") or []:
        out = (outputs or {}).get(entry["host"]) or {}
        seen = {}
        for line in (out.get("stdout") or "").splitlines():
            parts = line.split()
            if len(parts) == 5 and parts[0] == MARKER:
                seen[int(parts[1])] = tuple(p == "1" for p in parts[2:])
        for index, check in enumerate(entry["checks"]):
            where = "spec.tasks[%s].volumes[%s]" % (check["task"], check["volume"])
            state = seen.get(index)
            result = dict(check, host=entry["host"], exists=None, directory=None, writable_ok=None)
            if state is None:
                found.append(
                    finding(
                        "hostpath-node-unreachable",
                        "Could not stat %s on node %s (host %s): %s"
                        % (check["path"], entry["node"], entry["host"], out.get("msg") or "no result"),
                        path=where,
                        hint="Make the host reachable, then run again.",
                    )
                )
                results.append(result)
                continue
            exists, directory, writable = state
            result.update(exists=exists, directory=directory, writable_ok=writable or not check["writable"])
            results.append(result)
            if not exists:
                found.append(
                    finding(
                        "hostpath-missing",
                        "hostPath %s does not exist on node %s." % (check["path"], entry["node"]),
                        path=where,
                        hint="Ask the node's admin to create it (with the approved owner and cleanup plan).",
                    )
                )
            elif not directory:
                found.append(
                    finding(
                        "hostpath-not-directory",
                        "hostPath %s on node %s is not a directory." % (check["path"], entry["node"]),
                        path=where,
                    )
                )
            elif check["writable"] and not writable:
                found.append(
                    finding(
                        "hostpath-not-writable",
                        "hostPath %s on node %s is mounted read-write but is not writable."
                        % (check["path"], entry["node"]),
                        path=where,
                        hint="Fix its permissions or mount it readOnly.",
                    )
                )
    return {"results": results, "findings": found}


__all__ = [
    "MARKER",
    "host_for_node",
    "hostpath_plan",
    "hostpath_results",
    "hostpath_volumes",
    "matched_nodes_by_task",
    "stat_script",
]
