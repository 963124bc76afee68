# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_ckpt_tree in the worker: the action gives the module's result; off a local connection the module runs."""

import json
import os
from types import SimpleNamespace
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.module_utils.testing import patch_module_args
from ansible_collections.rlark.ops.plugins.action import rlark_ckpt_tree as action_mod
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import tree_task as task_mod
from ansible_collections.rlark.ops.plugins.modules import rlark_ckpt_tree


def module_result(args, capsys):
    with patch_module_args(dict(args)), pytest.raises(SystemExit):
        rlark_ckpt_tree.main()
    return json.loads(capsys.readouterr()[0])


def action(args, transport="local"):
    task = mock.MagicMock(args=dict(args), async_val=0, check_mode=False, diff=False, environment=[{}])
    connection = SimpleNamespace(transport=transport, _shell=mock.MagicMock())
    act = action_mod.ActionModule(task, connection, mock.MagicMock(check_mode=False, become=False), None, None, None)
    act._execute_module = mock.MagicMock(side_effect=AssertionError("ran the module"))
    return act


@pytest.fixture
def root(tmp_path):
    for step in ("global_step_2", "global_step_4"):
        os.makedirs(tmp_path / "ckpt" / step / "actor")
        (tmp_path / "ckpt" / step / "actor" / "model.pt").write_bytes(step.encode())
    return str(tmp_path / "ckpt")


def cases(root):
    earlier = {"exists": True, "kind": "local", "root": root, "files": {}}
    return [
        {"path": root},
        {"path": root, "sha256": True},
        {"path": root + "-missing"},
        {"path": root, "compare_to": earlier},
    ]


@pytest.mark.parametrize("index", range(4))
def test_the_action_in_the_worker_gives_the_module_result(root, capsys, index):
    args = cases(root)[index]
    here = action(args).run(task_vars={})
    module = module_result(args, capsys)
    for key in ("changed", "exists", "tree", "summary", "steps", "diff", "failed", "msg"):
        assert here.get(key) == module.get(key), key
    assert here["steps"] == ([] if index == 2 else ["global_step_2", "global_step_4"])
    assert ("diff" in here) is (index == 3)
    if index == 3:
        assert here["diff"]["same"] is False and "global_step_4/actor/model.pt" in here["diff"]["appeared"]


def test_a_missing_boto3_fails_naming_the_module_and_the_fix(monkeypatch):
    def no_boto3():
        raise ImportError("No module named 'boto3'")

    monkeypatch.setattr(task_mod, "import_boto3", no_boto3)
    result = action({"s3": {"bucket": "b", "prefix": "p"}}).run(task_vars={})
    assert result["failed"] and "rlark.ops.rlark_ckpt_tree" in result["msg"] and "pip install boto3" in result["msg"]


def test_path_and_s3_are_refused_like_the_module(root, capsys):
    args = {"path": root, "s3": {"bucket": "b"}}
    with pytest.raises(AnsibleActionFail, match="mutually exclusive"):
        action(args).run(task_vars={})
    assert "mutually exclusive" in module_result(args, capsys)["msg"]


def test_off_a_local_connection_the_module_runs(root):
    act = action({"path": root}, transport="ssh")
    act._execute_module = mock.MagicMock(return_value={"changed": False, "steps": ["from the node"]})
    assert act.run(task_vars={})["steps"] == ["from the node"]
