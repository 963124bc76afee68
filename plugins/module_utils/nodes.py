# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node CR reads for the selector proof: one server-side filtered list per distinct selector.

The API server filters the Node CRs of every namespace by label, so only matches travel; the
lists run in parallel on a few connections because each one costs a full scan on the server.
Kept apart from ``jobs.py`` so that ``rlark_node_match`` (module or action plugin) imports only what it uses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import threading

from ansible_collections.rlark.ops.plugins.module_utils.findings import has_errors, render
from ansible_collections.rlark.ops.plugins.module_utils.kube import (
    AUTH_OPTIONS,
    KubeError,
    client_from_params,
    resource_path,
)
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


def auth_from(params):
    return {name: params.get(name) for name in AUTH_OPTIONS}


def node_match(params, log=None):
    """The whole ``rlark_node_match`` run on plain parameters (module or action plugin).

    Returns ``(result, failure_message)``; ``failure_message`` is None unless the task must fail.
    API errors propagate as ``kube.KubeError`` (with the client's call counts in ``exc.counts``).
    """
    job = params.get("job")
    tasks = selectors_from_job(job) if job else params.get("selectors") or []
    path_prefix = "spec.tasks" if job else "selectors"
    client = client_from_params(auth_from(params), timeout=params.get("timeout") or 120, log=log)
    try:
        wanted = [placement_label_selector(t.get("selector")) for t in tasks if t.get("selector")]
        nodes_by_selector, resource_version = fetch_node_matches(client, wanted)
    except KubeError as exc:
        exc.counts = {"api_calls": client.api_calls, "api_retries": client.retries}
        raise
    finally:
        client.close()
    entries, findings = prove_selectors(
        tasks, nodes_by_selector, params.get("cluster_id"), params.get("expected_nodes"), path_prefix=path_prefix
    )
    proof = {
        "checked_at": datetime.datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "api_server": client.server,
        "resource_version": resource_version,
        "cluster_id": params.get("cluster_id"),
        "tasks": entries,
    }
    ok = not has_errors(findings)
    result = {
        "changed": False,
        "proof": proof,
        "findings": findings,
        "ok": ok,
        "api_calls": client.api_calls,
        "api_retries": client.retries,
    }
    failure = render(findings, "selector proof") if params.get("fail_on_findings", True) and not ok else None
    return result, failure
