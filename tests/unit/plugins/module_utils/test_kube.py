# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kube.Client without a server: retries, deadline, create safety, pagination, errors, auth."""

import base64
import os
import socket
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import kube, kube_auth
from rlark_fake_api import FakeApi, FakeClock, job, make_client, status

JOBS = "/apis/rlinf.io/v1alpha1/jobs"


def test_get_survives_503_twice_then_reset_then_429():
    api = FakeApi()
    api.add("jobs", job())
    api.fail_next(status(503, "ServiceUnavailable", "etcd leader changed"), times=2)
    api.fail_next(ConnectionResetError(104, "Connection reset by peer"))
    api.fail_next((429, {"retry-after": "3"}, b'{"kind":"Status","reason":"TooManyRequests","code":429}'))
    clock = FakeClock()
    client = make_client(api, clock=clock)
    got = client.get(JOBS + "/demo")
    assert got["metadata"]["name"] == "demo"
    assert client.api_calls == 5
    assert client.retries == 4
    # jittered backoff with rand=0.5 -> 0.75 * base * 2**n, then Retry-After exactly
    assert clock.sleeps == [pytest.approx(0.1875), pytest.approx(0.375), pytest.approx(0.75), 3.0]


def test_retries_are_bounded_by_the_deadline():
    api = FakeApi()
    api.fail_next(status(503, "ServiceUnavailable", "down"), times=1000)
    clock = FakeClock()
    client = make_client(api, clock=clock, timeout=5.0)
    with pytest.raises(kube.ApiError) as err:
        client.get(JOBS + "/demo")
    assert err.value.code == 503
    assert sum(clock.sleeps) < 5.0
    assert client.api_calls == len(clock.sleeps) + 1


def test_retry_after_longer_than_the_deadline_gives_up_with_the_429():
    api = FakeApi()
    api.fail_next((429, {"retry-after": "30"}, b""))
    client = make_client(api, timeout=10.0)
    with pytest.raises(kube.ApiError) as err:
        client.get(JOBS + "/demo")
    assert err.value.code == 429
    assert client.api_calls == 1


def test_connection_errors_exhaust_into_one_sentence():
    api = FakeApi()
    api.fail_next(socket.timeout("timed out"), times=100)
    client = make_client(api, timeout=3.0)
    with pytest.raises(kube.TransportError) as err:
        client.get(JOBS)
    text = str(err.value)
    assert text.startswith("Cannot reach the API server https://fake.invalid:6443: GET /apis/rlinf.io/v1alpha1/jobs")
    assert "\n" not in text


def test_create_is_not_resent_when_the_first_attempt_was_applied():
    api = FakeApi()
    api.fail_next(("apply-then-raise", ConnectionResetError(104, "reset")), method="POST")
    client = make_client(api)
    created = client.create(JOBS, job(phase=None))
    assert created["metadata"]["name"] == "demo"
    assert api.count("POST") == 1  # never resent
    assert api.count("GET") == 1  # read back instead
    assert api.get("jobs", "demo") is not None


def test_create_is_resent_after_a_failure_that_did_not_apply():
    api = FakeApi()
    api.fail_next(status(502, "BadGateway", "proxy"), method="POST")
    client = make_client(api)
    client.create(JOBS, job(phase=None))
    assert api.count("POST") == 2
    assert api.count("GET") == 1


def test_create_throttled_429_is_resent_without_read_back():
    api = FakeApi()
    api.fail_next((429, {"retry-after": "1"}, b""), method="POST")
    client = make_client(api)
    client.create(JOBS, job(phase=None))
    assert api.count("POST") == 2
    assert api.count("GET") == 0


def test_writes_are_strict_and_dry_run_in_check_mode():
    api = FakeApi()
    client = make_client(api)
    client.create(JOBS, job(phase=None), dry_run=True)
    method, _path, query, _body = api.requests[-1]
    assert method == "POST" and query == {"fieldValidation": "Strict", "dryRun": "All"}
    assert api.get("jobs", "demo") is None
    api.add("jobs", job())
    client.merge_patch(JOBS + "/demo", {"spec": {"stopped": True}}, dry_run=True)
    assert api.requests[-1][2] == {"fieldValidation": "Strict", "dryRun": "All"}
    assert api.get("jobs", "demo")["spec"]["stopped"] is False
    client.delete(JOBS + "/demo", dry_run=True)
    assert api.requests[-1][3]["dryRun"] == ["All"]
    assert api.requests[-1][3]["propagationPolicy"] == "Background"
    assert api.get("jobs", "demo") is not None


