"""guarded_stop.yml when something fails after the stop patch: the records filesystem fills up, the API
server is killed or restarted; and a records location that cannot take the record, refused first.

Each run is checked with independent readers: the kubernetes package for the Job, plain file reads and
yaml for the records. The tmpfs mounts need root (CI runs as root).
"""

import os
import subprocess
import threading
import time

import pytest
import yaml
from independent import get_job, job_pods
from playbook_support import outcome_table
from refusals import task_result
from sim_support import AGENT_HOLD_DIR

pytestmark = pytest.mark.sandbox
STOP_TASK = "Check, record and stop the Job (one transaction)"
ANNOTATION = "rlark.ops/guarded-stop-run"


@pytest.fixture
def tmpfs(tmp_path):
    """``mount(size, read_only=False)`` -> the path of a fresh tmpfs; every mount is removed afterwards."""
    mounts = []

    def mount(size, read_only=False):
        path = tmp_path / ("tmpfs-%d" % len(mounts))
        path.mkdir()
        options = "size=%s" % size + (",ro" if read_only else "")
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], check=True)
        mounts.append(path)
        return str(path)

    yield mount
    for path in mounts:
        subprocess.run(["umount", "-l", str(path)], check=False)


def row(run, job):
    return next(line for line in outcome_table(run).splitlines() if line.startswith(job + " "))


def stop(w, records, **extra):
    extra = dict({"rlark_jobs": [w.name], "rlark_records_dir": records}, **extra)
    return w.play("guarded_stop.yml", kubeconfig=w.sandbox.kubeconfig_operator, extra=extra)


def stop_records(records, job):
    """Every stop.yml of ``job`` under ``records``, read with yaml: ``{run id: record}``."""
    base = os.path.join(records, job)
    out = {}
    for run_id in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        path = os.path.join(base, run_id, "stop.yml")
        if os.path.exists(path):
            with open(path) as fh:
                out[run_id] = yaml.safe_load(fh)
    return out


def hidden(path):
    return sorted(os.path.join(d, n) for d, dirs, files in os.walk(path) for n in dirs + files if n.startswith("."))


def when_stopped(sandbox, name, action, timeout=300):
    """Run ``action()`` in a thread as soon as the Job reads ``spec.stopped`` (the patch has landed)."""
    done = {}

    def watch():
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = get_job(sandbox, name)
            if job and job["spec"].get("stopped"):
                done["annotation"] = (job["metadata"].get("annotations") or {}).get(ANNOTATION)
                done["result"] = action()
                return
            time.sleep(0.05)  # polling the condition itself, not waiting for time to pass

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, done


def keep_full(path, done):
    """Fill ``path``'s file system and keep it full (whatever a writer frees is taken again) until ``done``."""
    with open(os.path.join(path, "filler"), "ab") as fh:
        while not done.is_set():
            try:
                fh.write(b"\0" * (1 << 16))
                fh.flush()
            except OSError:
                done.wait(0.01)  # full: look again for freed space until the run has ended


def fill_then_release(path, done, hold):
    """After the stop patch: fill ``path`` (kept full until ``done``), then let rlark-sim's agent stop the pods
    (``hold``), so the stop's wait ends only once the records filesystem is full."""
    filler = threading.Thread(target=keep_full, args=(path, done), daemon=True)
    filler.start()
    deadline = time.monotonic() + 60
    while os.statvfs(path).f_bavail and time.monotonic() < deadline:
        done.wait(0.01)  # until the file system is full
    os.remove(hold)
    return filler


@pytest.mark.parametrize(
    ("size", "read_only", "finding"), [("4m", False, "records-no-room"), ("4m", True, "records-unwritable")]
)
def test_records_location_that_cannot_take_the_record_is_refused_before_the_gate(
    running, tmpfs, size, read_only, finding
):
    w = running
    records = tmpfs(size, read_only)
    run = stop(w, records)
    assert run.rc != 0, run
    result = task_result(run, STOP_TASK)
    assert [(f["id"], f["severity"]) for f in result["outcome"]["findings"]] == [(finding, "error")]
    assert "rlark_records_dir" in result["outcome"]["reason"], result["outcome"]
    assert result["gate"] == {}, "the gate ran before the records check"
    assert " refused " in row(run, w.name)
    live = get_job(w.sandbox, w.name)
    assert not live["spec"].get("stopped") and job_pods(w.sandbox, w.name), "the Job was touched"
    assert not os.path.exists(os.path.join(records, w.name)) and hidden(records) == []


