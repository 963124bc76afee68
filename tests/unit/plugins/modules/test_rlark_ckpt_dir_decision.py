# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rlark_ckpt_dir_decision action: the checkpoint-directory guard's report (owner: checkpoint/dir_guard)."""

from unittest import mock

from ansible_collections.rlark.ops.plugins.action import rlark_ckpt_dir_decision as action_mod

WHERE = {"kind": "hostPath", "node": "a100-01", "host_path": "/data/rlinf/logs/demo/checkpoints", "ok": True,
         "container_root": "/data/rlinf/logs/demo/checkpoints"}  # fmt: skip
STEPS = ["global_step_%d" % n for n in (10, 20, 30, 40, 50, 60, 70)]


def judge(**args):
    task = mock.MagicMock(async_val=0, check_mode=True, diff=False)
    task.args = dict({"job": "demo", "location": WHERE}, **args)
    action = action_mod.ActionModule(task, mock.MagicMock(), mock.MagicMock(), None, mock.MagicMock(), None)
    result = action.run(task_vars={})
    assert result["changed"] is False and not result.get("failed") and result["refusal"] == ""
    return result["decision"]


def test_another_runs_steps_are_refused_with_checkpoint_dir_reuse():
    report = judge(tree={"steps": STEPS, "files": 7})
    assert report["job"] == "demo" and report["checked"] is True and report["location"] == WHERE
    assert report["steps"] == STEPS and report["acknowledged"] is False
    [found] = report["findings"]
    assert (found["id"], found["severity"]) == ("checkpoint-dir-reuse", "error")
    assert found["message"].startswith(
        "Job demo would write its checkpoints to /data/rlinf/logs/demo/checkpoints (node a100-01:/data/rlinf/logs/"
        "demo/checkpoints), which already holds global_step_10, global_step_20, global_step_30, global_step_40, "
        "global_step_50 and 2 more written by another run"
    ), found["message"]
    assert "rlark_allow_checkpoint_dir_reuse=true" in found["hint"]


def test_the_acknowledged_reuse_is_a_warning():
    report = judge(tree={"steps": STEPS[:1]}, allow_reuse="true")
    assert report["acknowledged"] is True
    assert [(f["id"], f["severity"]) for f in report["findings"]] == [("checkpoint-dir-reuse", "warning")]


def test_an_empty_or_unlisted_directory_has_no_finding():
    assert judge(tree={"steps": []}) == dict(judge(), checked=True)
    unlisted = judge(tree={"skipped": True})
    assert unlisted == {"job": "demo", "checked": False, "location": WHERE, "steps": [], "acknowledged": False,
                        "findings": []}  # fmt: skip
