# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The silent-restart sentinel on the sandbox: how many trainer steps a wrong resume logs before it is stopped.

One original Job (trainer fault ``SIM_TRAINER_FAULT=ignore-resume-dir``, so every resume of it restarts at
step 1) is migrated and stopped with a guarded stop (its stop record holds the old run's log). Per trial one
play creates the resumed copy (``rlark_job`` ``copy_from`` + ``resume_dir``, as the resume role does) and runs
``rlark_resume_sentinel`` on it. Measured independently of the collection:

- steps: the highest step counter of RLinf's metric tables in the new Job's log file (read after its pods are
  gone) minus its first one;
- seconds: from the first time a watcher polling the log file every 50 ms sees a metric table to the first
  time a watcher polling the Job every 50 ms sees ``spec.stopped: true``.

Goal (issue 28): at most 2 trainer steps after the first logged step at p95 over 10 trials (``BENCH_QUICK=1``:
3). Result: bench/results/resume_sentinel.json.
"""

import os
import re
import sys
import threading
import time

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from figures import save, within_budget  # noqa: E402
from helpers import run_playbook  # noqa: E402
from kubeapi_for_tests import Api  # noqa: E402
from playbook_support import Workload  # noqa: E402
from sandbox_support import shared_sandbox  # noqa: E402
from test_bench_next_checkpoint import p95, pods_of, wait_until  # noqa: E402

TRIALS = 3 if os.environ.get("BENCH_QUICK") or os.environ.get("RLARK_BENCH_QUICK") == "1" else 10
STEPS_GOAL = 2
TABLE_STEP = re.compile(r"│\s*Global Step:\s*(\d+)/")


@pytest.fixture(scope="module")
def sandbox():
    return shared_sandbox()


def ignoring_resume_dir(manifest, _profile):
    manifest["roles"][0]["env"].append({"name": "SIM_TRAINER_FAULT", "value": "ignore-resume-dir"})


class Watch(threading.Thread):
    """Notes when the new Job's log first shows a metric table and when the Job first reads stopped."""

    def __init__(self, api, name, log_path):
        super().__init__(daemon=True)
        self.api, self.name, self.log_path = api, name, log_path
        self.first_table = self.stopped = None
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set() and self.stopped is None:
            if self.first_table is None and os.path.exists(self.log_path):
                with open(self.log_path) as fh:
                    if TABLE_STEP.search(fh.read()):
                        self.first_table = time.time()
            job = self.api.get("/apis/rlinf.io/v1alpha1/jobs/" + self.name, missing_ok=True) or {}
            if (job.get("spec") or {}).get("stopped"):
                self.stopped = time.time()
            time.sleep(0.05)


def trial_play(w, sandbox, new, step):
    auth = {"kubeconfig": sandbox.kubeconfig}
    return [
        {
            "name": "bench: resume copy and sentinel",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Create the resumed copy",
                    "rlark.ops.rlark_job": dict(
                        auth,
                        copy_from=w.name,
                        name=new,
                        state="present",
                        resume_dir="/data/rlinf/logs/%s/checkpoints/global_step_%d" % (w.name, step),
                    ),
                },
                {
                    "name": "Watch it",
                    "rlark.ops.rlark_resume_sentinel": dict(
                        auth,
                        name=new,
                        original=w.name,
                        step=step,
                        head_task="actor",
                        records_dir=w.records,
                        resume_dir="/data/rlinf/logs/%s/checkpoints/global_step_%d" % (w.name, step),
                        logs_dir=sandbox.logs_dir,
                        timeout=120,
                    ),
                    "register": "sentinel",
                },
            ],
        }
    ]


def test_sentinel_stops_a_restart_within_two_steps(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path, mutate=ignoring_resume_dir)
    api = Api(sandbox.server, sandbox.admin_token, sandbox.ca_cert)
    trials = []
    try:
        assert w.play("migrate.yml").rc == 0
        w.wait_steps(1)
        stopped = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra={"rlark_jobs": [w.name]})
        assert stopped.rc == 0, stopped
        step = w.steps()[-1]
        for index in range(TRIALS):
            new = "%s-b%d" % (w.name, index)
            w.created.append(new)
            log_path = os.path.join(sandbox.logs_dir, new, "%s-actor-0.log" % new)
            watch = Watch(api, new, log_path)
            watch.start()
            play = os.path.join(str(tmp_path), "trial-%d.yml" % index)
            with open(play, "w") as fh:
                yaml.safe_dump(trial_play(w, sandbox, new, step), fh)
            run = run_playbook(play, env=sandbox.env(), kubeconfig=sandbox.kubeconfig)
            wait_until(lambda watch=watch: watch.stopped is not None, "the sentinel's stop of %s" % new)
            watch.done.set()
            watch.join()
            assert run.rc == 0, run
            wait_until(lambda new=new: not pods_of(api, new), "the pods of %s to go" % new)
            with open(log_path) as fh:
                logged = [int(s) for s in TABLE_STEP.findall(fh.read())]
            trials.append(
                {
                    "job": new,
                    "first_step": logged[0],
                    "steps_after_first": max(logged) - logged[0],
                    "seconds_first_table_to_stop": round(watch.stopped - watch.first_table, 3),
                }
            )
            w.module("rlark_job", {"name": new, "state": "absent", "wait": True})
    finally:
        w.cleanup()
    steps = [t["steps_after_first"] for t in trials]
    seconds = [t["seconds_first_table_to_stop"] for t in trials]
    ok = p95(steps) <= STEPS_GOAL
    save(
        "resume_sentinel.json",
        {
            "trials": len(trials),
            "step_seconds": 1.0,
            "goal_steps_after_first_p95": STEPS_GOAL,
            "steps_after_first_p95": p95(steps),
            "steps_after_first_max": max(steps),
            "seconds_first_table_to_stop_p95": p95(seconds),
            "seconds_first_table_to_stop_max": max(seconds),
            "ok": ok,
            "per_trial": trials,
        },
    )
    assert all(t["first_step"] == 1 for t in trials), trials
    assert within_budget(ok), trials
