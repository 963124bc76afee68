"""migrate.yml refuses a checkpoint directory that holds another run's steps (finding checkpoint-dir-reuse).

The other run's steps are plain files on the node's hostPath folder; Jobs are counted with the
kubernetes client, not the collection.
"""

import os

import pytest
from independent import custom_objects
from playbook_support import Workload, all_output

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"


def job_names(sandbox):
    api = custom_objects(sandbox.kubeconfig)
    return sorted(j["metadata"]["name"] for j in api.list_cluster_custom_object(GROUP, VERSION, "jobs")["items"])


def guard_report(run):
    [report] = [r["decision"] for task, r in run.task_results() if task == "Judge the directory"]
    return report


def test_migrate_onto_another_runs_steps_is_refused_unless_acknowledged(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    try:
        other = os.path.join(w.checkpoints, "global_step_40", "actor")
        os.makedirs(other)
        with open(os.path.join(other, "model.pt"), "wb") as fh:
            fh.write(b"written by an earlier run with the same experiment name")
        before = job_names(sandbox)

        refused = w.play("migrate.yml")
        assert refused.rc != 0, refused
        report = guard_report(refused)
        assert [(f["id"], f["severity"]) for f in report["findings"]] == [("checkpoint-dir-reuse", "error")], report
        out = all_output(refused)
        assert "error     checkpoint-dir-reuse" in out and "already holds global_step_40" in out, out[-3000:]
        assert "rlark_allow_checkpoint_dir_reuse=true" in out
        assert w.name not in job_names(sandbox) and job_names(sandbox) == before

        # The explicit acknowledgement turns it into a recorded warning (check mode: still nothing created).
        allowed = w.play("migrate.yml", extra={"rlark_allow_checkpoint_dir_reuse": True}, check=True)
        assert allowed.rc == 0, allowed
        report = guard_report(allowed)
        assert report["acknowledged"] is True and report["steps"] == ["global_step_40"], report
        assert [(f["id"], f["severity"]) for f in report["findings"]] == [("checkpoint-dir-reuse", "warning")]
        assert job_names(sandbox) == before
        assert os.listdir(w.checkpoints) == ["global_step_40"], "the guard never touches the directory"
    finally:
        w.cleanup()
