"""Records of a guarded stop and a resume attempt hold every item the runbooks ask for, and no secret.

The Job is created the way a console user would (not through migrate.yml, whose review refuses
secrets): the rendered example Job plus a token in the head's env and in a Hydra override.
"""

import os
import sys

import pytest
from helpers import ROOT
from playbook_support import Workload

sys.path.insert(0, os.path.join(ROOT, ".build", "collections"))
from ansible_collections.rlark.ops.plugins.module_utils.preflight import preflight

pytestmark = pytest.mark.sandbox

TOKEN = "hf_Zq8Lr2Vt9Xw4Ys7Bn3Kd6Mp1Fg5Hj0Ca"
OVERRIDE_SECRET = "sk-live-51Hf9d2LkQ8vN3xR7tY0pW6mZ4aB"


def test_stop_and_resume_records_hold_every_item_and_no_secret(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    result = preflight(w.manifest, w.profile)
    assert result["ok"], result["findings"]
    job = result["job"]
    head = job["spec"]["tasks"][0]
    head["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": "HF_TOKEN", "value": TOKEN}
    )
    head["runScript"] += " ++logger.wandb.api_key=%s" % OVERRIDE_SECRET
    try:
        created = w.module("rlark_job", {"definition": job, "wait": True})
        assert created.get("changed"), created
        w.wait_steps(2)

        stop = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra={"rlark_jobs": [w.name]})
        assert stop.rc == 0, stop
        record = w.records_of("stop")[-1]["data"]
        # Runbook 000: backend, global step, code ref, image + digest, redacted final config, Job YAML,
        # data version, full checkpoint path (and the exported logs next to it).
        assert record["backend"] == "fsdp" and isinstance(record["global_step"], int)
        assert record["rlinf_code"]["ref"] == w.manifest["code"]["ref"]
        assert all(i["digest"] and "confirmed" in i["digest_status"] for i in record["images"])
        assert record["final_config"]["hydra"]["config_name"] == w.manifest["hydra"]["config_name"]
        assert record["job_yaml"]["metadata"]["name"] == w.name
        assert record["data_version"]["version"] == w.manifest["data"]["version"]
        assert record["checkpoint"]["container_path"].endswith("global_step_%d" % record["global_step"])
        assert record["checkpoint"]["stored_at"].startswith("node a100-01:")
        assert record["checkpoint"]["files"] > 0 and record["checkpoint"]["bytes"] > 0

        resume = w.play("resume.yml", extra={"rlark_resume_source": w.name})
        assert resume.rc != 0, "a copy carrying a plain-text token must be refused by the review"
        failed = [r.get("msg", "") for _task, r in resume.task_results() if r.get("failed")]
        assert failed and "secret" in str(failed[-1]).lower(), failed
        assert w.info(w.name + "-r%d" % record["global_step"]) is None
        assert w.records_of("original-job"), "the original Job YAML was not saved"

        leaked = []
        for base, _dirs, files in os.walk(w.records):
            for name in files:
                with open(os.path.join(base, name)) as fh:
                    text = fh.read()
                leaked += [name for secret in (TOKEN, OVERRIDE_SECRET) if secret in text]
        assert not leaked, "secrets in records: %s" % leaked
        # What the operator sees (task names, messages, the summary) carries no secret either; raw API
        # objects in registered results (shown only with -v) are the API's own data.
        for run in (stop, resume):
            for task, result in run.task_results():
                shown = str(result.get("msg", "")) + task
                assert TOKEN not in shown and OVERRIDE_SECRET not in shown, task
    finally:
        w.cleanup()
