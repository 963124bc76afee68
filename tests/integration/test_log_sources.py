"""Log sources on the sandbox's real API paths (issue 13): data-plane kube-apiservers and RLark's gateway.

Outcomes are read independently of the collection: the trainer's own files and the stop record with
plain file reads and PyYAML, Job objects with the `kubernetes` package. The collection's readers are
what is under test.
"""

import os
import textwrap
from pathlib import Path

import pytest
import yaml
from helpers import run_playbook
from independent import custom_objects
from job_test_support import wait_until
from playbook_support import Workload
from refusals import findings, stopping_errors, task_result
from test_sandbox_data_plane import _task

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"
EXTRA_LINES = 2500  # per step: 8 steps give > 20,000 lines


def _long_head_log(m, p):
    env = m["roles"][0]["env"]
    env[:] = [e for e in env if e["name"] != "SIM_LOG_EXTRA_LINES"] + [
        {"name": "SIM_LOG_EXTRA_LINES", "value": str(EXTRA_LINES)}
    ]


def trainer_file(w, pod):
    with open(os.path.join(w.sandbox.logs_dir, w.name, pod + ".log")) as fh:
        return fh.read()


def stopped(sandbox, name):
    api = custom_objects(sandbox.kubeconfig)
    return bool(api.get_cluster_custom_object(GROUP, VERSION, "jobs", name)["spec"].get("stopped"))


@pytest.fixture
def long_running(sandbox, tmp_path):
    """The example workload whose head prints > 20,000 lines, verified through the kubeconfig source."""
    w = Workload(sandbox, tmp_path, mutate=_long_head_log)
    run = w.play("migrate.yml", extra=kube_source(sandbox))
    assert run.rc == 0, run
    yield w
    w.cleanup()


def kube_source(sandbox):
    return {"rlark_log_source": "kubeconfig", "rlark_data_plane_kubeconfigs": sandbox.data_plane_kubeconfigs}


def test_verify_runs_with_the_kubeconfig_source_end_to_end(long_running):
    w = long_running
    (record,) = w.records_of("verify")
    assert record["outcome"] == "verified", record
    assert "Executing run script..." in "\n".join(record["data"]["head_log_tail"]) or record["data"]["signals"]["ok"]
    assert record["data"]["signals"]["ok"] and not record["data"]["log_timed_out"]


def test_guarded_stop_gateway_export_is_truncated_and_refused_then_kubeconfig_exports_every_line(long_running):
    w = long_running
    head = "%s-actor-0" % w.name
    w.wait_steps(2, timeout=180)
    while trainer_file(w, head).count("\n") < 20000:
        w.wait_steps(len(w.steps()) + 1, timeout=180)

    refused = w.play(
        "guarded_stop.yml",
        kubeconfig=w.sandbox.kubeconfig_operator,
        extra={"rlark_jobs": [w.name], "rlark_log_source": "gateway", "rlark_gateway_url": w.sandbox.gateway_url},
    )
    assert refused.rc != 0, refused
    assert stopping_errors(refused) == [("log-export-truncated", "error")], findings(refused)
    stop = task_result(refused, "Check, record and stop the Job (one transaction)")["stop"]
    (gateway_export,) = [e for e in stop["log_exports"] if e["pod"] == head]
    # Two windows of 1000 lines (read before the gate and after its verdict), merged on their overlap; a trainer
    # that wrote more than a window in between leaves a gap line between them.
    assert (gateway_export["truncated"], gateway_export["source"]) == (True, "gateway"), gateway_export
    assert 1000 <= gateway_export["lines"] <= 2001, gateway_export
    assert not stopped(w.sandbox, w.name), "a truncated export must not stop the Job"

    run = w.play("guarded_stop.yml", kubeconfig=w.sandbox.kubeconfig_operator, extra=dict(kube_source(w.sandbox),
                 rlark_jobs=[w.name]))  # fmt: skip
    assert run.rc == 0, run
    assert stopped(w.sandbox, w.name)
    run_dir = os.path.join(w.records, w.name, sorted(os.listdir(os.path.join(w.records, w.name)))[-1])
    with open(os.path.join(run_dir, "log-%s.log" % head)) as fh:
        exported = fh.read()
    written = trainer_file(w, head)
    assert exported.count("\n") >= 20000
    assert exported == written, "the export differs from the trainer's own file"
    with open(os.path.join(run_dir, "stop.yml")) as fh:
        record = yaml.safe_load(fh)["data"]
    (export,) = [e for e in record["logs"]["exports"] if e["pod"] == head]
    assert export["source"] == "kubeconfig" and export["cluster"] == "a100" and not export["truncated"]
    assert export["lines"] == written.count("\n") and export["file"] == "log-%s.log" % head
    assert export["first_timestamp"] < export["last_timestamp"] and export["timestamps_from"] == "kubelet"
    # After the patch the log was followed until the trainer's container ended, not polled: a poll that began
    # before the trainer's last burst and a pod gone before the next lost it (CI, 2026-12-04).
    assert export["followed"] == "to the container's end", export
    assert record["logs"]["complete"] is True

    # Resume verification reads the new Job's head log through the kubeconfig source too.
    new = w.name + "-r"
    w.created.append(new)
    resumed = w.play("resume.yml", extra=dict(kube_source(w.sandbox), rlark_resume_source=w.name,
                     rlark_resume_step=record["global_step"], rlark_resume_name=new))  # fmt: skip
    assert resumed.rc == 0, resumed
    verify = w.records_of("verify", job=new)[-1]
    assert verify["outcome"] == "verified" and verify["data"]["resume"]["ok"], verify["data"]
    assert verify["data"]["resume"]["first_step"] == record["global_step"] + 1


