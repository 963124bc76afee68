# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Log sources of the verify and guarded-stop roles (files, gateway) and the polling wait."""

import json

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import joblogs


def test_files_source_reads_every_pod_of_the_job(tmp_path):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "demo-actor-0.log").write_text("Cluster is ready\n")
    (tmp_path / "demo" / "demo-rollout-1.log").write_text("worker\n")
    (tmp_path / "demo" / "notes.txt").write_text("ignored")
    logs = joblogs.read_logs("files", "demo", logs_dir=str(tmp_path))
    assert logs == {"demo-actor-0": "Cluster is ready\n", "demo-rollout-1": "worker\n"}
    assert joblogs.read_logs("files", "other", logs_dir=str(tmp_path)) == {}


def test_gateway_source_parses_rlarks_logs_endpoint():
    seen = []

    def fetch(url):
        seen.append(url)
        body = {"pods": [{"taskName": "demo-actor", "podName": "demo-actor-0", "phase": "Running", "logs": "hi"}]}
        return json.dumps(body).encode()

    assert joblogs.read_logs("gateway", "demo", gateway_url="http://gw:8080/", fetch=fetch) == {"demo-actor-0": "hi"}
    assert seen == ["http://gw:8080/api/v1/rlinf.io/v1alpha1/jobs/demo/logs"]


def test_gateway_errors_are_one_sentence():
    def fetch(url):
        raise OSError("connection refused")

    with pytest.raises(joblogs.LogSourceError, match="did not return logs for Job demo: connection refused"):
        joblogs.read_logs("gateway", "demo", gateway_url="http://gw", fetch=fetch)


@pytest.mark.parametrize("source, kwargs", [("files", {}), ("gateway", {}), ("kubeconfig", {}), ("bogus", {})])
def test_missing_source_settings_are_reported(source, kwargs):
    with pytest.raises(joblogs.LogSourceError):
        joblogs.read_logs(source, "demo", **kwargs)


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
