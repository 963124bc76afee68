# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the ``main`` container logs of a Job's pods from one of three sources.

- ``files``: a directory ``<dir>/<job>/<local-pod-name>.log`` (the sandbox, or any log shipper
  that writes files per pod); the full history, not only the last 1000 lines.
- ``kubeconfig``: the API of the data-plane cluster each pod runs in (pods live in ``rlark-system``,
  named ``<job>-<task>-<ordinal>``); the current container's whole log, streamed.
- ``gateway``: RLark's ``GET /api/v1/rlinf.io/v1alpha1/jobs/<job>/logs`` (last 1000 lines per
  Running pod, no auth): a pod with 1000 lines there is an export TRUNCATED at the gateway's limit.

Every read goes through kube.py's Client (one transport: retries, deadline, auth from the
kubeconfig) and streams into a file line by line, so a log of any size costs bounded memory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import tempfile
import time

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.jobspec import API_VERSION
from ansible_collections.rlark.ops.plugins.module_utils.kube import (
    Client,
    KubeError,
    Settings,
    client_from_params,
)
from ansible_collections.rlark.ops.plugins.module_utils.naming import task_object_name
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact_text

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover
    quote = None

SOURCES = ("files", "kubeconfig", "gateway")
# The options of every task that reads a Job's logs; documented once (doc_fragments/log_source.py).
LOG_SOURCE_SPEC = dict(
    log_source=dict(type="str", default="files", choices=list(SOURCES)),
    logs_dir=dict(type="str"),
    gateway_url=dict(type="str"),
    data_plane_kubeconfig=dict(type="str"),
    data_plane_kubeconfigs=dict(type="dict", default={}),
)
DATA_PLANE_NAMESPACE = "rlark-system"
# RLark's gateway asks the kubelet for tailLines=1000 (rlark-platform.md, Logs).
GATEWAY_TAIL_LINES = 1000
GATEWAY_LOG_PHASES = ("Running", "Succeeded", "Failed")  # RLark's job_logs.go reads logs only in these
GATEWAY_FETCH_ERROR = "error fetching logs:"
READ_TIMEOUT = 300.0
CHUNK = 1 << 16
# ``timestamps=true`` makes the kubelet prefix every line with an RFC 3339 time and one space.
KUBELET_STAMP = re.compile(rb"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) ")
# A time the workload printed at the start of its own line (files and gateway carry no other).
LINE_STAMP = re.compile(rb"^\[?(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)")


# A line can hold a secret only with one of these: the shapes (a long run, a literal prefix) and the name
# words of redact.py's rules. Most training log lines have none and skip the full redaction (~10x slower).
_SECRET_RUN = re.compile(r"[A-Za-z0-9_+\-]{15}")
_SECRET_HINTS = (
    "eyj", "-----begin", "://", "private_key_id", "redacted", "sig=", "basic", "bearer", "pass", "pw", "token",
    "pat", "jwt", "secret", "credential", "key", "authoriz", "cookie", "dsn", "hook",
)  # fmt: skip


def may_hold_secret(text):
    low = text.lower()
    return bool(_SECRET_RUN.search(text)) or any(hint in low for hint in _SECRET_HINTS)


class LogSourceError(Exception):
    pass


def _ordinal(pod):
    m = re.search(r"-(\d+)$", pod)
    return int(m.group(1)) if m else 0


def head_pod_name(job_name, head_task):
    """The Ray head's pod: ordinal 0 of the head task's StatefulSet."""
    return "%s-0" % task_object_name(job_name, head_task)


