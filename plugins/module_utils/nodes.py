# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node CR reads for the selector proof: one server-side filtered list per distinct selector.

The API server filters the Node CRs of every namespace by label, so only matches travel; the
lists run in parallel on a few connections because each one costs a full scan on the server.
Kept apart from ``jobs.py`` (it borrows only the two reads of a re-proven Job) so that ``rlark_node_match``
(module or action plugin) imports only what it uses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import threading

from ansible_collections.rlark.ops.plugins.module_utils.deployment_profile import expected_nodes
from ansible_collections.rlark.ops.plugins.module_utils.findings import has_errors, render
from ansible_collections.rlark.ops.plugins.module_utils.jobs import POD_TASK_LABEL, get_job, list_pods
from ansible_collections.rlark.ops.plugins.module_utils.kube import (
    resource_path,
)
from ansible_collections.rlark.ops.plugins.module_utils.naming import task_object_name
from ansible_collections.rlark.ops.plugins.module_utils.selectors import (
    placement_label_selector,
    prove_selectors,
    selectors_from_job,
)

try:
    UTC = datetime.timezone.utc
except AttributeError:  # pragma: no cover - Python 2 is not supported
    UTC = None

NODES = resource_path("nodes")
MAX_CONNECTIONS = 4
# Terminal pods no longer count in a Node's status.used.
TERMINAL_POD_PHASES = ("Succeeded", "Failed")


def fetch_node_matches(client, label_selectors, connections=MAX_CONNECTIONS):
    """Node CRs in every namespace matching each distinct label selector.

    Returns ``({selector: [nodes in list order]}, newest list resourceVersion)``.
    """
    wanted = sorted(set(label_selectors))
    result = {}
    versions = {}
    errors = []
    lanes = [wanted[i :: max(1, connections)] for i in range(min(len(wanted), max(1, connections)))]

    def run(lane_client, lane):
        try:
            for selector in lane:
                result[selector], versions[selector] = lane_client.list(NODES, label_selector=selector)
        except Exception as exc:  # re-raised in the caller's thread below
            errors.append(exc)

    if len(lanes) <= 1:
        run(client, wanted)
    else:
        twins = [client] + [client.fork() for _lane in lanes[1:]]
        threads = [threading.Thread(target=run, args=(twin, lane)) for twin, lane in zip(twins, lanes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for twin in twins[1:]:
            client.absorb(twin)
    if errors:
        raise errors[0]
    known = [v for v in versions.values() if v]
    newest = max(known, key=lambda v: (len(v), v)) if known else None
    return result, newest


def own_usage(task_templates, pods):
    """``{(namespace, node): {resource: amount}}`` held by a Job's own non-terminal pods.

    ``task_templates`` maps a Task object name (``<job>-<task>``) to its per-worker requests; a pod
    belongs to a Task by its ``rlark.io/task-name`` label. RLark's Node ``status.used`` is the sum of
    the requests of the non-terminal pods on the node, so this is the Job's share of it.
    """
    usage = {}
    for pod in pods or []:
        meta = pod.get("metadata") or {}
        status = pod.get("status") or {}
        requests = task_templates.get((meta.get("labels") or {}).get(POD_TASK_LABEL))
        if not requests or not status.get("node") or status.get("phase") in TERMINAL_POD_PHASES:
            continue
        held = usage.setdefault((meta.get("namespace"), status["node"]), {})
        for resource, amount in requests.items():
            held[resource] = held.get(resource, 0) + amount
    return usage


def read_own_usage(client, name):
    """``own_usage()`` of the live Job ``name``: its templates' requests times its pods per node.

    Two reads (the Job, its Pod CRs); an absent Job holds nothing.
    """
    job = get_job(client, name)
    if job is None:
        return {}
    requests = {task_object_name(name, t["name"]): t["requests"] for t in selectors_from_job(job) if t.get("name")}
    return own_usage(requests, list_pods(client, sorted(requests)) if requests else [])


def node_match(client, params):
    """The whole ``rlark_node_match`` result on plain parameters (the runner owns ``client``).

    ``failed`` and ``msg`` are set when the task must fail (an error finding with ``fail_on_findings``).
    """
    job = params.get("job")
    tasks = selectors_from_job(job) if job else params.get("selectors") or []
    path_prefix = "spec.tasks" if job else "selectors"
    wanted = [placement_label_selector(t.get("selector")) for t in tasks if t.get("selector")]
    nodes_by_selector, resource_version = fetch_node_matches(client, wanted)
    own_used = read_own_usage(client, params["own_job"]) if params.get("own_job") else None
    entries, findings = prove_selectors(
        tasks,
        nodes_by_selector,
        params.get("cluster_id"),
        params.get("expected_nodes") or expected_nodes(params.get("profile")) or None,
        path_prefix=path_prefix,
        own_used=own_used,
    )
    proof = {
        "checked_at": datetime.datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "api_server": client.server,
        "resource_version": resource_version,
        "cluster_id": params.get("cluster_id"),
        "own_job": params.get("own_job"),
        "tasks": entries,
    }
    ok = not has_errors(findings)
    result = {"changed": False, "proof": proof, "findings": findings, "ok": ok}
    if params.get("fail_on_findings", True) and not ok:
        result.update(failed=True, msg=render(findings, "selector proof"))
    return result


def node_match_timeout(params):
    """The client timeout of a node-match run (the option may be left unset by callers)."""
    return params.get("timeout") or 120
