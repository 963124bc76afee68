"""guarded_stop.yml on the live sandbox with the operator token: refusals, a clean stop, concurrency.

Refusals are asserted by the gate's finding id (refusals.py), and the Job's state after a run is read with
the sandbox's own client (independent.py), never with the collection's readers.
"""

import os
import re
import threading
import time

import pytest
import yaml
from fault_proxy import FaultProxy
from independent import get_job, job_pods
from playbook_support import Workload, outcome_table
from refusals import failed_task, task_result

pytestmark = pytest.mark.sandbox
STOP_TASK = "Check, record and stop the Job (one transaction)"
# The sandbox trainer writes a checkpoint every ~5 s (3 steps of 1 s, then a 2 s save): any moment is within
# a few seconds of a write. 20 s (not an hour) tells "a save is running now" from "written some time ago".
QUIET_DURING_SAVES = 20


def stop(w, extra=None):
    return w.play(
        "guarded_stop.yml",
        kubeconfig=w.sandbox.kubeconfig_operator,
        extra=dict({"rlark_jobs": [w.name]}, **(extra or {})),
    )


def _slow_saves(m, p):
    # A save takes 20 s (not 2 s): an unguarded stop started when a save starts cuts it off even on a
    # loaded machine, where the stop itself takes seconds to reach the controller.
    env = m["roles"][0]["env"]
    env[:] = [e for e in env if e["name"] != "SIM_SAVE_SECONDS"] + [{"name": "SIM_SAVE_SECONDS", "value": "20"}]


@pytest.fixture
def running_slow_saves(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path, mutate=_slow_saves)
    run = w.play("migrate.yml")
    assert run.rc == 0, run
    yield w
    w.cleanup()


def row(table, job):
    return next(line for line in table.splitlines() if line.startswith(job + " "))


def gate_problems(run):
    return [(p["id"], p["severity"], p.get("path", "")) for p in task_result(run, STOP_TASK)["gate"]["findings"]]


def refused_gate(run):
    """The gate result of a stop the transaction refused on its checkpoint verdict."""
    stop_task = task_result(run, STOP_TASK)
    assert stop_task["outcome"]["outcome"] == "refused" and "patched_at" not in stop_task["stop"], stop_task
    assert failed_task(run) == "Fail when any Job was refused or its stop failed (so a scheduler alerts)", run
    return stop_task["gate"]


def test_refused_while_a_save_is_recent_then_stopped_after_a_complete_save(running):
    w = running
    # Selected by a JMESPath expression over the rlark_job_info results instead of by name.
    refused = w.play(
        "guarded_stop.yml",
        kubeconfig=w.sandbox.kubeconfig_operator,
        extra={
            "rlark_job_query": "[?job.metadata.name=='%s' && job.status.phase=='Running']" % w.name,
            "rlark_gate_options": {"quiet_seconds": QUIET_DURING_SAVES},
            "rlark_save_window_seconds": 0,
        },
    )
    assert refused.rc != 0, refused
    assert "refused" in row(outcome_table(refused), w.name)
    gate = refused_gate(refused)
    # The newest step is the one being saved: its own findings say why (newest first, an older complete step
    # may be the one the gate reports on).
    newest = {s["step"]: s for s in gate["steps"]}[gate["newest_step"]]
    recent = [p for p in newest["findings"] if p["id"] == "write-too-recent"]
    assert [p["severity"] for p in recent] == ["error"], gate_problems(refused)
    ago = int(re.search(r"written (\d+) s ago", recent[0]["message"]).group(1))
    assert ago < QUIET_DURING_SAVES, recent[0]["message"]
    live = get_job(w.sandbox, w.name)
    assert not live["spec"].get("stopped") and job_pods(w.sandbox, w.name), "a refused stop touched the Job"
    assert not w.records_of("stop"), "a refused stop wrote a stop record"

    done = stop(w)
    assert done.rc == 0, done
    line = row(outcome_table(done), w.name)
    assert " stopped " in line, line
    assert get_job(w.sandbox, w.name)["spec"]["stopped"] is True
    assert job_pods(w.sandbox, w.name) == [], "Pod CRs remain after the stop"
    record = w.records_of("stop")[-1]["data"]
    for item in (
        "backend",
        "global_step",
        "rlinf_code",
        "images",
        "final_config",
        "job_yaml",
        "data_version",
        "checkpoint",
    ):
        assert record.get(item) not in (None, ""), item
    step = record["global_step"]
    assert record["checkpoint"]["container_path"].endswith("/%s/checkpoints/global_step_%d" % (w.name, step))
    assert record["data_version"]["version"] == w.manifest["data"]["version"]
    stamp_dir = os.path.join(w.records, w.name, sorted(os.listdir(os.path.join(w.records, w.name)))[-1])
    assert any(f.startswith("log-%s-actor-0" % w.name) for f in os.listdir(stamp_dir)), "logs not exported"
    with open(os.path.join(stamp_dir, "log-%s-actor-0.log" % w.name)) as fh:
        assert "Saving checkpoint at step %d." % step in fh.read()

    again = stop(w)
    assert again.rc == 0, again
    assert "already stopped" in row(outcome_table(again), w.name)
    assert sum(s["changed"] for s in again.stats.values()) == 0, again.stats


