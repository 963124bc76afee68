"""guarded_stop.yml promises an operator can rely on: check mode, permissions first, selection, complete logs.

Outcomes are read with independent readers: the sandbox's own REST client for the Job, plain file reads
for the records and the trainer's log file.
"""

import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml
from kubeapi_for_tests import Api
from playbook_support import Workload, outcome_table, unique

pytestmark = pytest.mark.sandbox

JOBS = "/apis/rlinf.io/v1alpha1/jobs/"


def api(sandbox):
    return Api(sandbox.server, sandbox.admin_token, sandbox.ca_cert)


def job_view(sandbox, name):
    """spec and generation of the Job as the API server stores it."""
    job = api(sandbox).get(JOBS + name)
    return job["spec"], job["metadata"]["generation"]


def job_pods(sandbox, name):
    pods = api(sandbox).get("/apis/rlinf.io/v1alpha1/pods")["items"]
    return [p for p in pods if p["metadata"].get("labels", {}).get("rlark.io/task-name", "").startswith(name + "-")]


def files_under(path):
    return (
        sorted(os.path.join(d, f) for d, _dirs, names in os.walk(path) for f in names) if os.path.exists(path) else []
    )


def row(table, job):
    return next(line for line in table.splitlines() if line.startswith(job + " "))


def job_host_results(run, name):
    return run.task_results(host="rlark-job-" + name)


def test_check_mode_says_would_stop_writes_nothing_and_leaves_the_job(running):
    w = running
    before = job_view(w.sandbox, w.name)
    files_before = files_under(w.records)  # none: the fixture writes no record
    started = time.monotonic()
    run = w.play(
        "guarded_stop.yml", kubeconfig=w.sandbox.kubeconfig_operator, extra={"rlark_jobs": [w.name]}, check=True
    )
    elapsed = time.monotonic() - started
    print("guarded_stop.yml --check on one running Job: %.1fs" % elapsed)
    assert run.rc == 0, run
    line = row(outcome_table(run), w.name)
    assert " would stop " in line and "would stop at step" in line, line
    # Not a timing target (that is bench/test_bench_fleet_check.py, <= 30 s for 20 Jobs): a check mode that
    # waits for pods polls for 600 s; a loaded CI machine must not fail a correct run.
    assert elapsed < 300, "check mode waited (%.1fs): it must not wait for pods" % elapsed
    assert job_view(w.sandbox, w.name) == before, "check mode changed the Job"
    assert files_under(w.records) == files_before, "check mode wrote files"
    assert job_pods(w.sandbox, w.name), "check mode waited the pods away?"


def test_viewer_token_is_refused_before_any_file_is_written(running):
    w = running
    before = job_view(w.sandbox, w.name)
    files_before = files_under(os.path.join(w.records, w.name))  # none: the fixture writes no record
    run = w.play("guarded_stop.yml", kubeconfig=w.sandbox.kubeconfig_viewer, extra={"rlark_jobs": [w.name]})
    assert run.rc != 0, run
    line = row(outcome_table(run), w.name)
    assert " refused " in line and "rlark-viewer" in line and "patch jobs.rlinf.io" in line, line
    assert "docs/rbac.yml" in line, line
    checks = [
        r for task, r in job_host_results(run, w.name) if task == "Check that this identity may read and stop the Job"
    ]
    assert checks and checks[0].get("failed"), job_host_results(run, w.name)
    assert [(f["id"], f["severity"]) for f in checks[0]["findings"]] == [("permission-denied", "error")]
    assert files_under(os.path.join(w.records, w.name)) == files_before
    assert not [t for t, _r in job_host_results(run, w.name) if t.startswith("Check, record and stop")]
    assert job_view(w.sandbox, w.name) == before


def test_empty_selection_fails_naming_the_selection(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    selector = "rlark-ops-test/absent=%s" % unique("none")
    run = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra={"rlark_job_selectors": [selector]})
    assert run.rc != 0, run
    failed = [r for _t, r in run.task_results() if r.get("failed")]
    assert failed and "rlark_job_selectors=%s" % selector in failed[0]["msg"], failed
    allowed = w.play(
        "guarded_stop.yml",
        kubeconfig=sandbox.kubeconfig_operator,
        extra={"rlark_job_selectors": [selector], "rlark_allow_empty_selection": True},
    )
    assert allowed.rc == 0, allowed


