# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A server that never answers fails fast and is named; one that answered once keeps its retries."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import kube
from rlark_fake_api import FakeApi, FakeClock, make_client

JOBS = kube.API_PREFIX + "/jobs"


def test_a_refused_connection_fails_within_the_connect_timeout_naming_the_server():
    api, clock = FakeApi(), FakeClock()
    api.fail_next(ConnectionRefusedError(111, "Connection refused"), times=1000)
    client = make_client(api, clock=clock, timeout=120.0)
    with pytest.raises(kube.TransportError) as err:
        client.get(JOBS)
    waited = clock.now - 1000.0
    assert kube.DEFAULT_CONNECT_TIMEOUT - 1.0 <= waited <= kube.DEFAULT_CONNECT_TIMEOUT
    text = str(err.value)
    assert text.count("https://fake.invalid:6443") == 1 and text.count("rlark_kubeconfig") == 1
    assert "ConnectionRefusedError" in text and "rlark_connect_timeout" in text


def test_the_connect_timeout_is_configurable():
    api, clock = FakeApi(), FakeClock()
    api.fail_next(ConnectionRefusedError(111, "Connection refused"), times=1000)
    client = make_client(api, clock=clock, timeout=120.0, connect_timeout=3.0)
    with pytest.raises(kube.TransportError):
        client.get(JOBS)
    assert clock.now - 1000.0 <= 3.0


def test_a_server_that_answered_keeps_the_whole_deadline_for_dropped_connections():
    api, clock = FakeApi(), FakeClock()
    client = make_client(api, clock=clock, timeout=120.0)
    client.get(JOBS)
    api.fail_next(ConnectionResetError(104, "reset"), times=8)
    client.get(JOBS)
    assert clock.now - 1000.0 > kube.DEFAULT_CONNECT_TIMEOUT


@pytest.mark.parametrize(
    "params,env,expected",
    [({}, None, 10.0), ({"connect_timeout": 4}, "9", 4.0), ({}, "9", 9.0), ({"connect_timeout": None}, "2.5", 2.5)],
)
def test_connect_timeout_from_option_then_environment(monkeypatch, params, env, expected):
    monkeypatch.delenv(kube.CONNECT_TIMEOUT_ENV, raising=False)
    if env:
        monkeypatch.setenv(kube.CONNECT_TIMEOUT_ENV, env)
    assert kube.connect_timeout_of(params) == expected


@pytest.mark.parametrize("value", ["soon", 0, -1])
def test_a_bad_connect_timeout_names_the_playbook_variable(value):
    with pytest.raises(kube.ConfigError, match="rlark_connect_timeout"):
        kube.connect_timeout_of({"connect_timeout": value})


def test_no_server_names_the_playbook_variable(monkeypatch):
    for name in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")
    with pytest.raises(kube.ConfigError) as err:
        kube.resolve_auth({})
    assert str(err.value).count("-e rlark_kubeconfig=PATH") == 1
