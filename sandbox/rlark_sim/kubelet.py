"""The kubelet's log endpoint of one data-plane cluster: GET /containerLogs/<ns>/<pod>/<container>.

The cluster's kube-apiserver proxies `pods/<pod>/log` here (the node's InternalIP 127.0.0.1 and
kubeletEndpoint port), with the kubelet's query options: tailLines, sinceTime, sinceSeconds,
timestamps, previous, follow, limitBytes. TLS both ways: the sandbox CA signs this server's cert and
the only client accepted (the apiserver's kubelet client cert).
"""

import datetime
import logging
import re
import ssl
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

from . import podlog
from .httpserve import LoopbackServer, reply

log = logging.getLogger("rlark_sim.kubelet")
PATH = re.compile(r"^/containerLogs/([^/]+)/([^/]+)/([^/]+)$")
TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool


class BadRequest(Exception):
    pass


def parse_time_ns(value):
    stamp = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return int(stamp.timestamp()) * 1_000_000_000 + stamp.microsecond * 1000


def options(query):
    """The kubelet's log options from the query string (ValueError -> 400)."""
    q = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
    opts = {
        "tail": int(q["tailLines"]) if q.get("tailLines") else None,
        "limit": int(q["limitBytes"]) if q.get("limitBytes") else None,
        "timestamps": q.get("timestamps") in TRUE,
        "previous": q.get("previous") in TRUE,
        "follow": q.get("follow") in TRUE,
        "since_ns": None,
    }
    if q.get("sinceTime"):
        opts["since_ns"] = parse_time_ns(q["sinceTime"])
    elif q.get("sinceSeconds"):
        opts["since_ns"] = time.time_ns() - int(q["sinceSeconds"]) * 1_000_000_000
    if opts["tail"] is not None and opts["tail"] < 0:
        opts["tail"] = None  # the kubelet reads a negative tail as "all lines"
    return opts


def log_stream(entry, pod, container, opts):
    """Bytes of the requested container log; BadRequest with the kubelet's words when there is none."""
    if container not in entry.containers:
        raise BadRequest('container "%s" in pod "%s" is not available' % (container, pod))
    if container != "main":
        return iter(())  # sidecars of the template print nothing in the simulation
    plog = entry.log
    span = plog.container_range(entry.uid, previous=opts["previous"])
    if span is None:
        if opts["previous"]:
            raise BadRequest('previous terminated container "%s" in pod "%s" not found' % (container, pod))
        raise BadRequest('container "%s" in pod "%s" is waiting to start: ContainerCreating' % (container, pod))
    first, end = span
    follow = None
    if opts["follow"] and not opts["previous"]:
        restarts = plog.restart_count(entry.uid)
        follow = lambda: entry.running() and plog.restart_count(entry.uid) == restarts  # noqa: E731
    chunks = plog.stream(first, end, opts["tail"], opts["since_ns"], opts["timestamps"], follow)
    return podlog.limit_bytes(chunks, opts["limit"]) if opts["limit"] is not None else chunks


class _Handler(BaseHTTPRequestHandler):
    server_version = "rlark-sim-kubelet"

    def log_message(self, fmt, *args):
        log.debug("%s " + fmt, self.server.cluster, *args)

    def _fail(self, code, text):
        reply(self, code, text.encode(), "text/plain; charset=utf-8")

    def do_GET(self):
        url = urlsplit(self.path)
        match = PATH.match(url.path)
        if not match:
            return self._fail(404, "404 page not found")
        namespace, pod, container = (unquote(g) for g in match.groups())
        entry = self.server.lookup(namespace, pod)
        if entry is None:
            return self._fail(404, 'pod "%s/%s" not found on this node' % (namespace, pod))
        try:
            chunks = log_stream(entry, pod, container, options(url.query))
            first = next(chunks, b"")
        except (ValueError, BadRequest) as exc:
            return self._fail(400, str(exc))
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()  # HTTP/1.0: the body ends when the connection closes (a follow streams)
        try:
            self.wfile.write(first)
            for chunk in chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (kubectl logs -f interrupted)


class KubeletServer(LoopbackServer):
    def __init__(self, cluster, port, tls, lookup):
        super().__init__(port, _Handler)
        self.cluster = cluster
        self.thread_name = "kubelet-" + cluster
        self.lookup = lookup
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls["cert"], tls["key"])
        ctx.load_verify_locations(tls["client_ca"])
        ctx.verify_mode = ssl.CERT_REQUIRED
        self.socket = ctx.wrap_socket(self.socket, server_side=True)
