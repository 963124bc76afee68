# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Log sources of the verify and guarded-stop roles (files, gateway, kubeconfig) and the polling wait.

The HTTP sources run against a small local HTTP server (a fake of the data-plane API and the gateway
for unit tests; the integration tests use the sandbox's real kube-apiserver).
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import joblogs


class FakeDataPlane:
    """Serves pod logs like the kubelet through the API (``timestamps=true``) and the gateway's logs route."""

    def __init__(self):
        self.logs = {}  # pod -> list of lines
        self.gateway = {}  # job -> list of {podName, logs}
        self.fail_first = 0
        self.drop_first = 0  # answers that break off in the middle of the log
        self.requests = []
        self.running = {}  # pod -> Event set when its container ends: a follow of a pod listed here streams until then
        self.gone_when_streamed = set()  # pods whose log goes (the pod is deleted) once a follow has sent it all

    def handler(self):
        plane = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                plane.requests.append((self.path, self.headers.get("Authorization")))
                if plane.fail_first:
                    plane.fail_first -= 1
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path = self.path.split("?")[0]
                if path.startswith("/api/v1/rlinf.io/v1alpha1/jobs/"):
                    job = path.split("/")[6]
                    body = json.dumps({"pods": plane.gateway.get(job, [])}).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                pod = path.split("/")[6]
                if pod not in plane.logs:
                    body = json.dumps({"kind": "Status", "reason": "NotFound", "code": 404}).encode()
                    self.send_response(404)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if plane.drop_first:
                    plane.drop_first -= 1
                    self.send_response(200)
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    self.wfile.write(b"2026-12-01T01:00:00.000000001Z half a log\n")
                    self.close_connection = True
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()  # no length: streamed until the connection closes
                since = (parse_qs(urlsplit(self.path).query).get("sinceTime") or [""])[0][:19]
                follows = "follow=true" in self.path and pod in plane.running
                sent = 0
                try:
                    while True:
                        done = not follows or plane.running[pod].is_set()  # before the lines: none is left behind
                        for i in range(sent, len(plane.logs[pod])):
                            stamp = "2026-12-01T01:%02d:%02d" % (i // 60 % 60, i % 60)
                            if stamp >= since:  # the kubelet's sinceTime, at whole seconds
                                self.wfile.write(("%s.000000001Z %s\n" % (stamp, plane.logs[pod][i])).encode())
                        sent = len(plane.logs[pod])
                        if done:
                            if follows and pod in plane.gone_when_streamed:
                                del plane.logs[pod]
                            break
                        self.wfile.flush()
                        plane.running[pod].wait(0.02)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client cut the follow
                self.close_connection = True

        return Handler


@pytest.fixture
def plane(tmp_path):
    fake = FakeDataPlane()
    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = "http://127.0.0.1:%d" % server.server_address[1]
    fake.kubeconfig = write_kubeconfig(tmp_path / "a100.kubeconfig", fake.url, "tok-a100")
    yield fake
    server.shutdown()
    server.server_close()


def write_kubeconfig(path, server, token):
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "dp",
                "clusters": [{"name": "dp", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "dp", "context": {"cluster": "dp", "user": "u"}}],
            }
        )
    )
    return str(path)


def test_files_source_reads_every_pod_of_the_job(tmp_path):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "demo-actor-0.log").write_text("Cluster is ready\n")
    (tmp_path / "demo" / "demo-rollout-1.log").write_text("worker\n")
    (tmp_path / "demo" / "notes.txt").write_text("ignored")
    logs = joblogs.read_logs("files", "demo", logs_dir=str(tmp_path))
    assert logs == {"demo-actor-0": "Cluster is ready\n", "demo-rollout-1": "worker\n"}
    assert joblogs.read_logs("files", "other", logs_dir=str(tmp_path)) == {}


def test_files_export_counts_lines_and_takes_times_from_the_lines(tmp_path):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "demo-actor-0.log").write_text(
        "2026-12-01 01:00:00,123 start\nno time here\n[2026-12-01T02:00:00Z] last"
    )
    (tmp_path / "out").mkdir()
    export = joblogs.export_logs("files", "demo", str(tmp_path / "out"), logs_dir=str(tmp_path))["demo-actor-0"]
    fields = export.fields()
    assert (fields["lines"], fields["source"], fields["truncated"]) == (3, "files", False)
    assert (fields["first_timestamp"], fields["last_timestamp"]) == ("2026-12-01 01:00:00,123", "2026-12-01T02:00:00Z")
    assert fields["timestamps_from"] == "log lines"
    assert export.text().endswith("[2026-12-01T02:00:00Z] last\n")


