"""rlark-sim's start-up outlives an apiserver that does not answer yet (no API server: a fake client)."""

import pytest
import requests
from rlark_sim import __main__ as sim_main
from rlark_sim.kube import ApiError


class Kube:
    """Refuses the connection ``refusals`` times, then creates (or answers ``error``)."""

    def __init__(self, refusals, error=None):
        self.refusals, self.error, self.calls = refusals, error, []

    def create_if_missing(self, path, body):
        self.calls.append((path, body["metadata"]["name"]))
        if len(self.calls) <= self.refusals:
            raise requests.ConnectionError("[Errno 111] Connection refused")
        if self.error:
            raise self.error


def test_the_namespace_call_is_retried_while_the_apiserver_restarts():
    kube, slept = Kube(refusals=3), []
    sim_main.ensure_namespace(kube, "rlark-system", sleep=slept.append)
    assert kube.calls == [("/api/v1/namespaces", "rlark-system")] * 4
    assert slept == [0.5] * 3


def test_an_apiserver_gone_past_the_timeout_still_ends_the_start_up():
    kube = Kube(refusals=10**6)
    with pytest.raises(requests.ConnectionError):
        sim_main.ensure_namespace(kube, "rlark-system", timeout=0, sleep=lambda _s: None)
    assert len(kube.calls) == 1


def test_an_api_error_is_logged_not_retried():
    kube = Kube(refusals=0, error=ApiError(403, '{"message": "forbidden"}'))
    sim_main.ensure_namespace(kube, "rlark-system", sleep=lambda _s: pytest.fail("an answer is not retried"))
    assert len(kube.calls) == 1
