"""``guarded_stop.yml --check --forks 20`` over a 20-Job label selection on the sandbox: seconds it takes.

Issue 10's goal: <= 30 s. The Jobs are tests/integration/fleet_support.py's small no-GPU Jobs (the
sandbox's GPU nodes hold one example Job), each with a checkpoint; the run's correctness is asserted in
tests/integration/test_guarded_stop_fleet_check.py. Results: bench/results/fleet_check.json.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from figures import save  # noqa: E402
from fleet_support import Fleet, check_fleet  # noqa: E402
from sandbox_support import shared_sandbox  # noqa: E402

COUNT = 20
GOAL_SECONDS = 30


def test_check_mode_over_twenty_jobs(tmp_path):
    sandbox = shared_sandbox()
    fleet = Fleet(sandbox, COUNT)
    try:
        fleet.wait_checkpoints()
        run, elapsed = check_fleet(sandbox, fleet, str(tmp_path / "records"))
    finally:
        fleet.delete()
    assert run.rc == 0, run
    save(
        "fleet_check.json",
        {
            "jobs": COUNT,
            "forks": 20,
            "seconds": round(elapsed, 1),
            "goal_seconds": GOAL_SECONDS,
            "loadavg": os.getloadavg(),
        },
    )