def test_kubeconfig_source_streams_each_pod_with_the_kubeconfig_token_and_strips_kubelet_times(plane, tmp_path):
    plane.logs["demo-actor-0"] = ["line %d" % i for i in range(2500)]
    out = tmp_path / "out"
    out.mkdir()
    exports = joblogs.export_logs(
        "kubeconfig", "demo", str(out), pod_names=["demo-actor-0", "demo-gone-0"], kubeconfig=plane.kubeconfig
    )
    assert list(exports) == ["demo-actor-0"]  # a pod that is not there (404) is no export
    export = exports["demo-actor-0"]
    assert export.text().splitlines() == plane.logs["demo-actor-0"]
    fields = export.fields()
    assert fields["lines"] == 2500 and fields["timestamps_from"] == "kubelet"
    assert fields["first_timestamp"] == "2026-12-01T01:00:00.000000001Z"
    assert fields["last_timestamp"] == "2026-12-01T01:41:39.000000001Z"
    path, auth = plane.requests[0]
    assert path == "/api/v1/namespaces/rlark-system/pods/demo-actor-0/log?container=main&timestamps=true"
    assert auth == "Bearer tok-a100"


def test_kubeconfig_reads_are_retried_like_every_api_call(plane, tmp_path):
    plane.logs["demo-actor-0"] = ["a", "b"]
    plane.fail_first = 2  # two 503 answers, then the log
    logs = joblogs.read_logs("kubeconfig", "demo", pod_names=["demo-actor-0"], kubeconfig=plane.kubeconfig)
    assert logs == {"demo-actor-0": "a\nb\n"}
    assert len(plane.requests) == 3


def test_a_read_broken_off_midway_starts_the_export_over(plane, tmp_path):
    plane.logs["demo-actor-0"] = ["a", "b"]
    plane.drop_first = 1
    logs = joblogs.read_logs("kubeconfig", "demo", pod_names=["demo-actor-0"], kubeconfig=plane.kubeconfig)
    assert logs == {"demo-actor-0": "a\nb\n"}, "the lines of the broken read must not stay in the export"
    assert len(plane.requests) == 2


def test_each_pod_is_read_from_the_cluster_its_task_runs_in(plane, tmp_path):
    plane.logs.update({"demo-actor-0": ["head"], "demo-rollout-0": ["rollout"]})
    other = write_kubeconfig(tmp_path / "h100.kubeconfig", plane.url, "tok-h100")
    clusters = joblogs.clusters_of(
        {
            "tasks": [
                {"metadata": {"name": "demo-actor", "namespace": "rlark-a100"}},
                {"metadata": {"name": "demo-rollout", "namespace": "rlark-h100"}},
            ],
            "pods": [],
        }
    )
    assert clusters == {"demo-actor": "a100", "demo-rollout": "h100"}
    exports = joblogs.export_logs(
        "kubeconfig",
        "demo",
        str(tmp_path),
        pod_names=["demo-actor-0", "demo-rollout-0"],
        clusters=clusters,
        kubeconfigs={"a100": plane.kubeconfig, "h100": other},
    )
    assert {pod: e.cluster for pod, e in exports.items()} == {"demo-actor-0": "a100", "demo-rollout-0": "h100"}
    tokens = {path.split("/")[6]: auth for path, auth in plane.requests}
    assert tokens == {"demo-actor-0": "Bearer tok-a100", "demo-rollout-0": "Bearer tok-h100"}


def test_a_cluster_without_a_kubeconfig_names_the_variable_and_the_cluster(tmp_path):
    with pytest.raises(joblogs.LogSourceError) as err:
        joblogs.export_logs(
            "kubeconfig",
            "demo",
            str(tmp_path),
            pod_names=["demo-actor-0"],
            clusters={"demo-actor": "h100"},
            kubeconfigs={"a100": "/nonexistent"},
        )
    assert "'h100'" in str(err.value) and "rlark_data_plane_kubeconfigs" in str(err.value)


def test_gateway_source_parses_rlarks_logs_endpoint_and_marks_the_1000_line_limit(plane, tmp_path):
    full = "\n".join("l%d" % i for i in range(1000))
    plane.gateway["demo"] = [
        {"taskName": "demo-actor", "podName": "demo-actor-0", "phase": "Running", "logs": full},
        {"taskName": "demo-rollout", "podName": "demo-rollout-0", "phase": "Running", "logs": "hi\n"},
    ]
    exports = joblogs.export_logs("gateway", "demo", str(tmp_path), gateway_url=plane.url + "/")
    assert exports["demo-actor-0"].fields()["lines"] == 1000 and exports["demo-actor-0"].truncated
    assert exports["demo-rollout-0"].text() == "hi\n" and not exports["demo-rollout-0"].truncated
    assert plane.requests[0][0] == "/api/v1/rlinf.io/v1alpha1/jobs/demo/logs"


