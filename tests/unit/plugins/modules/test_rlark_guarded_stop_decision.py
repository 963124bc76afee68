# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rlark_guarded_stop_decision action and its owner (module_utils/guarded_stop: selection, outcomes): the
guarded-stop playbook's selection, a refusal's outcome in the role's rescue, and the run's summary."""

from unittest import mock

import pytest
from ansible_collections.rlark.ops.plugins.action import rlark_guarded_stop_decision as action_mod
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop import outcomes, selection

RESOURCES = [
    {"job": {"metadata": {"name": "a", "labels": {"team": "rl"}}, "status": {"phase": "Running"}}},
    {"job": {"metadata": {"name": "b"}, "status": {"phase": "Stopped"}}},
]
FINDING = {"id": "gate-incomplete", "severity": "error", "message": "global_step_6 is not complete"}


def run(args, check_mode=False):
    task = mock.MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = check_mode
    task.diff = False
    task.action = "rlark.ops.rlark_guarded_stop_decision"
    action = action_mod.ActionModule(
        task, mock.MagicMock(), mock.MagicMock(check_mode=check_mode), None, mock.MagicMock(), None
    )
    return action.run(task_vars={})


def names(resources):
    return [r["job"]["metadata"]["name"] for r in resources]


@pytest.mark.parametrize(
    "expression, chosen",
    [
        ("", ["a", "b"]),
        ("[?job.status.phase=='Running']", ["a"]),
        ("[?job.metadata.labels.team=='rl'].job.metadata.name", ["a"]),
        ("[?job.status.phase=='Failed']", []),
    ],
)
def test_select_jobs_accepts_items_or_names(expression, chosen):
    assert names(selection.select_jobs(RESOURCES, expression)) == chosen


def test_select_jobs_by_names_then_expression():
    assert names(selection.select_jobs(RESOURCES, "", ["b"])) == ["b"]
    assert selection.select_jobs(RESOURCES, "[?job.status.phase=='Running']", ["b"]) == []
    assert len(selection.select_jobs(RESOURCES, "", [])) == 2


def test_query_problem_names_the_variable_once():
    msg = selection.query_problem([], "[?job.metadata.name=='x'")
    assert msg.count("rlark_job_query") == 1 and "JMESPath" in msg
    assert selection.query_problem([], "[?job.metadata.name=='x']") == ""


def test_empty_selection_message_names_what_was_set():
    msg = selection.empty_selection_message([], ["team=rl"], "[?x]")
    assert "rlark_job_selectors=team=rl" in msg and "rlark_job_query=[?x]" in msg
    assert "rlark_allow_empty_selection" in msg
    assert "(nothing given)" in selection.empty_selection_message()


def test_select_keeps_the_asked_names_no_job_has_and_goes_on():
    decided = selection.select(RESOURCES, ["b", "ghost", "ghost"], [], "")
    assert names(decided["selected"]) == ["b"] and decided["unknown"] == ["ghost"] and decided["refusal"] == ""
    # Only unknown names: no Job is selected, yet the run goes on to refuse them as "no such Job" in the summary.
    assert selection.select(RESOURCES, ["ghost"])["refusal"] == ""


def test_select_refuses_an_unusable_query_before_selecting():
    decided = selection.select(RESOURCES, ["a"], [], "[?job.x=='a'")
    assert decided["refusal"].startswith("rlark_job_query is not usable: invalid JMESPath") and not decided["selected"]


def test_select_refuses_an_empty_selection_unless_allowed():
    expression = "[?job.status.phase=='Failed']"
    refused = selection.select(RESOURCES, [], ["team=rl"], expression)
    assert refused["refusal"] == selection.empty_selection_message([], ["team=rl"], expression)
    assert selection.select(RESOURCES, [], ["team=rl"], expression, allow_empty=True)["refusal"] == ""


def test_the_select_phase_fails_with_its_one_sentence_in_check_mode_too():
    failed = run({"phase": "select", "candidates": RESOURCES, "query": "[?job.x=='a'"}, check_mode=True)
    assert failed["failed"] is True and failed["changed"] is False
    assert failed["msg"].startswith("rlark_job_query is not usable") and "decision" not in failed
    empty = run({"phase": "select", "candidates": [], "selectors": ["team=x"]})
    assert empty["failed"] and "rlark_job_selectors=team=x" in empty["msg"]
    allowed = run({"phase": "select", "candidates": [], "selectors": ["team=x"], "allow_empty": "true"})
    assert not allowed.get("failed") and allowed["decision"]["selected"] == [] and allowed["changed"] is False
    picked = run({"phase": "select", "candidates": RESOURCES, "jobs": ["a", "c"]}, check_mode=True)
    assert names(picked["decision"]["selected"]) == ["a"] and picked["decision"]["unknown"] == ["c"]


def test_reported_counts_a_silent_host_as_refused():
    out = outcomes.reported([{"job": "a", "outcome": "stopped"}, {}], ["a", "b"])
    assert out[0]["outcome"] == "stopped" and out[1] == {
        "job": "b",
        "outcome": "refused",
        "reason": "the checks did not finish (see the failed task above)",
    }
    with pytest.raises(ValueError, match="1 outcomes for 2 Jobs"):
        outcomes.reported([{}], ["a", "b"])


def test_the_summary_phase_refuses_unknown_names_and_silent_hosts():
    stopped = {"job": "a", "outcome": "stopped", "step": 6, "checkpoint": "/c/global_step_6", "record": "/r/a/s.yml"}
    result = run({"phase": "summary", "outcomes": [stopped, {}], "jobs": ["a", "b"], "unknown": ["ghost"]})
    summary = result["decision"]
    assert result["changed"] is False and not result.get("failed") and result["refusal"] == ""
    assert summary == outcomes.summary([stopped, {}], ["a", "b"], ["ghost"])
    assert summary["refused"] == ["b", "ghost"] and summary["ok"] is False and summary["stop_records"] == ["/r/a/s.yml"]
    rows = dict((line.split()[0], line) for line in summary["table"].splitlines()[1:-1])
    assert "no such Job" in rows["ghost"] and "the checks did not finish" in rows["b"]
    assert "checkpoint /c/global_step_6" in rows["a"]
    broken = run({"phase": "summary", "outcomes": [{}], "jobs": ["a", "b"]})
    assert broken["failed"] and "1 outcomes for 2 Jobs" in broken["msg"]


def test_the_refused_phase_keeps_the_finding_and_words_check_mode():
    failed = {"failed": True, "msg": "Refusing to stop demo: global_step_6 is not complete", "findings": [FINDING]}
    live = {"job": {"metadata": {"name": "demo"}, "spec": {"stopped": False}}}
    args = {"phase": "refused", "name": "demo", "failed": failed, "live": live, "reread": {"resources": [live]}}
    refused = run(args, check_mode=True)["decision"]
    assert refused["outcome"] == "refused" and refused["reason"] == "would refuse: " + failed["msg"]
    assert [(f["id"], f["severity"]) for f in refused["findings"]] == [("gate-incomplete", "error")]
    assert run(args)["decision"]["reason"] == failed["msg"]


def test_the_refused_phase_tells_a_stop_made_meanwhile():
    before = {"job": {"spec": {"stopped": False}}}
    after = {"resources": [{"job": {"spec": {"stopped": True}}}]}
    args = {"phase": "refused", "name": "demo", "failed": {"msg": "pods stayed"}, "live": before, "reread": after}
    meanwhile = run(args)["decision"]
    assert meanwhile["outcome"] == "already stopped" and meanwhile["job"] == "demo"
    assert meanwhile["reason"] == "stopped meanwhile by someone else; this run found: pods stayed"
    stopped_before = run(dict(args, live={"job": {"spec": {"stopped": True}}}))["decision"]
    assert stopped_before["outcome"] == "refused"
    assert run(dict(args, failed={}, reread={"failed": True}))["decision"]["reason"] == "failed"