class Export:
    """One pod's log in a file, with what a record says about it (``fields``)."""

    def __init__(self, pod, source, path, cluster=None, window=False):
        self.pod = pod
        self.source = source
        self.path = path
        self.cluster = cluster
        self.window = window  # the source returns only the last lines (the gateway)
        self.kubelet_stamps = False
        self.followed = None  # after a stop: "to the container's end" or "cut off" (log_follow.py), else None
        self.reset()

    def reset(self):
        self.lines = 0
        self.bytes = 0
        self.first_timestamp = None
        self.last_timestamp = None
        self.truncated = False
        self.unavailable = None  # the gateway's sentence instead of log lines (pod not running, fetch error)
        # Where the next read of a growing source file starts (files source): the source bytes and the export
        # lines/bytes up to the last whole line, and the last time stamp among those lines.
        self.source_path = None
        self.source_offset = 0
        self.whole = (0, 0, None)

    def fields(self):
        return {
            "pod": self.pod,
            "source": self.source,
            "cluster": self.cluster,
            "lines": self.lines,
            "bytes": self.bytes,
            "first_timestamp": self.first_timestamp,
            "last_timestamp": self.last_timestamp,
            "timestamps_from": "kubelet" if self.kubelet_stamps else "log lines" if self.first_timestamp else "none",
            "truncated": self.truncated,
            "unavailable": self.unavailable,
            "followed": self.followed,
        }

    def text(self):
        with open(self.path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")

    def tail(self, limit=65536):
        """The last ``limit`` bytes, from a line start (what a record shows inline)."""
        with open(self.path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            data = fh.read()
        if size > limit and b"\n" in data:
            data = data.split(b"\n", 1)[1]
        return data.decode("utf-8", "replace")


class LineSink:
    """Bytes in, redacted lines out to ``export.path``; ``reset`` starts over (a retried read)."""

    def __init__(self, export, kubelet_stamps=False, append=False):
        self.export = export
        self.export.kubelet_stamps = kubelet_stamps
        self.stamp = KUBELET_STAMP if kubelet_stamps else LINE_STAMP
        # Closed by close(): the sink outlives one call. ``append``: an export continued (export_file).
        self.fh = open(export.path, "ab" if append else "wb")  # noqa: SIM115
        self.partial = []  # the pieces of an unfinished line, joined once when it ends (a 1 MB line in 64 KB chunks)
        self.read = export.source_offset  # source bytes seen, and up to the last whole line (``export.whole``)

    def reset(self):
        self.fh.seek(0)
        self.fh.truncate()
        self.partial = []
        self.export.reset()

    def write(self, chunk):
        self.read += len(chunk)
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            if chunk:
                self.partial.append(chunk)
            return
        data = b"".join(self.partial + [chunk[:cut]]) if self.partial else chunk[:cut]
        self.partial = [chunk[cut:]] if cut < len(chunk) else []
        for line in data.split(b"\n")[:-1]:
            self._line(line)
        self.export.source_offset = self.read - (len(chunk) - cut)
        self.export.whole = (self.export.lines, self.export.bytes, self.export.last_timestamp)

    def _line(self, raw):
        m = self.stamp.match(raw)
        if m:
            stamp = m.group(1).decode("ascii")
            self.export.first_timestamp = self.export.first_timestamp or stamp
            self.export.last_timestamp = stamp
            if self.export.kubelet_stamps:
                raw = raw[m.end() :]
        text = raw.decode("utf-8", "replace")
        out = ((redact_text(text) if may_hold_secret(text) else text) + "\n").encode("utf-8")
        self.fh.write(out)
        self.export.lines += 1
        self.export.bytes += len(out)

    def close(self):
        if self.partial:
            self._line(b"".join(self.partial))
            self.partial = []
        self.fh.close()
        return self.export


def export_path(dest_dir, pod):
    handle, path = tempfile.mkstemp(prefix=".%s." % pod, suffix=".log", dir=dest_dir)
    os.close(handle)
    return path


def _continued(since, source_path, dest_dir):
    """A new export holding the whole lines of ``since`` (a plain byte copy), to be continued from its source
    offset; None when ``since`` is no earlier export of this file or the file is shorter now (rewritten)."""
    if since is None or since.source_path != source_path or os.path.getsize(source_path) < since.source_offset:
        return None
    lines, size, last = since.whole
    export = Export(since.pod, "files", export_path(dest_dir, since.pod))
    with open(since.path, "rb") as src, open(export.path, "wb") as out:
        left = size  # the whole lines only: an unfinished last line is read again from the source
        while left > 0:
            chunk = src.read(min(CHUNK, left))
            if not chunk:
                break
            out.write(chunk)
            left -= len(chunk)
    export.lines, export.bytes, export.first_timestamp, export.last_timestamp = lines, size, since.first_timestamp, last
    export.source_offset, export.whole = since.source_offset, since.whole
    return export


def export_file(source_path, pod, dest_dir, since=None):
    """Copy ``source_path`` line by line into a new export file; with ``since`` (the previous export of that
    file) only what was written after its last whole line is read and redacted, the rest is copied."""
    export = _continued(since, source_path, dest_dir) or Export(pod, "files", export_path(dest_dir, pod))
    export.source_path = source_path
    sink = LineSink(export, append=export.bytes > 0)
    try:
        with open(source_path, "rb") as fh:
            fh.seek(export.source_offset)
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                sink.write(chunk)
    finally:
        sink.close()
    return export


def export_files(logs_dir, job_name, dest_dir, pod_names=None, since=None):
    """``{pod: Export}`` of ``<logs_dir>/<job>/<pod>.log``; ``since``: the previous exports, continued."""
    folder = os.path.join(logs_dir, job_name)
    if not os.path.isdir(folder):
        return {}
    wanted = set(pod_names or [])
    out = {}
    for entry in sorted(os.listdir(folder)):
        pod = entry[: -len(".log")]
        if entry.endswith(".log") and (not wanted or pod in wanted):
            out[pod] = export_file(os.path.join(folder, entry), pod, dest_dir, (since or {}).get(pod))
    return out


def gateway_client(url, timeout=READ_TIMEOUT):
    """kube.py's Client on the gateway (no auth): the same retries and deadline as every API call."""
    settings = Settings()
    settings.server = url.rstrip("/")
    return Client(settings, timeout=timeout)


def gateway_placeholder(entry):
    """RLark's gateway puts a sentence into ``logs`` when it has no lines for a pod ("pod is Pending, no logs
    available" for a pod not Running/Succeeded/Failed, "error fetching logs: ..." when the data plane did not
    answer): that sentence is not log text and must not be counted or exported as such."""
    logs = entry.get("logs") or ""
    phase = entry.get("phase")
    if phase and phase not in GATEWAY_LOG_PHASES:
        return logs.strip() or "pod is %s" % phase
    if logs.startswith(GATEWAY_FETCH_ERROR):
        return logs.splitlines()[0]
    return None


def export_gateway(url, job_name, dest_dir, timeout=READ_TIMEOUT, client=None):
    """Each pod's last lines from the gateway; ``truncated`` when it returned its 1000-line limit."""
    path = "/api/v1/%s/jobs/%s/logs" % (API_VERSION, quote(job_name, safe=""))
    own = client is None
    client = client or gateway_client(url, timeout)
    try:
        body = client.get(path)
    except KubeError as exc:  # one sentence, never a traceback
        raise LogSourceError("RLark gateway %s did not return logs for Job %s: %s" % (url, job_name, exc)) from None
    finally:
        if own:
            client.close()
    out = {}
    for entry in body.get("pods") or []:
        pod = entry.get("podName") or entry.get("taskName")
        export = Export(pod, "gateway", export_path(dest_dir, pod), window=True)
        sink = LineSink(export)
        export.unavailable = gateway_placeholder(entry)
        if not export.unavailable:
            sink.write((entry.get("logs") or "").encode("utf-8"))
        sink.close()
        export.truncated = export.lines >= GATEWAY_TAIL_LINES
        out[pod] = export
    return out


def clusters_of(resource):
    """Task and pod names of a Job (an rlark_job_info item) to the data-plane cluster ID each runs in.

    A Task lives in namespace ``rlark-<clusterID>``, its Pod CRs too (rlark-platform.md, section 1); a
    Task elsewhere (``default``: never run by any agent) has no cluster.
    """
    out = {}
    for task in (resource or {}).get("tasks") or []:
        meta = task.get("metadata") or {}
        namespace = meta.get("namespace") or ""
        if namespace.startswith("rlark-") and meta.get("name"):
            out[meta["name"]] = namespace[len("rlark-") :]
    for pod in (resource or {}).get("pods") or []:
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or ""
        local = jobspec.pod_local_name(pod)
        if namespace.startswith("rlark-") and local:
            out[local] = namespace[len("rlark-") :]
    return out


def cluster_of(pod, clusters):
    """The data-plane cluster ID of ``pod``: its own entry, else its Task's (the name without ``-<ordinal>``)."""
    clusters = clusters or {}
    return clusters.get(pod) or clusters.get(re.sub(r"-\d+$", "", pod))


NO_KUBECONFIG = (
    "the kubeconfig log source needs the data-plane kubeconfigs: set rlark_data_plane_kubeconfigs (cluster ID to "
    "kubeconfig path) and/or rlark_data_plane_kubeconfig (the kubeconfig for every cluster not listed)"
)


def kubeconfig_for(pod, clusters, kubeconfigs, default):
    cluster = cluster_of(pod, clusters)
    path = (kubeconfigs or {}).get(cluster) if cluster else None
    if path or default:
        return cluster, path or default
    if cluster:
        raise LogSourceError(
            "pod %s runs in data-plane cluster %r, which has no kubeconfig: add it to rlark_data_plane_kubeconfigs "
            "(cluster ID to kubeconfig path), or set rlark_data_plane_kubeconfig for every cluster not listed "
            "there" % (pod, cluster)
        )
    raise LogSourceError(NO_KUBECONFIG)


def pod_log_path(namespace, pod):
    return "/api/v1/namespaces/%s/pods/%s/log" % (quote(namespace, safe=""), quote(pod, safe=""))


def export_pod_log(client, pod, namespace, dest_dir, cluster=None):
    """Stream one pod's ``main`` log from a data-plane API into a file; None when the pod is not there."""
    path = pod_log_path(namespace, pod)
    export = Export(pod, "kubeconfig", export_path(dest_dir, pod), cluster=cluster)
    sink = LineSink(export, kubelet_stamps=True)
    try:
        client.request("GET", path, [("container", jobspec.MAIN_CONTAINER), ("timestamps", "true")], sink=sink)
    except KubeError as exc:
        sink.close()
        os.unlink(export.path)
        if getattr(exc, "code", None) == 404:
            return None
        where = " in data-plane cluster %r" % cluster if cluster else ""
        raise LogSourceError("cannot read the log of pod %s/%s%s: %s" % (namespace, pod, where, exc)) from None
    return sink.close()


def export_kubeconfig(pod_names, dest_dir, clusters=None, kubeconfigs=None, default=None, namespace=None, timeout=None):
    """Each pod's log from the API of the cluster it runs in (one client per kubeconfig)."""
    namespace = namespace or DATA_PLANE_NAMESPACE
    plan = [(pod,) + kubeconfig_for(pod, clusters, kubeconfigs, default) for pod in pod_names]
    clients = {}
    out = {}
    try:
        for pod, cluster, kubeconfig in plan:
            if kubeconfig not in clients:
                try:
                    clients[kubeconfig] = client_from_params(
                        {"kubeconfig": kubeconfig}, timeout=timeout or READ_TIMEOUT
                    )
                except KubeError as exc:
                    raise LogSourceError("cannot load data-plane kubeconfig %s: %s" % (kubeconfig, exc)) from None
            export = export_pod_log(clients[kubeconfig], pod, namespace, dest_dir, cluster)
            if export is not None:
                out[pod] = export
    finally:
        for client in clients.values():
            client.close()
    return out


def export_logs(source, job_name, dest_dir, pod_names=None, logs_dir=None, gateway_url=None, **kube):
    """``{pod: Export}`` for one Job, each log in a new file under ``dest_dir``.

    ``kube``: ``clusters`` (pod or Task name to cluster ID), ``kubeconfigs`` (cluster ID to path),
    ``kubeconfig`` (the default path), ``namespace``, ``timeout``; ``since`` (files source): the previous
    ``{pod: Export}``, continued from where each ended. ``pod_names`` is needed for the kubeconfig source.
    """
    if source == "files":
        if not logs_dir:
            raise LogSourceError(
                "the files log source needs the directory of the exported pod logs: set rlark_logs_dir "
                "(or RLARK_LOGS_DIR), or pick another rlark_log_source (gateway, kubeconfig)"
            )
        return export_files(logs_dir, job_name, dest_dir, since=kube.get("since"))
    if source == "gateway":
        if not gateway_url:
            raise LogSourceError("the gateway log source needs the gateway URL: set rlark_gateway_url")
        return export_gateway(gateway_url, job_name, dest_dir, timeout=kube.get("timeout") or READ_TIMEOUT)
    if source == "kubeconfig":
        if not kube.get("kubeconfig") and not kube.get("kubeconfigs"):
            raise LogSourceError(NO_KUBECONFIG)
        return export_kubeconfig(
            pod_names or [],
            dest_dir,
            clusters=kube.get("clusters"),
            kubeconfigs=kube.get("kubeconfigs"),
            default=kube.get("kubeconfig"),
            namespace=kube.get("namespace"),
            timeout=kube.get("timeout"),
        )
    raise LogSourceError("unknown log source %r: set rlark_log_source to one of %s" % (source, ", ".join(SOURCES)))


def read_logs(source, job_name, pod_names=None, **options):
    """``{pod name: text}`` for one Job (the lookup's in-memory view; the exports are removed)."""
    dest = tempfile.mkdtemp(prefix="rlark-logs-")
    try:
        exports = export_logs(source, job_name, dest, pod_names=pod_names, **options)
        return {pod: export.text() for pod, export in exports.items()}
    finally:
        for entry in os.listdir(dest):
            os.unlink(os.path.join(dest, entry))
        os.rmdir(dest)


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
    "GATEWAY_TAIL_LINES",
    "LOG_SOURCE_SPEC",
    "SOURCES",
    "Export",
    "LogSourceError",
    "cluster_of",
    "clusters_of",
    "current_container",
    "export_logs",
    "head_pod_name",
    "read_logs",
    "wait_for_logs",
]