PLAY = textwrap.dedent(
    """\
    - hosts: localhost
      gather_facts: false
      tasks:
        - name: Read the Job
          rlark.ops.rlark_job_info:
            name: "{{ job }}"
          register: info
        - name: Read every pod's log from its own cluster
          ansible.builtin.set_fact:
            logs: >-
              {{ lookup('rlark.ops.job_logs', job, source='kubeconfig', head_task='actor',
                        pods=info.resources[0].pods | rlark.ops.pod_names, kubeconfigs=kubeconfigs,
                        clusters=info.resources[0] | rlark.ops.log_clusters) }}
    """
)


def test_a_multi_cluster_job_reads_each_tasks_logs_from_its_own_cluster(sandbox, tmp_path):
    name = "mc-%s" % os.path.basename(str(tmp_path))[-6:].lower().replace("_", "")
    api = custom_objects(sandbox.kubeconfig)
    env = {"SIM_STEP_SECONDS": "0.2", "SIM_RAY_CHECK_SECONDS": "1"}
    body = {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "tasks": [
                _task("actor", "a100-01", True, env, "python train.py runner.max_steps=3 runner.save_interval=0"),
                _task("rollout", "h100-01", False, {}),
            ]
        },
    }
    api.create_cluster_custom_object(GROUP, VERSION, "jobs", body)
    try:
        head = os.path.join(sandbox.logs_dir, name, "%s-actor-0.log" % name)
        worker = os.path.join(sandbox.logs_dir, name, "%s-rollout-0.log" % name)
        wait_until(lambda: os.path.exists(head) and "Global Step: 3/3" in Path(head).read_text(), timeout=180)
        wait_until(lambda: os.path.exists(worker) and Path(worker).read_text().count("\n") >= 2, timeout=180)
        play = tmp_path / "read.yml"
        play.write_text(PLAY)
        run = run_playbook(
            str(play),
            {"job": name, "kubeconfigs": sandbox.data_plane_kubeconfigs},
            env=sandbox.env(),
            kubeconfig=sandbox.kubeconfig,
        )
        assert run.rc == 0, run
        logs = task_result(run, "Read every pod's log from its own cluster")["ansible_facts"]["logs"]["logs"]
        assert set(logs) == {"%s-actor-0" % name, "%s-rollout-0" % name}
        # The API serves the current container; the trainer's file appends every container (a finished run restarts).
        head_text, worker_text = logs["%s-actor-0" % name], logs["%s-rollout-0" % name]
        assert head_text.startswith("Starting Ray head node on a100-01") and "Global Step: " in head_text
        with open(head) as fh:
            assert head_text in fh.read()
        assert worker_text
        with open(worker) as fh:
            assert worker_text in fh.read()
    finally:
        api.delete_cluster_custom_object(GROUP, VERSION, "jobs", name)
