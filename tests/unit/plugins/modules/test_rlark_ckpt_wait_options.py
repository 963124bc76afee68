# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rlark_ckpt_wait_options action: the options of one checkpoint wait (owner: checkpoint/wait_args)."""

from unittest import mock

import pytest
from ansible_collections.rlark.ops.plugins.action import rlark_ckpt_wait_options as action_mod
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.wait_args import wait_args

HOST = {"ok": True, "kind": "hostPath", "node": "n1", "host_path": "/data/ckpt", "s3": None}
S3 = {"kind": "s3", "s3": {"bucket": "b", "prefix": "p/", "region": None, "secret": "x"}}


def run(task_vars=None, **args):
    task = mock.MagicMock(async_val=0, check_mode=True, diff=False)
    task.args = args
    action = action_mod.ActionModule(task, mock.MagicMock(), mock.MagicMock(), None, mock.MagicMock(), None)
    return action.run(task_vars=task_vars or {})


def test_wait_args():
    once = wait_args(HOST, node_root="/mnt/n1", wait_timeout=600)
    assert once["path"] == "/mnt/n1/data/ckpt" and once["wait_timeout"] == 0 and "s3" not in once
    waits = wait_args(HOST, after_step=4, wait_timeout=5, wait_sleep=2, options={"runner": "x", "no": 1})
    assert waits["wait_timeout"] == 4 and waits["after_step"] == 4 and waits["runner"] == "x" and "no" not in waits
    assert wait_args(HOST, newest_complete=True, wait_timeout=3, wait_sleep=1)["wait_timeout"] == 3
    assert wait_args(S3)["s3"] == {"bucket": "b", "prefix": "p/"}
    with pytest.raises(ValueError, match="no checkpoint storage"):
        wait_args({"kind": "pvc"})
    with pytest.raises(ValueError, match=r"wait_sleep must be positive, not 0\.0"):
        wait_args(HOST, wait_sleep=0)


def test_a_backup_is_read_below_the_node_root_unless_listed_on_the_backup_host():
    on_node = wait_args(HOST, node_root="/mnt/n1", backup={"path": "/backup/demo", "host": "", "s3": {}})
    assert on_node["backup"]["path"] == "/mnt/n1/backup/demo"
    listed = wait_args(HOST, node_root="/mnt/n1", backup={"path": "/backup/demo", "listing": {"steps": [1]}})
    assert listed["backup"]["path"] == "/backup/demo"
    s3 = wait_args(HOST, backup={"s3": {"bucket": "bk", "prefix": "c/", "secret_key": "x", "region": ""}})
    assert s3["backup"]["s3"] == {"bucket": "bk", "prefix": "c/"}
    assert "backup" not in wait_args(HOST, backup={"path": "", "s3": {}})


def test_the_action_gives_the_options_and_fails_with_one_sentence():
    result = run(location=HOST, node_root="/mnt/n1", step=40, integrity=False, integrity_store=None, options=None)
    assert result["changed"] is False and not result.get("failed")
    assert result["decision"] == {
        "path": "/mnt/n1/data/ckpt", "step": 40, "after_step": -1, "newest_complete": False, "wait_timeout": 0.0,
        "wait_sleep": 2.0, "integrity": "off", "integrity_store": "file",
    }  # fmt: skip
    refused = run(location=S3, backup={"path": "/backup/demo"})
    assert refused["failed"] is True and refused["msg"] == (
        "rlark_checkpoint_backup_* is for hostPath checkpoints; this one is in object storage already: unset the "
        "backup variables for it"
    )


INVENTORY = {
    "hostvars": {
        "controller": {},
        "gpu-a": {"rlark_node_name": "n1", "rlark_node_root": "/mnt/n1"},
        "gpu-b": {"rlark_node_name": "n2", "rlark_node_root": "/mnt/n2"},
        "10.0.0.9": {},
    },
    "groups": {"all": ["controller", "gpu-a", "gpu-b", "10.0.0.9"], "rlark_nodes": ["10.0.0.9"]},
}


def test_the_node_host_of_a_hostpath_gives_the_root_and_is_returned():
    found = run(INVENTORY, location=HOST, find_node_host=True, node_root="/ignored")
    assert found["host"] == "gpu-a" and found["decision"]["path"] == "/mnt/n1/data/ckpt"
    # Only the hosts named (and group rlark_nodes) may be the Node's.
    on_b = run(INVENTORY, location=dict(HOST, node="n2"), find_node_host=True, node_hosts=["gpu-b"])
    assert on_b["host"] == "gpu-b" and on_b["decision"]["path"] == "/mnt/n2/data/ckpt"
    by_group = run(INVENTORY, location=dict(HOST, node={"name": "10.0.0.9"}), find_node_host=True)
    assert by_group["host"] == "10.0.0.9" and by_group["decision"]["path"] == "/data/ckpt"
    # Object storage has no node host; without find_node_host the root is the one given.
    assert run(INVENTORY, location=S3, find_node_host=True)["host"] is None
    given = run(INVENTORY, location=HOST, node_root="/given")
    assert given["host"] is None and given["decision"]["path"] == "/given/data/ckpt"


def test_a_node_without_an_inventory_host_fails_naming_it_and_what_to_set():
    expected = (
        "The checkpoint lies on node n1, which has no inventory host (set rlark_node_name on a host, or add it to "
        "group rlark_nodes)."
    )
    refused = run(INVENTORY, location=HOST, find_node_host=True, node_hosts=["gpu-b"])
    assert refused["failed"] is True and refused["msg"] == expected and "host" not in refused
    assert run({}, location=HOST, find_node_host=True)["msg"] == expected
