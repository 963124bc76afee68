# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Retries proven against the real API server through a fault-injecting proxy.

The proxy listens on 127.0.0.1 (plain HTTP), forwards every request to the sandbox's kube-apiserver
over TLS with the caller's Authorization header, and answers a scripted list of faults first:
503 twice, a dropped connection (TCP reset), then 429 with Retry-After.
"""

import contextlib
import http.client
import http.server
import json
import socket
import ssl
import struct
import threading
import time
from urllib.parse import urlsplit

import job_test_support as support
import pytest
from job_test_support import client_from_params, demo_job, jobs_core, run_module, unique

pytestmark = pytest.mark.sandbox
cleanup = support.cleanup


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


class FaultProxy(LocalServer):
    """A threaded reverse proxy with a fault script; ``log`` records (method, path, outcome)."""

    def __init__(self, upstream, ca_cert, faults):
        self.upstream = urlsplit(upstream)
        self.context = ssl.create_default_context(cafile=ca_cert)
        self.faults = list(faults)
        self.log = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy.lock:
                    fault = proxy.faults.pop(0) if proxy.faults else None
                    proxy.log.append((self.command, self.path.split("?")[0], fault or "forward"))
                if fault == "reset":
                    self._reset()
                    return
                if fault and fault.startswith(("503", "429")):
                    code = int(fault[:3])
                    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
                    status["reason"] = "ServiceUnavailable" if code == 503 else "TooManyRequests"
                    payload = json.dumps(status).encode()
                    self.send_response(code)
                    if ":" in fault:
                        self.send_header("Retry-After", fault.split(":", 1)[1])
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPSConnection(
                    proxy.upstream.hostname, proxy.upstream.port, context=proxy.context, timeout=30
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                if fault == "forward-then-reset":
                    self._reset()  # the server applied the request; the client never hears back
                    return
                self.send_response(resp.status)
                for key, value in resp.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _reset(self):
                # SO_LINGER 0: close() sends a TCP RST, the client sees "connection reset".
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _handle

        self.serve(Handler)


FAULTS = ["503", "503", "reset", "429:2"]


def test_stop_survives_503_twice_a_reset_and_429(sandbox, cleanup):
    name = unique()
    cleanup.append(name)
    created = run_module(sandbox, "rlark_job", {"definition": demo_job(name)})
    assert created["changed"], created.get("msg")
    with FaultProxy(sandbox.server, sandbox.ca_cert, FAULTS) as proxy:
        started = time.monotonic()
        result = run_module(
            sandbox,
            "rlark_job",
            {"name": name, "state": "stopped", "host": proxy.url, "api_key": sandbox.operator_token},
            kubeconfig=None,
            env={"K8S_AUTH_KUBECONFIG": ""},
        )
        elapsed = time.monotonic() - started
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] and result["action"] == "stopped"
    outcomes = [entry[2] for entry in proxy.log]
    assert outcomes[:4] == FAULTS and outcomes[4:] == ["forward"] * (len(outcomes) - 4)
    # GET job x5 (4 faults + success), PATCH, list tasks: every attempt counted.
    assert result["api_calls"] == len(proxy.log) == 7
    assert result["api_retries"] == 4
    assert elapsed >= 2.0  # Retry-After: 2 was honoured
    client = client_from_params({"kubeconfig": sandbox.kubeconfig})
    assert jobs_core.get_job(client, name)["spec"]["stopped"] is True


def test_create_through_a_reset_after_apply_is_not_duplicated(sandbox, cleanup):
    """The POST reaches the server but the connection drops: the client reads back instead of re-POSTing."""
    name = unique()
    cleanup.append(name)
    with FaultProxy(sandbox.server, sandbox.ca_cert, ["503", "forward", "forward-then-reset"]) as proxy:
        client = client_from_params({"host": proxy.url, "api_key": sandbox.operator_token}, timeout=60)
        created = jobs_core.ensure_present(client, demo_job(name))
    assert created["action"] == "created"
    assert created["job"]["metadata"]["name"] == name and created["job"]["metadata"]["uid"]
    calls = [(method, outcome) for method, _path, outcome in proxy.log]
    assert calls == [("GET", "503"), ("GET", "forward"), ("POST", "forward-then-reset"), ("GET", "forward")]
    assert client.retries == 2


class ConnectProxy(LocalServer):
    """A minimal HTTP CONNECT proxy on 127.0.0.1 that records the tunnels it opens."""

    def __init__(self):
        self.tunnels = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_CONNECT(self):
                host, port = self.path.rsplit(":", 1)
                proxy.tunnels.append(self.path)
                upstream = socket.create_connection((host, int(port)), timeout=30)
                self.send_response(200, "Connection established")
                self.end_headers()
                self.close_connection = True
                pipe(self.connection, upstream)

        self.serve(Handler)


def pipe(client_sock, upstream):
    """Copy bytes both ways until either side closes."""

    def copy_bytes(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    other = threading.Thread(target=copy_bytes, args=(upstream, client_sock), daemon=True)
    other.start()
    copy_bytes(client_sock, upstream)
    other.join(timeout=5)


def test_proxy_option_tunnels_and_no_proxy_bypasses(sandbox):
    server = urlsplit(sandbox.server)
    with ConnectProxy() as proxy:
        result = run_module(sandbox, "rlark_job_info", {"name": "no-such-job", "proxy": proxy.url})
        assert not result.get("failed"), result.get("msg")
        assert result["resources"] == []
        assert proxy.tunnels == ["%s:%d" % (server.hostname, server.port)]
        bypass = run_module(
            sandbox, "rlark_job_info", {"name": "no-such-job", "proxy": proxy.url, "no_proxy": server.hostname}
        )
        assert not bypass.get("failed"), bypass.get("msg")
        assert len(proxy.tunnels) == 1  # no second tunnel: the host is in no_proxy
