# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Original-tree proof, directory-reuse guard, planned location and the review view of a resume copy."""

import os

from ansible_collections.rlark.ops.plugins.module_utils import resume
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dir_guard
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.tree import (
    local_tree,
    step_names,
    tree_diff,
)

HOST = {"kind": "hostPath", "node": "a100-01", "host_path": "/data/logs/e1/checkpoints", "container_root": "/d"}


def write(root, rel, data=b"x"):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def test_tree_diff_sees_change_vanish_and_appear(tmp_path):
    root = str(tmp_path / "checkpoints")
    write(root, "global_step_3/actor/a.pt", b"aaaa")
    kept = write(root, "global_step_3/actor/b.pt", b"bb")
    gone = write(root, "global_step_6/actor/c.pt")
    before = local_tree(root, sha256=True)
    assert step_names(before) == ["global_step_3", "global_step_6"]
    assert tree_diff(before, local_tree(root, sha256=True))["same"]
    stat = os.stat(kept)
    with open(kept, "wb") as fh:
        fh.write(b"BB")  # same size, same mtime restored: only the hash sees it
    os.utime(kept, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.remove(gone)
    write(root, "global_step_9/actor/d.pt")
    after = local_tree(root, sha256=True)
    diff = tree_diff(before, after)
    assert diff["changed"] == ["global_step_3/actor/b.pt"]
    assert diff["vanished"] == ["global_step_6/actor/c.pt"]
    assert diff["appeared"] == ["global_step_9", "global_step_9/actor", "global_step_9/actor/d.pt"]
    [found] = dir_guard.tree_findings(diff, HOST)
    assert found["id"] == "resume-original-changed" and found["severity"] == "error"
    assert "global_step_9/actor/d.pt" in found["message"] and "a100-01" in found["message"]
    # Without hashes the rewrite with the same size and mtime is invisible: the size/mtime proof is the default.
    assert tree_diff(local_tree(root), local_tree(root))["same"]


def test_missing_root_is_an_empty_tree(tmp_path):
    tree = local_tree(str(tmp_path / "nope"))
    assert tree["exists"] is False and tree["files"] == {} and step_names(tree) == []


def test_reuse_guard_is_an_error_unless_acknowledged():
    assert dir_guard.reuse_findings("j", [], HOST) == []
    [err] = dir_guard.reuse_findings("j", ["global_step_%d" % i for i in range(1, 8)], HOST)
    assert (err["id"], err["severity"]) == ("checkpoint-dir-reuse", "error")
    assert "and 2 more" in err["message"] and "rlark_allow_checkpoint_dir_reuse" in err["hint"]
    [warn] = dir_guard.reuse_findings("j", ["global_step_1"], HOST, allowed=True)
    assert warn["severity"] == "warning"


def job(script, node_in_status=False):
    pod = {
        "containers": [{"name": "main", "volumeMounts": [{"name": "d", "mountPath": "/data"}]}],
        "volumes": [{"name": "d", "hostPath": {"path": "/srv"}}],
    }
    task = {"name": "actor", "head": True, "runScript": script, "kubernetes": {"workload": {"template": {"spec": pod}}}}
    return {"metadata": {"name": "src"}, "spec": {"tasks": [task]}}


def test_planned_location_takes_the_proven_head_node():
    proof = {"tasks": [{"name": "actor", "matches": [{"name": "a100-01"}]}]}
    loc = dir_guard.planned_location(
        job("python t.py runner.logger.log_path=/data/l runner.logger.experiment_name=e"), proof=proof
    )
    assert loc["ok"] and loc["node"] == "a100-01" and loc["host_path"] == "/srv/l/e/checkpoints"
    assert not dir_guard.planned_location(
        job("python t.py runner.logger.log_path=/data/l runner.logger.experiment_name=e")
    )["ok"]


def test_resume_copy_writes_elsewhere_and_the_review_sees_the_source():
    src = job("python t.py runner.output_dir=/data/o runner.experiment_name=e1")
    new, found = resume.copy_job(src, "src-r4", resume_dir="/data/o/e1/checkpoints/global_step_4")
    assert found == []
    script = new["spec"]["tasks"][0]["runScript"]
    assert "++runner.experiment_name=src-r4" in script and "runner.experiment_name=e1" not in script
    view = resume.review_view(new, src)
    assert view["job"]["spec"]["tasks"][0]["runScript"] == src["spec"]["tasks"][0]["runScript"]
    # Anything else changed in the script stays visible to the review.
    new["spec"]["tasks"][0]["runScript"] += " actor.lr=9"
    assert "actor.lr=9" in resume.review_view(new, src)["job"]["spec"]["tasks"][0]["runScript"]
    assert view["resume_dirs"] == ["/data/o/e1/checkpoints/global_step_4"] and view["experiment"] == "src-r4"
    loc = dir_guard.planned_location(new, node="a100-01")
    assert loc["container_root"] == "/data/o/src-r4/checkpoints"
    # Only a log dir given: the experiment key is added next to it, and the review drops it again.
    src = job("python t.py runner.logger.log_path=/data/l")
    new, found = resume.copy_job(src, "src-r4", resume_dir="/data/l/x/checkpoints/global_step_4")
    assert (
        found == []
        and resume.review_view(new, src)["job"]["spec"]["tasks"][0]["runScript"]
        == "python t.py runner.logger.log_path=/data/l"
    )


def test_a_copy_of_a_resume_is_no_resume_of_its_grandparent():
    src = job("python t.py runner.logger.log_path=/data/l runner.logger.experiment_name=e")
    first, _found = resume.copy_job(src, "src-r4", resume_dir="/data/l/e/checkpoints/global_step_4")
    assert resume.resume_marks(first) == {
        "name": "src-r4",
        "source": "src",
        "step": 4,
        "resume_dir": "/data/l/e/checkpoints/global_step_4",
    }
    plain_copy, _found = resume.copy_job(first, "copy")
    assert resume.resume_marks(plain_copy) is None
    second, _found = resume.copy_job(first, "src-r4-r8", resume_dir="/data/l/src-r4/checkpoints/global_step_8")
    assert resume.resume_marks(second)["source"] == "src-r4"
