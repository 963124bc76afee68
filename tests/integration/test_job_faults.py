# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Retries proven against the real API server through a fault-injecting proxy (fault_proxy.py).

Reads: 503 twice, a dropped connection (TCP reset), then 429 with Retry-After. Writes: test_job_write_faults.py.
"""

import contextlib
import http.server
import socket
import threading
import time
from urllib.parse import urlsplit

import job_test_support as support
import pytest
from fault_proxy import FaultProxy, LocalServer
from independent import get_job
from job_test_support import client_from_params, demo_job, jobs_core, run_module, unique

pytestmark = pytest.mark.sandbox
cleanup = support.cleanup


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
    assert get_job(sandbox, name)["spec"]["stopped"] is True


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
