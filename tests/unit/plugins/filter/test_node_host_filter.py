# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark.ops.node_host reads only the hosts it is given (plus group rlark_nodes): in guarded_stop.yml
every Job is an in-memory host, and reading each one's hostvars for every Job grew with Jobs squared."""

from ansible_collections.rlark.ops.plugins.filter.placement import node_host


class ReadHostvars(dict):
    """hostvars that remember which hosts were read (each read puts together all of a host's variables)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read = []

    def __getitem__(self, host):
        self.read.append(host)
        return super().__getitem__(host)


def hostvars():
    return ReadHostvars(
        {
            "node-a100-01": {"rlark_node_name": "a100-01", "rlark_node_cluster": "rlark-a100"},
            "edge-01": {"ansible_host": "10.0.0.9"},
            "rlark-job-ppo": {"rlark_stop_job": "ppo"},
            "rlark-job-sac": {"rlark_stop_job": "sac"},
        }
    )


GROUPS = {"all": ["node-a100-01", "edge-01", "rlark-job-ppo", "rlark-job-sac"], "rlark_nodes": ["edge-01"]}


def test_only_the_given_hosts_and_group_rlark_nodes_are_read():
    hv = hostvars()
    assert node_host("a100-01", hv, GROUPS, ["node-a100-01"]) == "node-a100-01"
    assert sorted(hv.read) == ["edge-01", "node-a100-01"]


def test_group_rlark_nodes_still_maps_a_node_by_name_when_hosts_are_given():
    hv = hostvars()
    assert node_host("edge-01", hv, GROUPS, ["node-a100-01"]) == "edge-01"
    assert "rlark-job-ppo" not in hv.read


def test_a_node_on_no_given_host_has_none():
    assert node_host("a100-01", hostvars(), GROUPS, ["rlark-job-ppo"]) is None


def test_without_hosts_every_host_is_read():
    hv = hostvars()
    assert node_host("a100-01", hv, GROUPS) == "node-a100-01"
    assert sorted(hv.read) == sorted(GROUPS["all"])
