# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the ``main`` container logs of a Job's pods from one of three sources.

- ``files``: a directory ``<dir>/<job>/<local-pod-name>.log`` (the sandbox, or any log shipper
  that writes files per pod); the full history, not only the last 1000 lines.
- ``kubeconfig``: a data-plane cluster's API (pods live in ``rlark-system``, named
  ``<job>-<task>-<ordinal>``); only the current container's log.
- ``gateway``: RLark's ``GET /api/v1/rlinf.io/v1alpha1/jobs/<job>/logs`` (last 1000 lines per
  Running pod, no auth).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import time

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover
    quote = None

SOURCES = ("files", "kubeconfig", "gateway")
DATA_PLANE_NAMESPACE = "rlark-system"


class LogSourceError(Exception):
    pass


def _ordinal(pod):
    m = re.search(r"-(\d+)$", pod)
    return int(m.group(1)) if m else 0


def head_pod_name(job_name, head_task):
    return "%s-%s-0" % (job_name, head_task)


def read_files(logs_dir, job_name):
    folder = os.path.join(logs_dir, job_name)
    if not os.path.isdir(folder):
        return {}
    out = {}
    for entry in sorted(os.listdir(folder)):
        if entry.endswith(".log"):
            with open(os.path.join(folder, entry), "rb") as fh:
                out[entry[: -len(".log")]] = fh.read().decode("utf-8", "replace")
    return out


def read_gateway(url, job_name, fetch):
    """``fetch(url) -> bytes`` is the caller's HTTP GET (the lookup passes Ansible's ``open_url``)."""
    target = "%s/api/v1/rlinf.io/v1alpha1/jobs/%s/logs" % (url.rstrip("/"), quote(job_name))
    try:
        body = json.loads(fetch(target).decode("utf-8"))
    except Exception as exc:  # one sentence, never a traceback
        raise LogSourceError("RLark gateway %s did not return logs for Job %s: %s" % (url, job_name, exc)) from exc
    return {p.get("podName") or p.get("taskName"): p.get("logs") or "" for p in body.get("pods") or []}


def read_kubeconfig(kubeconfig, pod_names, namespace=DATA_PLANE_NAMESPACE, context=None):
    try:
        from kubernetes import client, config
    except ImportError:
        raise LogSourceError("the Python package 'kubernetes' is required for the kubeconfig log source") from None
    try:
        api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig, context=context))
    except Exception as exc:
        raise LogSourceError("cannot load data-plane kubeconfig %s: %s" % (kubeconfig, exc)) from exc
    out = {}
    for pod in pod_names:
        try:
            out[pod] = api.read_namespaced_pod_log(pod, namespace, container="main")
        except Exception as exc:
            status = getattr(exc, "status", None)
            if status == 404:
                continue
            raise LogSourceError(
                "cannot read the log of pod %s/%s: %s" % (namespace, pod, getattr(exc, "reason", exc))
            ) from None
    return out


def read_logs(
    source, job_name, pod_names=None, logs_dir=None, gateway_url=None, kubeconfig=None, namespace=None, fetch=None
):
    """``{pod name: text}`` for one Job; ``pod_names`` is needed for the kubeconfig source."""
    if source == "files":
        if not logs_dir:
            raise LogSourceError(
                "the files log source needs the directory of the exported pod logs: set rlark_logs_dir "
                "(or RLARK_LOGS_DIR), or pick another rlark_log_source (gateway, kubeconfig)"
            )
        return read_files(logs_dir, job_name)
    if source == "gateway":
        if not gateway_url:
            raise LogSourceError("the gateway log source needs the gateway URL: set rlark_gateway_url")
        return read_gateway(gateway_url, job_name, fetch)
    if source == "kubeconfig":
        if not kubeconfig:
            raise LogSourceError(
                "the kubeconfig log source needs a data-plane kubeconfig: set rlark_data_plane_kubeconfig"
            )
        return read_kubeconfig(kubeconfig, pod_names or [], namespace or DATA_PLANE_NAMESPACE)
    raise LogSourceError("unknown log source %r (use one of %s)" % (source, ", ".join(SOURCES)))


# The first line a new head container prints: RLark's head script runs ``ray start --head`` ("Ray runtime
# started."); the sandbox's trainer says "Starting Ray head node". A files log keeps every container's lines.
CONTAINER_START = r"^(?:Ray runtime started\.|Starting Ray head node\b)"


def current_container(text, start=CONTAINER_START):
    """The part of an appended log written by the current container: from the last start line on
    (the whole text when no start line is there). Signals of earlier containers prove nothing now."""
    if not text or not start:
        return text
    starts = [m.start() for m in re.finditer(start, text, re.MULTILINE)]
    return text[starts[-1] :] if starts else text


def wait_for_logs(read, pod, until, timeout, interval=1.0, clock=time.monotonic, sleep=time.sleep):
    """Call ``read()`` until ``until(logs[pod])`` is true or ``timeout`` passes; ``(logs, timed_out)``."""
    deadline = clock() + max(0.0, float(timeout))
    while True:
        logs = read()
        if until(logs.get(pod, "")):
            return logs, False
        if clock() >= deadline:
            return logs, True
        sleep(min(interval, max(0.0, deadline - clock())) or 0.05)


__all__ = [
    "CONTAINER_START",
    "SOURCES",
    "LogSourceError",
    "current_container",
    "head_pod_name",
    "read_logs",
    "wait_for_logs",
]
