# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nodes.fetch_node_matches: one list per distinct selector, sequential or on parallel connections."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import kube, nodes
from rlark_fake_api import FakeApi, make_client, status


def fleet():
    api = FakeApi()
    for i in range(6):
        labels = {"p": str(i % 3), "h": "n%d" % i}
        api.add("nodes", {"metadata": {"name": "n%d" % i, "namespace": "rlark-%d" % (i % 2), "labels": labels}})
    return api


@pytest.mark.parametrize("connections", [1, 2, 4])
def test_one_list_per_distinct_selector(connections):
    api = fleet()
    client = make_client(api)
    got, rv = nodes.fetch_node_matches(client, ["p=1", "p=1", "p in (0,1)", "h=n5", "p=9"], connections)
    assert sorted(got) == ["h=n5", "p in (0,1)", "p=1", "p=9"]
    assert [n["metadata"]["name"] for n in got["p=1"]] == ["n4", "n1"]  # API list order: namespace, then name
    assert len(got["p in (0,1)"]) == 4 and got["p=9"] == []
    assert client.api_calls == 4  # forked connections' calls are folded back
    assert rv == str(api.rv)


def test_an_error_in_a_lane_is_raised():
    api = fleet()
    api.fail_next(status(403, "Forbidden", "nodes.rlinf.io is forbidden"))
    client = make_client(api)
    with pytest.raises(kube.ApiError) as err:
        nodes.fetch_node_matches(client, ["p=1", "p=2"], connections=2)
    assert err.value.code == 403


def test_nothing_to_fetch():
    client = make_client(FakeApi())
    assert nodes.fetch_node_matches(client, []) == ({}, None)
    assert client.api_calls == 0


# ------------------------------------------------------------ a re-proven Job's own pods
def pod(name, task, node, phase="Running", ns="rlark-a100"):
    labels = {"rlark.io/task-name": task}
    return {"metadata": {"name": name, "namespace": ns, "labels": labels}, "status": {"phase": phase, "node": node}}


def test_own_usage_is_template_requests_times_live_pods_per_node():
    requests = {"j-actor": {"nvidia.com/gpu": 8}, "j-rollout": {"nvidia.com/gpu": 2}, "j-env": {}}
    pods = [
        pod("p1", "j-actor", "a100-01"),
        pod("p2", "j-rollout", "a100-02"),
        pod("p3", "j-rollout", "a100-02"),
        pod("p4", "j-rollout", "a100-03", phase="Succeeded"),  # terminal: no longer in status.used
        pod("p5", "j-rollout", None, phase="Pending"),  # not placed yet
        pod("p6", "other-rollout", "a100-02"),  # another Job's pod
        pod("p7", "j-env", "a100-02"),  # no accelerator request
        pod("p8", "j-actor", "a100-01", ns="rlark-h100"),
    ]
    assert nodes.own_usage(requests, pods) == {
        ("rlark-a100", "a100-01"): {"nvidia.com/gpu": 8},
        ("rlark-a100", "a100-02"): {"nvidia.com/gpu": 4},
        ("rlark-h100", "a100-01"): {"nvidia.com/gpu": 8},
    }


def test_read_own_usage_of_an_absent_job_is_one_call():
    client = make_client(FakeApi())
    assert nodes.read_own_usage(client, "nope") == {}
    assert client.api_calls == 1


def test_read_own_usage_of_a_live_job():
    api = FakeApi()
    gpu = {"containers": [{"name": "main", "resources": {"requests": {"nvidia.com/gpu": "4"}}}]}
    template = {"name": "rollout", "kubernetes": {"workload": {"replicas": 2, "template": {"spec": gpu}}}}
    api.add("jobs", {"metadata": {"name": "j"}, "spec": {"tasks": [template]}})
    api.add("pods", pod("p1", "j-rollout", "a100-02"))
    api.add("pods", pod("p2", "j-rollout", "a100-03"))
    api.add("pods", pod("p3", "k-rollout", "a100-03"))
    client = make_client(api)
    assert nodes.read_own_usage(client, "j") == {
        ("rlark-a100", "a100-02"): {"nvidia.com/gpu": 4},
        ("rlark-a100", "a100-03"): {"nvidia.com/gpu": 4},
    }
    assert client.api_calls == 2