def test_unknown_field_error_names_the_path_in_one_sentence():
    api = FakeApi()
    client = make_client(api)
    bad = job(phase=None)
    bad["spec"]["tasks"][0]["nodeSelecter"] = {}
    with pytest.raises(kube.ApiError) as err:
        client.create(JOBS, bad)
    assert err.value.code == 400
    assert 'unknown field "spec.tasks[0].nodeSelecter"' in str(err.value)
    assert str(err.value).count(".") >= 1 and "\n" not in str(err.value)
    assert err.value.to_dict()["reason"] == "BadRequest"


def test_forbidden_is_one_sentence_with_parsed_status():
    api = FakeApi()
    api.fail_next(
        status(
            403,
            "Forbidden",
            'jobs.rlinf.io "demo" is forbidden: User "viewer" cannot patch resource "jobs" in API group "rlinf.io"',
        )
    )
    client = make_client(api)
    with pytest.raises(kube.ApiError) as err:
        client.merge_patch(JOBS + "/demo", {"spec": {"stopped": True}})
    assert str(err.value) == (
        "The API server rejected PATCH /apis/rlinf.io/v1alpha1/jobs/demo with 403 Forbidden: jobs.rlinf.io "
        '"demo" is forbidden: User "viewer" cannot patch resource "jobs" in API group "rlinf.io".'
    )
    assert err.value.to_dict() == {"code": 403, "reason": "Forbidden", "message": err.value.message, "causes": []}
    assert client.api_calls == 1  # a 4xx is never retried


def test_causes_are_parsed_and_added_to_the_sentence():
    api = FakeApi()
    api.fail_next(
        status(
            422,
            "Invalid",
            'Job.rlinf.io "x" is invalid',
            [{"field": "spec.tasks[0].role", "reason": "FieldValueRequired", "message": "Required value"}],
        )
    )
    client = make_client(api)
    with pytest.raises(kube.ApiError) as err:
        client.create(JOBS, job(phase=None))
    assert "spec.tasks[0].role: Required value" in str(err.value)
    assert err.value.causes == [
        {"field": "spec.tasks[0].role", "reason": "FieldValueRequired", "message": "Required value"}
    ]


def test_non_status_error_body_is_cut_to_one_line():
    api = FakeApi()
    api.fail_next((404, {}, b"<html>\n<body>nope</body>\n</html>"))
    client = make_client(api)
    with pytest.raises(kube.ApiError) as err:
        client.get(JOBS + "/x")
    assert "\n" not in str(err.value) and "<html>" in str(err.value)


def test_list_pages_with_limit_and_continue():
    api = FakeApi()
    for i in range(7):
        api.add("nodes", {"metadata": {"name": "n%d" % i, "namespace": "rlark-a", "labels": {"x": "1"}}})
    client = make_client(api)
    items, rv = client.list("/apis/rlinf.io/v1alpha1/nodes", label_selector="x=1", limit=3)
    assert [i["metadata"]["name"] for i in items] == ["n%d" % i for i in range(7)]
    assert client.api_calls == 3
    assert [r[2].get("continue") for r in api.requests] == [None, "3", "6"]
    assert rv == str(api.rv)


def test_list_restarts_on_410_gone():
    api = FakeApi()
    for i in range(5):
        api.add("nodes", {"metadata": {"name": "n%d" % i, "namespace": "rlark-a"}})
    original = api.send
    seen = {"n": 0}

    def send(method, path, headers, body, timeout):
        if "continue=" in path and seen["n"] == 0:
            seen["n"] += 1
            return status(410, "Expired", "The provided continue parameter is too old")
        return original(method, path, headers, body, timeout)

    api.send = send
    client = make_client(api)
    items = client.list("/apis/rlinf.io/v1alpha1/nodes", limit=2)[0]
    assert [i["metadata"]["name"] for i in items] == ["n0", "n1", "n2", "n3", "n4"]  # no duplicates
    assert client.api_calls == 5  # page 1, expired page 2, then pages 1-3 again


