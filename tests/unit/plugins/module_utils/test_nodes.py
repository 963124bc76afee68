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
