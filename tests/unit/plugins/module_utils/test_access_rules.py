# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The permission check pinned where a careless change slipped through the unit suite (issue 26's mutants)."""

import pytest
import yaml
from ansible_collections.rlark.ops.plugins.module_utils import access, module_runner
from ansible_collections.rlark.ops.plugins.module_utils.kube import ApiError
from ansible_collections.rlark.ops.plugins.module_utils.kube_errors import ConfigError
from ansible_collections.rlark.ops.plugins.modules import rlark_access_check


class Reviews:
    """The API server's answers to SelfSubjectReview and SelfSubjectAccessReview, from a table."""

    def __init__(self, allowed=(), username="alice", review_error=None, reasons=None):
        self.allowed = set(allowed)
        self.username = username
        self.review_error = review_error
        self.reasons = reasons or {}
        self.asked = []
        self.closed = 0
        self.api_calls = 0
        self.retries = 0

    def request(self, method, path, body=None, content_type=None, **kw):
        self.api_calls += 1
        if path == access.SELF_REVIEWS:
            if self.review_error is not None:
                raise ApiError(self.review_error, "Forbidden", "no")
            return {"status": {"userInfo": {"username": self.username}}}
        attrs = body["spec"]["resourceAttributes"]
        self.asked.append(attrs)
        key = (attrs["verb"], attrs["resource"])
        return {"status": {"allowed": key in self.allowed, "reason": self.reasons.get(key, "")}}

    def close(self):
        self.closed += 1


EVERYTHING = {(verb, plural) for verb, plural, _named in access.GUARDED_STOP_CHECKS}


@pytest.mark.parametrize("code,unknown", [(402, False), (403, True), (404, True), (405, False), (500, False)])
def test_whoami_is_unknown_only_when_the_review_is_forbidden_or_absent(code, unknown):
    client = Reviews(review_error=code)
    if unknown:
        assert access.whoami(client) == {"username": access.UNKNOWN_IDENTITY, "groups": []}
    else:
        with pytest.raises(ApiError):
            access.whoami(client)


def test_only_the_job_itself_is_asked_about_by_name():
    client = Reviews(EVERYTHING)
    access.check_job_access(client, "demo")
    assert [(a["verb"], a["resource"], a.get("name")) for a in client.asked] == [
        ("get", "jobs", "demo"),
        ("list", "tasks", None),
        ("list", "pods", None),
        ("patch", "jobs", "demo"),
    ]


def test_a_denial_names_the_identity_the_job_and_the_rbac_file():
    client = Reviews(EVERYTHING - {("patch", "jobs")}, reasons={("patch", "jobs"): "no RBAC rule"})
    out = access.check_job_access(client, "demo")
    assert [(d["verb"], d["resource"], d["name"], d["reason"]) for d in out["denied"]] == [
        ("patch", "jobs.rlinf.io", "demo", "no RBAC rule")
    ]
    [found] = out["findings"]
    assert found["message"] == "alice may not patch jobs.rlinf.io/demo."
    assert found["hint"] == "Bind the ClusterRole rlark-ops-guarded-stop from docs/rbac.yml to this identity."


def test_describe_names_the_object_only_when_there_is_one():
    assert access.describe("get", "jobs", name="demo") == "get jobs.rlinf.io/demo"
    assert access.describe("list", "pods") == "list pods.rlinf.io"


def run(monkeypatch, client, job="demo"):
    seen = {}

    def connect(params, timeout=60, log=None):
        seen["timeout"] = timeout
        if isinstance(client, Exception):
            raise client
        return client

    monkeypatch.setattr(module_runner, "client_from_params", connect)
    params = {"job": job, "timeout": 7}
    return module_runner.run_core(params, access.access_check, params["timeout"]), seen


def test_access_check_run_fails_on_a_denial_and_changes_nothing(monkeypatch):
    client = Reviews(EVERYTHING - {("patch", "jobs")})
    out, seen = run(monkeypatch, client)
    assert (out["failed"], out["changed"], seen["timeout"], client.closed) == (True, False, 7, 1)
    assert "alice may not patch jobs.rlinf.io on Job demo" in out["msg"]
    out, _seen = run(monkeypatch, Reviews(EVERYTHING))
    assert (out.get("failed"), out["changed"], "msg" in out) == (None, False, False)


def test_access_check_run_turns_client_errors_into_a_failed_result(monkeypatch):
    client = Reviews(review_error=500)
    out, _seen = run(monkeypatch, client)
    assert (out["failed"], out["status"]["code"], client.closed) == (True, 500, 1)
    out, _seen = run(monkeypatch, ConfigError("no kubeconfig"))
    assert (out["failed"], out["msg"], out["api_calls"]) == (True, "no kubeconfig", 0)


def test_the_timeout_default_is_the_documented_one():
    documented = yaml.safe_load(rlark_access_check.DOCUMENTATION)["options"]["timeout"]["default"]
    assert access.ACCESS_CHECK_SPEC["timeout"]["default"] == documented == 60
