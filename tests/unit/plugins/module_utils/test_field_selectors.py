# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Field selectors: what goes to the server, what is matched locally, and how."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import field_selectors as fs

JOB = {"metadata": {"name": "a"}, "spec": {"stopped": False}, "status": {"phase": "Running"}}


def test_only_name_and_namespace_go_to_the_server():
    server, local = fs.split(fs.parse(["metadata.name=a,status.phase==Running", "spec.stopped!=true"]))
    assert server == "metadata.name=a"
    assert local == [("status.phase", False, "Running"), ("spec.stopped", True, "true")]


@pytest.mark.parametrize(
    "selectors, hit",
    [
        (["status.phase=Running"], True),
        (["status.phase!=Running"], False),
        (["spec.stopped=false"], True),
        (["status.endTime="], True),  # a missing field is the empty string
        (["status.endTime!="], False),
        (["status.phase=Running", "spec.stopped=true"], False),
    ],
)
def test_local_match_semantics(selectors, hit):
    assert fs.matches(JOB, fs.parse(selectors)) is hit


def test_bad_selector_names_itself():
    with pytest.raises(fs.SelectorError, match=r"'status\.phase' is not"):
        fs.parse(["status.phase"])
