"""resume.yml on the live sandbox: a partial checkpoint is refused before anything exists; a chosen
complete step resumes at N+1 in a new Job while the original Job stays byte-identical."""

import json
import os
import re

import pytest
from playbook_support import Workload, all_output, without_server_fields

pytestmark = pytest.mark.sandbox


def test_resume_refuses_a_partial_checkpoint_then_resumes_a_chosen_step(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    try:
        assert w.play("migrate.yml").rc == 0
        w.wait_steps(3)
        stopped = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra={"rlark_jobs": [w.name]})
        assert stopped.rc == 0, stopped
        original = json.dumps(without_server_fields(w.info()["job"]), sort_keys=True)

        # A checkpoint cut off in the middle of its DCP shards (no .metadata, no full weights).
        partial = os.path.join(w.checkpoints, "global_step_999", "actor", "dcp_checkpoint")
        os.makedirs(partial)
        with open(os.path.join(partial, "__0_0.distcp"), "wb") as fh:
            fh.write(b"PK\x03\x04 cut off")
        refused = w.play("resume.yml", extra={"rlark_resume_source": w.name, "rlark_resume_step": 999})
        assert refused.rc != 0, refused
        assert "not complete" in all_output(refused) and "nothing was created" in all_output(refused)
        assert w.info(w.name + "-r999") is None, "a refused resume created a Job"

        complete = [s for s in w.steps() if s != 999]
        # A verification that cannot succeed in time (1 s) stops the NEW Job and touches nothing else.
        failing = w.name + "-fail"
        w.created.append(failing)
        failed = w.play(
            "resume.yml",
            extra={"rlark_resume_source": w.name, "rlark_resume_name": failing, "rlark_verify_timeout": 1},
        )
        assert failed.rc != 0, failed
        assert "failed verification and was stopped" in all_output(failed)
        assert w.info(failing)["job"]["spec"]["stopped"] is True and w.info(failing)["pods"] == []
        assert json.dumps(without_server_fields(w.info()["job"]), sort_keys=True) == original

        step = complete[1]  # not the newest: the chosen one
        new = w.name + "-again"
        w.created.append(new)
        run = w.play(
            "resume.yml", extra={"rlark_resume_source": w.name, "rlark_resume_step": step, "rlark_resume_name": new}
        )
        assert run.rc == 0, run
        resume_dir = "/data/rlinf/logs/%s/checkpoints/global_step_%d" % (w.name, step)
        with open(os.path.join(sandbox.logs_dir, new, "%s-actor-0.log" % new)) as fh:
            log = fh.read()
        assert "Resuming training from checkpoint directory %s." % resume_dir in log
        assert re.findall(r"Global Step: (\d+)/", log)[0] == str(step + 1)
        assert "Training from scratch" not in log
        verify = w.records_of("verify", job=new)[-1]["data"]
        assert verify["ok"] and verify["resume"]["first_step"] == step + 1, verify
        assert verify["next_checkpoint"]["latest_complete_step"] > step, verify
        record = w.records_of("resume")[-1]["data"]
        assert record["resume_dir"] == resume_dir and record["new_job"] == new
        assert w.records_of("original-job"), "the original Job YAML was not saved"

        after = w.info()
        assert json.dumps(without_server_fields(after["job"]), sort_keys=True) == original
        assert after["job"]["spec"]["stopped"] is True and after["pods"] == []
    finally:
        w.cleanup()
