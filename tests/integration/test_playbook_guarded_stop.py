"""guarded_stop.yml on the live sandbox with the operator token: refusals, a clean stop, concurrency."""

import os
import re
import threading
import time

import pytest
from playbook_support import all_output, outcome_table

pytestmark = pytest.mark.sandbox


def stop(w, extra=None):
    return w.play(
        "guarded_stop.yml",
        kubeconfig=w.sandbox.kubeconfig_operator,
        extra=dict({"rlark_jobs": [w.name]}, **(extra or {})),
    )


def row(table, job):
    return next(line for line in table.splitlines() if line.startswith(job + " "))


def test_refused_while_a_save_is_recent_then_stopped_after_a_complete_save(running):
    w = running
    # Selected by a JMESPath expression over the rlark_job_info results instead of by name.
    refused = w.play(
        "guarded_stop.yml",
        kubeconfig=w.sandbox.kubeconfig_operator,
        extra={
            "rlark_job_query": "[?job.metadata.name=='%s' && job.status.phase=='Running']" % w.name,
            "rlark_gate_options": {"quiet_seconds": 3600},
            "rlark_save_window_seconds": 0,
        },
    )
    assert refused.rc != 0, refused
    assert "refused" in row(outcome_table(refused), w.name)
    assert "write-too-recent" in outcome_table(refused) or "quiet" in outcome_table(refused)
    live = w.info()
    assert not live["job"]["spec"].get("stopped") and live["pods"], "a refused stop touched the Job"
    assert not w.records_of("stop"), "a refused stop wrote a stop record"

    done = stop(w)
    assert done.rc == 0, done
    line = row(outcome_table(done), w.name)
    assert " stopped " in line, line
    live = w.info()
    assert live["job"]["spec"]["stopped"] is True and live["pods"] == [], "Pod CRs remain after the stop"
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
    with open(os.path.join(stamp_dir, "log-%s-actor-0.yml" % w.name)) as fh:
        assert "Saving checkpoint at step %d." % step in fh.read()

    again = stop(w)
    assert again.rc == 0, again
    assert "already stopped" in row(outcome_table(again), w.name)
    assert sum(s["changed"] for s in again.stats.values()) == 0, again.stats


def test_two_concurrent_guarded_stops_stop_the_job_once(running):
    w = running
    w.wait_steps(2)
    runs = [None, None]

    def go(i):
        runs[i] = stop(w)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.rc == 0 for r in runs), runs
    outcomes = sorted(row(outcome_table(r), w.name).split()[1] for r in runs)
    assert outcomes == ["already", "stopped"], [outcome_table(r) for r in runs]
    assert w.info()["pods"] == []


def test_killed_save_is_refused(running):
    w = running
    log = os.path.join(w.sandbox.logs_dir, w.name, "%s-actor-0.log" % w.name)
    deadline = time.monotonic() + 60
    step = None
    while step is None:
        assert time.monotonic() < deadline, "no save at step >= 6 seen"
        with open(log) as fh:
            lines = fh.read().rstrip().splitlines()
        # The save of step N has started and its "Global Step: N" line (printed once saved) is not there yet.
        saving = re.match(r"Saving checkpoint at step (\d+)\.$", lines[-1]) if lines else None
        if saving and int(saving.group(1)) >= 6:
            step = int(saving.group(1))
        time.sleep(0.05)
    # An unguarded stop during that save (what the console does) kills it for good.
    killed = w.module("rlark_job", {"name": w.name, "state": "stopped"})
    assert killed.get("changed"), killed
    w.module("rlark_job", {"name": w.name, "state": "stopped", "wait": True})
    w.module("rlark_job", {"name": w.name, "state": "started"})
    refused = stop(w, {"rlark_save_window_seconds": 0})
    assert refused.rc != 0, refused
    line = row(outcome_table(refused), w.name)
    assert "refused" in line and "global_step_%d" % step in all_output(refused), line
