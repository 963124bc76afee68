# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_runner / module_options / backoff: one client per task, one failure mapping, one auth list."""

import re

import pytest
import yaml
from ansible_collections.rlark.ops.plugins.doc_fragments.auth import ModuleDocFragment
from ansible_collections.rlark.ops.plugins.module_utils import backoff, kube, kube_auth, module_runner
from ansible_collections.rlark.ops.plugins.module_utils.findings import Refused, finding
from ansible_collections.rlark.ops.plugins.module_utils.module_options import AUTH_ARG_SPEC


class Failed(Exception):
    pass


class FakeModule:
    def __init__(self, params):
        self.params = params
        self.failed = None

    def log(self, message):
        pass

    def fail_json(self, **result):
        self.failed = result
        raise Failed()


class CountingClient:
    def __init__(self):
        self.api_calls, self.retries, self.closed = 3, 1, False

    def close(self):
        self.closed = True


def test_refusal_fails_with_its_findings_changed_and_the_call_counts(monkeypatch):
    client = CountingClient()
    monkeypatch.setattr(module_runner, "client_from_params", lambda params, timeout, log: client)
    module = FakeModule({"host": "https://h"})
    refused = Refused("Refusing to stop Job 'a'.", [finding("job-frozen", "Succeeded Jobs are frozen.")])
    refused.changed = True
    with pytest.raises(Failed), module_runner.api_client(module, timeout=5):
        raise refused
    assert module.failed["findings"][0]["id"] == "job-frozen"
    assert module.failed["findings"][0]["severity"] == "error"
    assert module.failed["msg"].startswith("Refusing to stop Job 'a'.") and "job-frozen" in module.failed["msg"]
    assert module.failed["changed"] is True
    assert (module.failed["api_calls"], module.failed["api_retries"]) == (3, 1)
    assert client.closed


def test_api_error_fails_with_the_parsed_status_and_the_client_closes(monkeypatch):
    client = CountingClient()
    monkeypatch.setattr(module_runner, "client_from_params", lambda params, timeout, log: client)
    module = FakeModule({})
    with pytest.raises(Failed), module_runner.api_client(module, timeout=5):
        raise kube.ApiError(403, "Forbidden", "jobs is forbidden", method="GET", path="/apis/x")
    assert module.failed["status"]["code"] == 403 and module.failed["changed"] is False
    assert "findings" not in module.failed and module.failed["api_calls"] == 3
    assert client.closed


def test_no_server_fails_before_any_call_without_a_traceback(monkeypatch):
    for name in kube_auth.AUTH_OPTIONS:
        monkeypatch.delenv("K8S_AUTH_" + name.upper(), raising=False)
    monkeypatch.setattr(kube_auth, "SERVICE_ACCOUNT_DIR", "/nonexistent")
    monkeypatch.setenv("HOME", "/nonexistent")
    module = FakeModule({})
    with pytest.raises(Failed), module_runner.api_client(module, timeout=5):
        pytest.fail("the block must not run without a client")
    assert module.failed["msg"].startswith("No API server") and module.failed["api_calls"] == 0


def test_helpers_that_own_their_client_report_its_counts():
    exc = kube.TransportError("Cannot reach the API server.")
    exc.counts = {"api_calls": 7, "api_retries": 6}
    result = module_runner.failure_result(exc)
    assert result["failed"] and result["api_calls"] == 7 and result["msg"] == "Cannot reach the API server."


def test_client_reads_only_the_auth_options():
    assert kube.auth_params({"host": "https://h", "name": "job", "state": "stopped"}) == dict(
        dict.fromkeys(kube_auth.AUTH_OPTIONS), host="https://h"
    )


def test_the_doc_fragment_documents_the_one_auth_list():
    documented = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert set(documented) == set(kube_auth.AUTH_OPTIONS) == set(AUTH_ARG_SPEC)
    for name, spec in kube_auth.AUTH_OPTION_SPECS.items():
        doc = documented[name]
        assert doc["type"] == spec["type"], name
        assert sorted(doc.get("aliases") or []) == sorted(spec.get("aliases") or []), name
        said = set(re.findall(r"E\(([A-Z0-9_]+)\)", " ".join(doc["description"])))
        assert said == set(spec["env"]), name
        assert AUTH_ARG_SPEC[name]["fallback"][1] == spec["env"]


@pytest.mark.parametrize("attempt", [0, 1, 3, 10])
def test_one_backoff_keeps_both_jitter_shapes(attempt):
    step = min(8.0, 0.25 * 2**attempt)
    assert backoff.backoff_delay(attempt, 0.25, 8.0, rand=lambda: 0.0, floor=0.5) == step / 2
    assert backoff.backoff_delay(attempt, 0.25, 8.0, rand=lambda: 1.0, floor=0.5) == step
    assert backoff.backoff_delay(attempt, 0.25, 8.0, rand=lambda: 0.0) == 0.0
    assert backoff.backoff_delay(attempt, 0.25, 8.0, rand=lambda: 0.5) == step / 2