def test_records_filesystem_full_after_the_patch_then_the_rerun_completes_the_record(running, tmpfs):
    w = running
    records = tmpfs("48m")
    filling = threading.Event()
    # rlark-sim's agent leaves the Job's Tasks alone (agent-hold switch) until the records filesystem is full.
    hold = os.path.join(w.sandbox.dir, AGENT_HOLD_DIR, w.name + "-*")
    os.makedirs(os.path.dirname(hold), exist_ok=True)
    open(hold, "w").close()
    watcher, seen = when_stopped(w.sandbox, w.name, lambda: fill_then_release(records, filling, hold))
    try:
        first = stop(w, records)
    finally:
        filling.set()
        watcher.join(timeout=60)
        if os.path.exists(hold):
            os.remove(hold)
    assert "annotation" in seen, "the Job was never stopped"
    assert first.rc != 0, outcome_table(first)
    line = row(first, w.name)
    assert " stopped-unconfirmed " in line and "No space left on device" in line, line
    assert get_job(w.sandbox, w.name)["spec"]["stopped"] is True
    records_of_job = stop_records(records, w.name)
    assert list(records_of_job) == [seen["annotation"]], records_of_job
    run_id = seen["annotation"]
    pending = records_of_job[run_id]
    assert pending["outcome"] == "pending"
    assert os.path.exists(os.path.join(records, w.name, run_id, "log-%s-actor-0.log" % w.name))

    os.unlink(os.path.join(records, "filler"))
    again = stop(w, records)
    assert again.rc == 0, again
    line = row(again, w.name)
    assert " stopped " in line and "recovered" in line and run_id in line, line
    done = stop_records(records, w.name)[run_id]
    assert done["outcome"] == "stopped" and done["data"]["pods_gone_at"], done["data"]
    assert done["data"]["recovery"]["left_as"] == "pending"
    assert job_pods(w.sandbox, w.name) == []
    assert hidden(records) == []

    third = stop(w, records)
    assert third.rc == 0 and " already stopped " in row(third, w.name), third
    assert "record is complete (stopped)" in row(third, w.name)


def test_api_server_killed_after_the_patch_is_unconfirmed_then_the_rerun_completes_the_record(running):
    w = running
    watcher, seen = when_stopped(w.sandbox, w.name, lambda: w.sandbox.kill("apiserver"))
    try:
        first = stop(w, w.records, rlark_stop_deadline=30)
    finally:
        watcher.join(timeout=60)
        w.sandbox.restart()  # the sandbox serves the next tests whatever happened
    assert "annotation" in seen, "the Job was never stopped"
    assert first.rc != 0, first
    line = row(first, w.name)
    assert " stopped-unconfirmed " in line and " refused " not in line, line
    assert "re-run the guarded stop" in line, line
    unconfirmed = stop_records(w.records, w.name)[seen["annotation"]]
    assert unconfirmed["outcome"] == "stopped-unconfirmed" and unconfirmed["data"]["stop_patched_at"], unconfirmed

    again = stop(w, w.records)
    assert again.rc == 0, again
    line = row(again, w.name)
    assert " stopped " in line and "recovered" in line and seen["annotation"] in line, line
    done = stop_records(w.records, w.name)[seen["annotation"]]
    assert done["outcome"] == "stopped" and done["data"]["pods_gone_at"], done["data"]
    assert done["data"]["recovery"]["left_as"] == "stopped-unconfirmed"
    assert job_pods(w.sandbox, w.name) == [] and get_job(w.sandbox, w.name)["spec"]["stopped"] is True


def test_api_server_restarted_after_the_patch_is_our_stop_with_a_complete_record(running):
    w = running

    def bounce():
        w.sandbox.kill("apiserver")
        w.sandbox.restart()

    watcher, seen = when_stopped(w.sandbox, w.name, bounce)
    run = stop(w, w.records)
    watcher.join(timeout=300)
    assert "annotation" in seen, "the Job was never stopped"
    assert run.rc == 0, (outcome_table(run), task_result(run, STOP_TASK).get("msg"))
    line = row(run, w.name)
    assert " stopped " in line and "someone else" not in line, line
    assert list(stop_records(w.records, w.name)) == [seen["annotation"]]
    run_id = seen["annotation"]
    record = stop_records(w.records, w.name)[run_id]
    assert record["outcome"] == "stopped" and record["data"]["pods_gone_at"], record["data"]
    assert get_job(w.sandbox, w.name)["metadata"]["annotations"][ANNOTATION] == run_id
    assert job_pods(w.sandbox, w.name) == []
