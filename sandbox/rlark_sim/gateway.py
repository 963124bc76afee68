"""The RLark REST gateway routes the collection uses (RLark's apps/rlark/pkg/gateway, Kubernetes-backed).

- GET /api/v1/rlinf.io/v1alpha1/jobs            the Job list as the API server returns it
- GET /api/v1/rlinf.io/v1alpha1/jobs/<name>     one Job, 404 {"error": "not found"}
- GET /api/v1/rlinf.io/v1alpha1/jobs/<name>/logs           job_logs.go: the last 1000 lines of `main`
  of every Running/Succeeded/Failed pod, read through its cluster's apiserver (RLark's server proxy)
"""

import json
import logging
import re
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote, urlsplit

from .httpserve import LoopbackServer, reply
from .kube import ApiError, core_path, crd_path
from .workload import SYSTEM_NS, TASK_NAME_LABEL

log = logging.getLogger("rlark_sim.gateway")
PREFIX = "/api/v1/rlinf.io/v1alpha1/jobs"
ROUTE = re.compile(r"^%s(?:/([^/]+)(/logs)?)?/?$" % re.escape(PREFIX))
AGENT_PREFIX = "rlark-"
LOG_PHASES = ("Running", "Succeeded", "Failed")
TAIL = "1000"  # RLark asks for tailLines=1000&container=main, nothing older


def job_logs(kube, data_plane, job):
    """RLark's JobLogs body: {"pods": [...]} or {"pods": null} (Go's nil slice) when there is none."""
    tasks = kube.list(crd_path("tasks"), params={"labelSelector": "rlinf.io/job=%s" % job}).get("items") or []
    results = []
    for task in tasks:
        namespace = task["metadata"]["namespace"]
        if not namespace.startswith(AGENT_PREFIX):
            continue
        agent_id = namespace[len(AGENT_PREFIX) :]
        try:
            pods = kube.list(
                crd_path("pods", namespace),
                params={"labelSelector": "%s=%s" % (TASK_NAME_LABEL, task["metadata"]["name"])},
            ).get("items")
        except ApiError as exc:
            log.warning("gateway: pods of task %s/%s: %s", namespace, task["metadata"]["name"], exc)
            continue
        for pod in pods or []:
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            phase = status.get("phase") or ""
            info = {
                "taskName": task["metadata"]["name"],
                "podName": spec.get("podName") or "",
                "phase": phase,
                "node": status.get("node") or "",
            }
            if phase in LOG_PHASES:
                info["logs"] = fetch_logs(data_plane, agent_id, spec.get("podNamespace") or SYSTEM_NS, info["podName"])
            else:
                info["logs"] = "pod is %s, no logs available" % phase
            results.append(info)
    return {"pods": results or None}


def fetch_logs(data_plane, agent_id, namespace, pod):
    client = data_plane.get(agent_id)
    if client is None:
        return "error fetching logs: call server proxy: no agent connected for cluster %s" % agent_id
    path = core_path("v1", "pods", namespace, pod) + "/log"
    try:
        code, text = client.get_text(path, params={"tailLines": TAIL, "container": "main"})
    except OSError as exc:
        return "error fetching logs: call server proxy: %s" % exc
    if code != 200:
        return "error fetching logs: server proxy returned HTTP %d: %s" % (code, text)
    return text


def get_job(kube, name):
    return kube.get_or_none(crd_path("jobs", name=name))


class _Handler(BaseHTTPRequestHandler):
    server_version = "rlark-sim-gateway"

    def log_message(self, fmt, *args):
        log.debug(fmt, *args)

    def _json(self, code, body):
        reply(self, code, json.dumps(body).encode(), "application/json; charset=utf-8")

    def do_GET(self):
        url = urlsplit(self.path)
        match = ROUTE.match(url.path)
        if not match:
            return self._json(404, {"error": "not found"})
        name, logs = match.group(1), match.group(2)
        kube = self.server.kube
        try:
            if name is None:  # Jobs are cluster-scoped: a namespace= query changes nothing
                return self._json(200, kube.list(crd_path("jobs")))
            name = unquote(name)
            if logs:
                return self._json(200, job_logs(kube, self.server.data_plane, name))
            job = get_job(kube, name)
            return self._json(200, job) if job is not None else self._json(404, {"error": "not found"})
        except ApiError as exc:
            return self._json(500, {"error": str(exc)})


class GatewayServer(LoopbackServer):
    thread_name = "gateway"

    def __init__(self, port, kube, data_plane):
        super().__init__(port, _Handler)
        self.kube = kube
        self.data_plane = data_plane
