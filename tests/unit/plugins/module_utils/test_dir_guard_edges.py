# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The directory-reuse guard, the original-tree proof and the planned location, value by value
(issue 26: mutants of checkpoint/dir_guard.py)."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dir_guard

HOST = {"kind": "hostPath", "node": "a100-01", "host_path": "/data/e/checkpoints", "container_root": "/d/e/checkpoints"}
S3 = {"kind": "s3", "s3": {"bucket": "b", "prefix": "runs/e/checkpoints"}, "container_root": "/mnt/e/checkpoints"}
SCRIPT = "python t.py runner.logger.log_path=/data/l runner.logger.experiment_name=e"


def job(script=SCRIPT, volume=None):
    pod = {
        "containers": [{"name": "main", "volumeMounts": [{"name": "d", "mountPath": "/data"}]}],
        "volumes": [volume or {"name": "d", "hostPath": {"path": "/srv"}}],
    }
    task = {"name": "actor", "head": True, "runScript": script, "kubernetes": {"workload": {"template": {"spec": pod}}}}
    return {"metadata": {"name": "src"}, "spec": {"tasks": [task]}}


def steps(n):
    return ["global_step_%d" % i for i in range(1, n + 1)]


def test_where():
    assert dir_guard._where(HOST) == "node a100-01:/data/e/checkpoints"
    assert dir_guard._where(S3) == "s3://b/runs/e/checkpoints"
    assert dir_guard._where({"kind": "s3"}) == "s3://None/"
    assert dir_guard._where({"kind": "s3", "s3": {"bucket": "b", "prefix": None}}) == "s3://b/"
    assert dir_guard._where({}) == "node None:None"


def test_reuse_finding_whole():
    assert dir_guard.reuse_findings("j", [], HOST) == []
    assert dir_guard.reuse_findings("j", None, HOST) == []
    (err,) = dir_guard.reuse_findings("j", ["global_step_1"], HOST)
    assert err == {
        "id": "checkpoint-dir-reuse",
        "severity": "error",
        "path": "spec.tasks[head].runScript",
        "message": "Job j would write its checkpoints to /d/e/checkpoints (node a100-01:/data/e/checkpoints), which "
        "already holds global_step_1 written by another run: RLinf overwrites same-numbered steps there and mixes "
        "two runs in one directory.",
        "hint": "Give the run its own runner.logger.experiment_name (or runner.experiment_name), or set "
        "rlark_allow_checkpoint_dir_reuse=true to acknowledge writing there (recorded).",
    }
    assert dir_guard.reuse_findings("j", ["global_step_1"], S3, allowed=True)[0]["severity"] == "warning"
    assert "(s3://b/runs/e/checkpoints)" in dir_guard.reuse_findings("j", ["global_step_1"], S3)[0]["message"]


@pytest.mark.parametrize(
    "n,shown",
    [
        (5, "global_step_1, global_step_2, global_step_3, global_step_4, global_step_5 written"),
        (6, "global_step_1, global_step_2, global_step_3, global_step_4, global_step_5 and 1 more written"),
        (8, "global_step_4, global_step_5 and 3 more written"),
    ],
)
def test_reuse_lists_five_steps(n, shown):
    (err,) = dir_guard.reuse_findings("j", steps(n), HOST)
    assert shown in err["message"]
    assert "global_step_6" not in err["message"]


def test_tree_findings_whole():
    assert dir_guard.tree_findings({"same": True, "changed": ["x"]}, HOST) == []
    diff = {"same": False, "changed": ["c1"], "vanished": [], "appeared": ["a1", "a2"]}
    (found,) = dir_guard.tree_findings(diff, HOST)
    assert found == {
        "id": "resume-original-changed",
        "severity": "error",
        "path": "original checkpoints",
        "message": "The original run's checkpoints at node a100-01:/data/e/checkpoints are not as they were before "
        "the new Job started (changed: c1; appeared: a1, a2).",
        "hint": "The new Job was stopped; find what else writes there before resuming again. "
        "Nothing was deleted or restored.",
    }
    (nothing,) = dir_guard.tree_findings({}, S3)
    assert nothing["message"].endswith(
        "at s3://b/runs/e/checkpoints are not as they were before the new Job started ()."
    )


def test_tree_findings_list_up_to_the_limit():
    names = ["v%d" % i for i in range(7)]
    msg = dir_guard.tree_findings({"vanished": names[:5]}, HOST)[0]["message"]
    assert "(vanished: v0, v1, v2, v3, v4)." in msg
    msg = dir_guard.tree_findings({"vanished": names[:6]}, HOST)[0]["message"]
    assert "(vanished: v0, v1, v2, v3, v4 and 1 more)." in msg
    msg = dir_guard.tree_findings({"vanished": names, "changed": ["c"]}, HOST, limit=2)[0]["message"]
    assert "(changed: c; vanished: v0, v1 and 5 more)." in msg


def test_planned_location_head_node():
    by_proof = dir_guard.planned_location(job(), proof={"tasks": [{"name": "actor", "matches": [{"name": "n1"}]}]})
    assert (by_proof["ok"], by_proof["node"], by_proof["reason"]) == (True, "n1", "")
    by_name = dir_guard.planned_location(job(), proof={"tasks": [{"name": "actor", "matches": ["n2", "n3"]}]})
    assert (by_name["ok"], by_name["node"]) == (True, "n2")
    given = dir_guard.planned_location(job(), proof={"tasks": [{"name": "actor", "matches": ["n2"]}]}, node="n9")
    assert (given["ok"], given["node"]) == (True, "n9")
    given = dir_guard.planned_location(job(), node="n9")
    assert (given["ok"], given["node"], given["reason"]) == (True, "n9", "")
    other = dir_guard.planned_location(job(), proof={"tasks": [{"name": "rollout", "matches": ["n2"]}]})
    assert other["ok"] is False and other["node"] is None
    assert other["reason"] == "no proven head node holds hostPath /srv/l/e/checkpoints"
    empty = dir_guard.planned_location(job(), proof={"tasks": [{"name": "actor", "matches": [{}]}]})
    assert empty["ok"] is False and empty["node"] is None


def test_planned_location_not_on_a_host_path_is_left_as_located():
    pvc = job(volume={"name": "d", "persistentVolumeClaim": {"claimName": "c"}})
    out = dir_guard.planned_location(pvc, node="n9")
    assert out["kind"] == "pvc" and out["node"] is None
    none = dir_guard.planned_location(None)
    assert none["ok"] is False and none["kind"] == "unknown" and none["node"] is None


def test_reuse_counts_every_step_past_five():
    (err,) = dir_guard.reuse_findings("j", steps(11), HOST)
    assert "global_step_5 and 6 more written" in err["message"]


def test_where_compares_the_kind_by_value():
    """A location read back from YAML or JSON (the role passes it through Jinja) holds its own strings."""
    kind = "".join(["s", "3"])
    assert kind == "s3" and kind is not S3["kind"]
    assert dir_guard._where(dict(S3, kind=kind)) == "s3://b/runs/e/checkpoints"


def test_planned_location_in_the_container_gets_no_node():
    """A checkpoint directory on no volume is located in the container: a node changes nothing."""
    inside = dir_guard.planned_location(
        job("python t.py runner.logger.log_path=/tmp/l runner.logger.experiment_name=e"), node="n9"
    )
    assert inside["kind"] == "container" and inside["node"] is None and inside["ok"] is False