def test_resolve_auth_from_kubeconfig_dict_with_overrides(tmp_path):
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
    cfg = {
        "current-context": "admin",
        "contexts": [
            {"name": "admin", "context": {"cluster": "sb", "user": "admin"}},
            {"name": "viewer", "context": {"cluster": "sb", "user": "viewer"}},
        ],
        "clusters": [{"name": "sb", "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data": ca}}],
        "users": [
            {"name": "admin", "user": {"token": "admin-token"}},
            {"name": "viewer", "user": {"token": "viewer-token", "client-certificate-data": ca}},
        ],
    }
    s = kube.resolve_auth({"kubeconfig": cfg})
    assert (s.server, s.token, s.verify) == ("https://127.0.0.1:6443", "admin-token", True)
    assert "BEGIN CERTIFICATE" in s.ca_data
    s = kube.resolve_auth({"kubeconfig": cfg, "context": "viewer", "host": "http://127.0.0.1:9", "api_key": "k"})
    assert (s.server, s.token) == ("http://127.0.0.1:9", "k")
    assert os.path.exists(s.client_cert)
    s.cleanup()
    assert not os.path.exists(s.client_cert)
    with pytest.raises(kube.ConfigError, match="no context named 'nope'"):
        kube.resolve_auth({"kubeconfig": cfg, "context": "nope"})


def test_resolve_auth_from_file_resolves_relative_paths(tmp_path):
    (tmp_path / "ca.crt").write_text("x")
    (tmp_path / "token").write_text("file-token\n")
    (tmp_path / "config").write_text(
        "apiVersion: v1\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
        "clusters: [{name: k, cluster: {server: 'https://h:1', certificate-authority: ca.crt, "
        "insecure-skip-tls-verify: true, proxy-url: 'http://proxy:3128'}}]\n"
        "users: [{name: u, user: {tokenFile: token}}]\n"
    )
    s = kube.resolve_auth({"kubeconfig": str(tmp_path / "config"), "validate_certs": None})
    assert s.ca_file == str(tmp_path / "ca.crt")
    assert s.token == "file-token"
    assert s.verify is False
    assert s.proxy == "http://proxy:3128"
    s = kube.resolve_auth({"kubeconfig": str(tmp_path / "config"), "validate_certs": True, "no_proxy": "h"})
    assert s.verify is True and s.no_proxy == "h"


def test_resolve_auth_without_server_is_one_sentence(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(kube_auth, "SERVICE_ACCOUNT_DIR", str(tmp_path / "none"))
    with pytest.raises(kube.ConfigError, match=r"^No API server to talk to: pass -e rlark_kubeconfig=PATH"):
        kube.resolve_auth({})


@pytest.mark.parametrize(
    "host,no_proxy,expected",
    [
        ("api.example.com", "example.com", True),
        ("api.example.com", ".example.com", True),
        ("example.com", "example.com", True),
        ("badexample.com", "example.com", False),
        ("10.0.0.1", "10.0.0.1, localhost", True),
        ("anything", "*", True),
        ("api", "", False),
    ],
)
def test_bypasses_proxy(host, no_proxy, expected):
    assert kube.bypasses_proxy(host, no_proxy) is expected


def test_resource_paths():
    assert kube.resource_path("jobs") == JOBS
    assert kube.resource_path("nodes", "a100-01", "rlark-a100") == (
        "/apis/rlinf.io/v1alpha1/namespaces/rlark-a100/nodes/a100-01"
    )
    assert kube.resource_path("jobs", "x", subresource="status") == JOBS + "/x/status"


def test_http_transport_reconnects_after_server_closes(tmp_path):
    """The real transport against a local HTTP server that drops the first connection."""
    import http.server
    import threading

    hits = {"n": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            hits["n"] += 1
            if hits["n"] == 1:
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            assert self.headers["Authorization"] == "Bearer tok"
            body = b'{"kind":"Job","metadata":{"name":"demo"}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = kube.client_from_params({"host": "http://127.0.0.1:%d" % server.server_port, "api_key": "tok"})
        client.backoff_base = 0.01
        assert client.get(JOBS + "/demo")["metadata"]["name"] == "demo"
        assert client.get(JOBS + "/demo")["metadata"]["name"] == "demo"  # keep-alive reuse
        assert client.api_calls == 3 and client.retries == 1
        client.close()
    finally:
        server.shutdown()
        server.server_close()
