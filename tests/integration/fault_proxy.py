"""Local HTTP servers for the fault tests: a fault-injecting reverse proxy to the sandbox's kube-apiserver.

The proxy listens on 127.0.0.1 (plain HTTP), forwards each request to the kube-apiserver over TLS with the
caller's Authorization header, and answers the requests it selects from a script of faults first.
"""

import http.client
import http.server
import json
import socket
import ssl
import struct
import threading
from urllib.parse import urlsplit

# Script entries (one per selected request, in order):
#   "503", "429:<Retry-After>"   answer that status without forwarding (the server never sees the request)
#   "reset"                      drop the connection without forwarding
#   "forward-then-reset"         forward (the server applies it), then drop the connection: the answer is lost
#   "forward-then-503"           forward (the server applies it), then answer 503 instead of its answer
#   "forward"                    forward and relay the answer


class LocalServer:
    """A threaded HTTP server on 127.0.0.1 that runs for the duration of a ``with`` block."""

    def serve(self, handler):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def status_body(code):
    reason = {503: "ServiceUnavailable", 429: "TooManyRequests"}[code]
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason}
    return json.dumps(status).encode()


class FaultProxy(LocalServer):
    """A reverse proxy with a fault script.

    ``methods``: the HTTP methods the script applies to (None = every request); other requests are forwarded.
    ``hold``: optional ``hold(method, path)`` called before a request is forwarded (a barrier, for example).
    ``log`` records (method, path, outcome) of every request; ``upstream`` records (method, path, status) of
    every request the API server answered.
    """

    def __init__(self, upstream, ca_cert, faults, methods=None, hold=None):
        self.target = urlsplit(upstream)
        self.context = ssl.create_default_context(cafile=ca_cert)
        self.faults = list(faults)
        self.methods = methods
        self.hold = hold
        self.log = []
        self.upstream = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                path = self.path.split("?")[0]
                with proxy.lock:
                    selected = proxy.methods is None or self.command in proxy.methods
                    fault = proxy.faults.pop(0) if selected and proxy.faults else None
                    proxy.log.append((self.command, path, fault or "forward"))
                if fault == "reset":
                    self._reset()
                    return
                if fault and fault.startswith(("503", "429")):
                    self._answer(int(fault[:3]), [("Retry-After", fault.split(":", 1)[1])] if ":" in fault else [])
                    return
                if proxy.hold is not None:
                    proxy.hold(self.command, path)
                status, headers, data = proxy.forward(self.command, self.path, body, self.headers)
                with proxy.lock:
                    proxy.upstream.append((self.command, path, status))
                if fault == "forward-then-reset":
                    self._reset()  # the server applied the request; the client never hears back
                    return
                if fault == "forward-then-503":
                    self._answer(503, [])
                    return
                self.send_response(status)
                for key, value in headers:
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _answer(self, code, headers):
                payload = status_body(code)
                self.send_response(code)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _reset(self):
                # SO_LINGER 0: close() sends a TCP RST, the client sees "connection reset".
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _handle

        self.serve(Handler)

    def forward(self, method, path, body, headers):
        conn = http.client.HTTPSConnection(self.target.hostname, self.target.port, context=self.context, timeout=60)
        try:
            conn.request(
                method,
                path,
                body=body,
                headers={k: v for k, v in headers.items() if k.lower() not in ("host", "connection")},
            )
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()