def test_gateway_sentences_instead_of_lines_are_not_exported_as_log_text(plane, tmp_path):
    plane.gateway["demo"] = [
        {"taskName": "demo-actor", "podName": "demo-actor-0", "phase": "Pending",
         "logs": "pod is Pending, no logs available"},
        {"taskName": "demo-rollout", "podName": "demo-rollout-0", "phase": "Running",
         "logs": "error fetching logs: call server proxy: no agent connected for cluster h100"},
    ]  # fmt: skip
    exports = joblogs.export_logs("gateway", "demo", str(tmp_path), gateway_url=plane.url)
    for pod, reason in (("demo-actor-0", "pod is Pending"), ("demo-rollout-0", "error fetching logs: call server")):
        fields = exports[pod].fields()
        assert fields["lines"] == 0 and exports[pod].text() == "", pod
        assert fields["unavailable"].startswith(reason), fields


def test_gateway_errors_are_one_sentence():
    with pytest.raises(joblogs.LogSourceError, match="did not return logs for Job demo: "):
        joblogs.read_logs("gateway", "demo", gateway_url="http://127.0.0.1:9", timeout=1)


@pytest.mark.parametrize("source, kwargs", [("files", {}), ("gateway", {}), ("kubeconfig", {}), ("bogus", {})])
def test_missing_source_settings_are_reported(source, kwargs):
    with pytest.raises(joblogs.LogSourceError):
        joblogs.read_logs(source, "demo", pod_names=["demo-actor-0"], **kwargs)


def test_wait_for_logs_polls_until_the_signal_or_the_deadline():
    now = [0.0]
    texts = iter(["", "starting", "starting\nExecuting run script..."])

    def read():
        return {"demo-actor-0": next(texts)}

    def sleep(seconds):
        now[0] += seconds

    logs, timed_out = joblogs.wait_for_logs(
        read, "demo-actor-0", lambda t: "Executing" in t, 10, 1, clock=lambda: now[0], sleep=sleep
    )
    assert not timed_out and "Executing" in logs["demo-actor-0"] and now[0] == 2

    logs, timed_out = joblogs.wait_for_logs(
        lambda: {}, "demo-actor-0", lambda t: False, 3, 1, clock=lambda: now[0], sleep=sleep
    )
    assert timed_out and logs == {}


def test_only_the_current_container_is_trusted():
    from ansible_collections.rlark.ops.plugins.module_utils.joblogs import current_container

    old = "Starting Ray head node on a100-01 (RLINF_NODE_RANK=0)\nCluster is ready: 3/3\nExecuting run script...\n"
    new = "Starting Ray head node on a100-02 (RLINF_NODE_RANK=0)\nWaiting...\n"
    assert current_container(old + new) == new
    assert "Executing run script" not in current_container(old + new)
    assert current_container(old) == old
    assert current_container("no start line\n") == "no start line\n"
    real = "Ray runtime started.\nCluster is ready\nRay runtime started.\nstill starting\n"
    assert current_container(real) == "Ray runtime started.\nstill starting\n"


SECRET_LINES = [
    "export DB_PASS=hunter2",
    "GH_PAT=ghp_" + "A1b2C3d4E5" * 4,
    "key sk-proj-" + "Zq9XwV8uT7" * 3,
    "posting to https://hooks.slack.com/services/T000/B000/" + "xYz123AbC" * 3,
    "WANDB_KEY=" + "0123456789abcdef" * 2 + "01234567",
    "Authorization: Bearer abcdefgh12345678",
    "seen eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMe",
    "-----BEGIN RSA PRIVATE KEY-----",
    "aws AKIAABCDEFGHIJKLMNOP",
    "url postgres://trainer:s3cr3t@db:5432/runs",
    "cookie=abc",
    "sentry dsn=https://x@y/1",
    "slack xoxb-1234567890",
    "azure AccountKey=" + "A" * 20,
    "sas ?sig=abcdefghijklmnopqrstuv",
    "blob Zq9XwV8uT7mN2bL4kJ6hG1fD3sA5pO0iQ",
]


@pytest.mark.parametrize("line", SECRET_LINES)
def test_every_line_the_redaction_changes_passes_the_quick_check(line):
    from ansible_collections.rlark.ops.plugins.module_utils.redact import redact_text

    assert redact_text(line) != line, "not a secret by redact.py's rules: a useless example"
    assert joblogs.may_hold_secret(line)


def test_plain_training_lines_skip_the_full_redaction_and_secrets_are_masked_in_exports(tmp_path):
    assert not joblogs.may_hold_secret("Global Step: 12/100 | actor/loss 0.1234 | rollout/reward 0.98 | lr=0.0001")
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "demo-actor-0.log").write_text("step 1\nexport DB_PASS=hunter2\n")
    text = joblogs.read_logs("files", "demo", logs_dir=str(tmp_path))["demo-actor-0"]
    assert "hunter2" not in text and text.startswith("step 1\nexport DB_PASS=")
