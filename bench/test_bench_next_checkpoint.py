# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stop at the checkpoint boundary: ``guarded_stop.yml -e rlark_stop_when=next_checkpoint`` on the sandbox.

Per trial the Job starts from an empty checkpoint directory and the playbook waits for its next
checkpoint, then stops it. Measured independently of the collection:

- "checkpoint complete": the newest modification time of the files of the recorded ``global_step_N``
  (the end of the save; the gate's rules add ``quiet_seconds`` on top, reported separately);
- "stop patched": the first time a watcher polling the Job every 50 ms sees ``spec.stopped: true``;
- lost steps: the highest ``Global Step: K`` the trainer logged in this trial minus N.

Goals (issue 10): p95 latency <= 2 s plus one sandbox tick (1 s), lost steps <= 1 at p95; the same with a
trainer that prints a 1 MB line every step (issue 24: the logs read between the verdict and the patch must not
grow with the log). 20 trials; ``BENCH_QUICK=1`` runs 3 (for CI). Results: bench/results/next_checkpoint.json
and next_checkpoint_1MB_lines.json.
"""

import datetime
import json
import math
import os
import re
import shutil
import statistics
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from kubeapi_for_tests import Api  # noqa: E402
from playbook_support import Workload  # noqa: E402
from sandbox_support import shared_sandbox  # noqa: E402

TRIALS = 3 if os.environ.get("BENCH_QUICK") or os.environ.get("RLARK_BENCH_QUICK") == "1" else 20
QUIET_SECONDS = 1
TICK_SECONDS = 1.0
LATENCY_GOAL = 2.0 + TICK_SECONDS
LOST_GOAL = 1
RESULTS = os.path.join(ROOT, "bench", "results")
STEP_LINE = re.compile(r"Global Step: (\d+)/")


@pytest.fixture(scope="module")
def sandbox():
    return shared_sandbox()


def p95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


class StopWatcher(threading.Thread):
    """Polls the Job and notes when spec.stopped first reads true."""

    def __init__(self, api, name):
        super().__init__(daemon=True)
        self.api, self.name = api, name
        self.seen = None
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set() and self.seen is None:
            job = self.api.get("/apis/rlinf.io/v1alpha1/jobs/" + self.name)
            if (job.get("spec") or {}).get("stopped"):
                self.seen = time.time()
            time.sleep(0.05)


def pods_of(api, name):
    items = api.get("/apis/rlinf.io/v1alpha1/pods")["items"]
    return [p for p in items if p["metadata"].get("labels", {}).get("rlark.io/task-name", "").startswith(name + "-")]


def wait_until(condition, what, timeout=120):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.2)


def gate_to_patch(run, name):
    """Seconds from the gate's last judgement (it said complete) to the stop patch, as the plugin reports them."""
    results = dict(run.task_results(host="rlark-job-" + name))
    stop = results["Check, record and stop the Job (one transaction)"]
    patched = datetime.datetime.strptime(stop["stop"]["patched_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
    return round(patched.replace(tzinfo=datetime.timezone.utc).timestamp() - stop["gate"]["judged_at"], 3)


def newest_mtime(directory):
    return max(os.stat(os.path.join(d, f)).st_mtime for d, _dirs, files in os.walk(directory) for f in files)


def long_lines(size):
    """A Workload mutation: the trainer prints a line of ``size`` bytes every step (rlark-sim's switch)."""

    def mutate(manifest, _profile):
        env = manifest["roles"][0]["env"]
        env.append({"name": "SIM_LONG_LINE_BYTES", "value": str(size)})

    return mutate


@pytest.mark.parametrize("line_bytes", [0, 1 << 20], ids=["plain", "1MB_lines"])
def test_stop_at_next_checkpoint(sandbox, tmp_path, line_bytes):
    w = Workload(sandbox, tmp_path, mutate=long_lines(line_bytes) if line_bytes else None)
    api = Api(sandbox.server, sandbox.admin_token, sandbox.ca_cert)
    log_path = os.path.join(sandbox.logs_dir, w.name, "%s-actor-0.log" % w.name)
    job_path = "/apis/rlinf.io/v1alpha1/jobs/" + w.name
    trials = []
    try:
        created = w.play("migrate.yml")
        assert created.rc == 0, created
        for index in range(TRIALS):
            api.merge_patch(job_path, {"spec": {"stopped": True}})
            wait_until(lambda: not pods_of(api, w.name), "the pods of %s to go" % w.name)
            # Each trial starts from an empty checkpoint directory (bench data, not the collection's).
            shutil.rmtree(w.checkpoints, ignore_errors=True)
            offset = os.path.getsize(log_path) if os.path.exists(log_path) else 0
            api.merge_patch(job_path, {"spec": {"stopped": False}})
            watcher = StopWatcher(api, w.name)
            watcher.start()
            run = w.play(
                "guarded_stop.yml",
                kubeconfig=sandbox.kubeconfig_operator,
                extra={
                    "rlark_jobs": [w.name],
                    "rlark_stop_when": "next_checkpoint",
                    "rlark_gate_options": {"quiet_seconds": QUIET_SECONDS},
                    "rlark_next_checkpoint_timeout": 120,
                },
            )
            watcher.done.set()
            watcher.join()
            assert run.rc == 0, run
            record = w.records_of("stop")[-1]["data"]
            step = record["global_step"]
            complete = newest_mtime(os.path.join(w.checkpoints, "global_step_%d" % step))
            with open(log_path) as fh:
                fh.seek(offset)
                logged = [int(m) for m in STEP_LINE.findall(fh.read())]
            trials.append(
                {
                    "trial": index,
                    "step": step,
                    "gate_to_patch_s": gate_to_patch(run, w.name),
                    "exported_log_bytes": sum(e["bytes"] for e in record["logs"]["exports"]),
                    "latency_s": round(watcher.seen - complete, 3),
                    "latency_after_quiet_s": round(watcher.seen - complete - QUIET_SECONDS, 3),
                    "lost_steps": max(logged) - step,
                    "record_lost_steps": record["lost_work"]["steps_after_checkpoint"],
                }
            )
            print("trial %d: %s" % (index, trials[-1]))
    finally:
        w.cleanup()
    latencies = [t["latency_s"] for t in trials]
    lost = [t["lost_steps"] for t in trials]
    summary = {
        "trials": len(trials),
        "quiet_seconds": QUIET_SECONDS,
        "trainer_line_bytes": line_bytes or "plain RLinf lines",
        "gate_to_patch_p95_s": p95([t["gate_to_patch_s"] for t in trials]),
        "latency_p50_s": round(statistics.median(latencies), 3),
        "latency_p95_s": round(p95(latencies), 3),
        "latency_after_quiet_p50_s": round(statistics.median(latencies) - QUIET_SECONDS, 3),
        "latency_after_quiet_p95_s": round(p95(latencies) - QUIET_SECONDS, 3),
        "lost_steps_p50": statistics.median(lost),
        "lost_steps_p95": p95(lost),
        "goal": {"latency_p95_s": LATENCY_GOAL, "lost_steps_p95": LOST_GOAL},
        "loadavg": os.getloadavg(),
        "per_trial": trials,
    }
    os.makedirs(RESULTS, exist_ok=True)
    name = "next_checkpoint.json" if not line_bytes else "next_checkpoint_1MB_lines.json"
    with open(os.path.join(RESULTS, name), "w") as fh:
        json.dump(summary, fh, indent=2)
    print(json.dumps({k: v for k, v in summary.items() if k != "per_trial"}, indent=2))
    assert summary["trials"] == TRIALS