def proxy_kubeconfig(w, url, path):
    """The operator's kubeconfig with its server replaced by the (plain HTTP) proxy URL."""
    with open(w.sandbox.kubeconfig_operator) as fh:
        config = yaml.safe_load(fh)
    for entry in config["clusters"]:
        cluster = entry["cluster"]
        cluster["server"] = url
        for key in ("certificate-authority", "certificate-authority-data"):
            cluster.pop(key, None)
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_two_concurrent_guarded_stops_stop_the_job_once(running, tmp_path):
    """Both runs read the Job before either writes: the proxy holds each PATCH until both have arrived."""
    w = running
    w.wait_steps(2)
    # 25 s: below the client's 30 s request timeout, so a PATCH left without a partner is forwarded alone
    # (and the test fails on "no 409") instead of being re-sent behind the proxy's back.
    both_patched = threading.Barrier(2, timeout=25)
    unpaired = []

    def hold(method, path):
        if method == "PATCH" and path.endswith("/jobs/" + w.name):
            try:
                both_patched.wait()
            except threading.BrokenBarrierError:
                unpaired.append(path)

    with FaultProxy(w.sandbox.server, w.sandbox.ca_cert, [], hold=hold) as proxy:
        kubeconfig = proxy_kubeconfig(w, proxy.url, tmp_path / "kubeconfig-proxy")
        runs = [None, None]

        def go(i):
            runs[i] = w.play("guarded_stop.yml", kubeconfig=kubeconfig, extra={"rlark_jobs": [w.name]})

        threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert all(r.rc == 0 for r in runs), runs
    assert not unpaired, "the two runs' PATCHes did not overlap within 25 s"
    patches = [status for method, path, status in proxy.upstream if method == "PATCH"]
    # The conflict happened (409: the other run's precondition failed) and exactly one PATCH applied.
    assert patches.count(200) == 1 and 409 in patches and set(patches) <= {200, 409}, proxy.upstream
    outcomes = sorted(row(outcome_table(r), w.name).split()[1] for r in runs)
    assert outcomes == ["already", "stopped"], [outcome_table(r) for r in runs]
    loser = next(r for r in runs if row(outcome_table(r), w.name).split()[1] == "already")
    assert "stopped meanwhile by someone else" in row(outcome_table(loser), w.name)
    assert get_job(w.sandbox, w.name)["spec"]["stopped"] is True
    assert job_pods(w.sandbox, w.name) == []


def test_killed_save_is_refused(running_slow_saves):
    w = running_slow_saves
    log = os.path.join(w.sandbox.logs_dir, w.name, "%s-actor-0.log" % w.name)
    deadline = time.monotonic() + 180
    step = None
    while step is None:
        assert time.monotonic() < deadline, "no save at step >= 6 seen"
        lines = []
        if os.path.exists(log):
            with open(log) as fh:
                lines = fh.read().rstrip().splitlines()
        # The save of step N has started and its "Global Step: N" line (printed once saved) is not there yet.
        saving = re.match(r"Saving checkpoint at step (\d+)\.$", lines[-1]) if lines else None
        if saving and int(saving.group(1)) >= 6:
            step = int(saving.group(1))
        time.sleep(0.2)
    # An unguarded stop during that save (what the console does) kills it for good.
    killed = w.module("rlark_job", {"name": w.name, "state": "stopped"})
    assert killed.get("changed"), killed
    w.module("rlark_job", {"name": w.name, "state": "stopped", "wait": True})
    w.module("rlark_job", {"name": w.name, "state": "started"})
    refused = stop(w, {"rlark_save_window_seconds": 0})
    assert refused.rc != 0, refused
    assert "refused" in row(outcome_table(refused), w.name)
    gate = refused_gate(refused)
    # The reason is the cut-off save itself: the newest step is N and its verdict is incomplete with
    # required entries missing (the restarted trainer may be rewriting global_step_3 meanwhile).
    cut = {s["step"]: s for s in gate["steps"]}[step]
    assert gate["newest_step"] == step and gate["latest_complete_step"] != step, gate_problems(refused)
    assert cut["verdict"] == "incomplete", cut
    assert cut["reasons"][0].startswith("missing "), cut
    assert get_job(w.sandbox, w.name)["spec"].get("stopped") is not True, "a refused stop stopped the Job"