def test_invalid_jmespath_is_one_sentence_naming_rlark_job_query(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    run = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra={"rlark_job_query": "[?job.x=='a'"})
    assert run.rc != 0, run
    failed = [r for _t, r in run.task_results() if r.get("failed")]
    assert len(failed) == 1 and failed[0]["msg"].startswith("rlark_job_query is not usable: invalid JMESPath"), failed
    assert json.dumps(run.data).count("rlark_job_query is not usable") == 1


def busy_loops(count=2):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _index in range(count)]


def test_exported_head_log_has_the_save_line_of_the_recorded_step_under_cpu_load(running):
    w = running
    hogs = busy_loops()
    try:
        run = w.play("guarded_stop.yml", kubeconfig=w.sandbox.kubeconfig_operator, extra={"rlark_jobs": [w.name]})
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert run.rc == 0, run
    assert " stopped " in row(outcome_table(run), w.name)
    stamp_dir = os.path.join(w.records, w.name, sorted(os.listdir(os.path.join(w.records, w.name)))[-1])
    with open(os.path.join(stamp_dir, "stop.yml")) as fh:
        record = yaml.safe_load(fh)["data"]
    step = record["global_step"]
    with open(os.path.join(stamp_dir, "log-%s-actor-0.log" % w.name)) as fh:
        exported = fh.read()
    assert "Saving checkpoint at step %d." % step in exported
    # Complete up to the pods' removal: every line the trainer wrote is in the export.
    with open(os.path.join(w.sandbox.logs_dir, w.name, "%s-actor-0.log" % w.name)) as fh:
        written = fh.read()
    assert exported == written
    assert record["outcome"] == "stopped" and record["identity"]["username"] == "rlark-operator"
    assert record["selection"]["jobs"] == [w.name] and record["collection_version"]
    assert record["logs"]["last_exported_line_seen_at"] and record["stop_patched_at"]
    (export,) = [e for e in record["logs"]["exports"] if e["pod"] == "%s-actor-0" % w.name]
    assert (export["source"], export["lines"], export["truncated"]) == ("files", len(written.splitlines()), False)
    assert not job_pods(w.sandbox, w.name), "Pod CRs remain after the stop"
    summaries = w.records_of("summary", job="guarded-stop-runs")
    assert summaries[-1]["data"]["selection"]["jobs"] == [w.name]
    assert [os.path.basename(os.path.dirname(p)) for p in summaries[-1]["data"]["stop_records"]] == [
        os.path.basename(stamp_dir)
    ]


def test_stop_at_the_next_checkpoint_states_the_lost_work(running):
    w = running
    # Two step directories: the first is complete (saves run one after another), so "the next checkpoint" is
    # one newer than a complete one (with none complete yet, the first complete one is the next).
    first = w.wait_steps(2)[-1]
    run = w.play(
        "guarded_stop.yml",
        kubeconfig=w.sandbox.kubeconfig_operator,
        extra={"rlark_jobs": [w.name], "rlark_stop_when": "next_checkpoint"},
    )
    assert run.rc == 0, run
    record = w.records_of("stop")[-1]["data"]
    assert record["global_step"] >= first, (record["global_step"], first)
    with open(os.path.join(w.sandbox.logs_dir, w.name, "%s-actor-0.log" % w.name)) as fh:
        logged = [int(m) for m in re.findall(r"Global Step: (\d+)/", fh.read())]
    assert record["lost_work"]["steps_after_checkpoint"] == max(logged) - record["global_step"], record["lost_work"]
    assert job_view(w.sandbox, w.name)[0]["stopped"] is True
    # Progress without retry noise: the wait reports what it waits for; no task looped with until/retries.
    results = job_host_results(run, w.name)
    # The wait and the stop are one call: the patch follows the gate's verdict within the same process.
    stops = [r for t, r in results if t == "Check, record and stop the Job (one transaction)" and r.get("gate")]
    assert stops, [t for t, _r in results]
    gate = stops[-1]["gate"]
    assert any("a complete checkpoint newer than global_step_" in line for line in gate["wait_log"]), gate
    assert gate["latest_complete_step"] == record["global_step"], (gate, record["global_step"])
    assert not [t for t, r in results if "attempts" in r], "a task retried with until/retries"
