# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rlark.ops.query filter and the roles' data-step filters as Ansible calls them."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.rlark.ops.plugins.filter import checkpoints, placement
from ansible_collections.rlark.ops.plugins.filter.query import FilterModule as Query

QUERY = Query().filters()["query"]
FLOW = {
    **checkpoints.FilterModule().filters(),
    **placement.FilterModule().filters(),
}

RESOURCES = [
    {"job": {"metadata": {"name": "a", "labels": {"team": "rl"}}, "status": {"phase": "Running"}}},
    {"job": {"metadata": {"name": "b"}, "status": {"phase": "Stopped"}}},
]


def test_query_filter_result_and_assert():
    assert QUERY(RESOURCES, "[].job.metadata.name") == ["a", "b"]
    assert QUERY(RESOURCES, "[?job.status.phase=='Running']", **{"assert": True}) is True
    assert QUERY(RESOURCES, "[?job.status.phase=='Failed']", **{"assert": True}) is False


def test_query_filter_errors_are_filter_errors():
    with pytest.raises(AnsibleFilterError, match="invalid JMESPath"):
        QUERY(RESOURCES, "[?")
    with pytest.raises(AnsibleFilterError, match="unknown option"):
        QUERY(RESOURCES, "@", bogus=1)


def test_without_resume_override_strips_only_that_override():
    job = {"spec": {"tasks": [{"head": True, "runScript": "python t.py a=1 ++runner.resume_dir=/c/global_step_6 b=2"}]}}
    out = FLOW["without_resume_override"](job)
    assert out["resume_dirs"] == ["/c/global_step_6"]
    assert out["job"]["spec"]["tasks"][0]["runScript"] == "python t.py a=1 b=2"
    assert "resume_dir" in job["spec"]["tasks"][0]["runScript"], "the input must not be modified"


def test_expected_nodes_from_the_profile():
    profile = {
        "roles": [{"name": "actor", "global_matches": [{"name": "a100-01", "namespace": "rlark-a100"}]}, {"name": "x"}]
    }
    assert FLOW["expected_nodes"](profile) == {"actor": ["a100-01"]}
