"""guarded_stop.yml's own checks of a Job, before any gate: a Succeeded Job that is not stopped is refused
(RLark ignores a stop of it, nothing is patched), and once its spec.stopped is true it is "already stopped",
whatever its phase. The Job is set up and read back with the sandbox's own client (independent of the collection).
"""

import job_test_support as support
import pytest
from helpers import run_playbook
from independent import GROUP, get_job
from job_test_support import demo_job, unique, wait_until
from kubeapi_for_tests import Api
from playbook_support import outcome_table
from refusals import task_result

pytestmark = pytest.mark.sandbox
cleanup = support.cleanup


def stop(sandbox, name, records):
    return run_playbook(
        "playbooks/guarded_stop.yml",
        extra_vars={"rlark_jobs": [name], "rlark_launch_manifest": "", "rlark_records_dir": str(records)},
        kubeconfig=sandbox.kubeconfig_operator,
    )


def row(run, name):
    return next(line for line in outcome_table(run).splitlines() if line.startswith(name + " "))


def test_succeeded_job_is_refused_then_already_stopped_once_stopped(sandbox, cleanup, tmp_path):
    name = unique("gsown")
    cleanup.append(name)
    api = Api(sandbox.server, sandbox.admin_token, sandbox.ca_cert)
    try:
        api.call("POST", GROUP + "/jobs", demo_job(name))
        api.merge_patch("%s/jobs/%s/status" % (GROUP, name), {"status": {"phase": "Succeeded"}})
        wait_until(lambda: (get_job(sandbox, name).get("status") or {}).get("phase") == "Succeeded", timeout=30)

        refused = stop(sandbox, name, tmp_path / "records")
        assert refused.rc != 0, refused
        assert row(refused, name).split()[1] == "refused", outcome_table(refused)
        assert "is Succeeded: RLark ignores every stop of a Succeeded or Failed Job" in row(refused, name)
        result = task_result(refused, "Check, record and stop the Job (one transaction)")
        assert [(f["id"], f["severity"]) for f in result["outcome"]["findings"]] == [("job-terminal-phase", "error")]
        assert get_job(sandbox, name)["spec"].get("stopped") is not True  # nothing was patched

        api.merge_patch("%s/jobs/%s" % (GROUP, name), {"spec": {"stopped": True}})
        again = stop(sandbox, name, tmp_path / "records")
        assert again.rc == 0, again
        assert row(again, name).split()[1:3] == ["already", "stopped"], outcome_table(again)
    finally:
        api.close()


def test_a_missing_job_is_refused_by_name_without_a_host_pattern_warning(sandbox, tmp_path):
    name = unique("gsmissing")
    run = stop(sandbox, name, tmp_path / "records")
    assert run.rc != 0, run
    assert row(run, name).split()[1] == "refused" and "no such Job" in row(run, name), outcome_table(run)
    printed = run.stdout + run.stderr
    assert "Could not match supplied host pattern" not in printed, printed[-2000:]
