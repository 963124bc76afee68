"""guarded_stop.yml --check over a 20-Job label selection: a row per Job, nothing written, nothing changed.

The Jobs and their state are read with the sandbox's own REST client; the records directory with
plain file reads. How long the run takes is a figure of bench/test_bench_fleet_check.py, not asserted here.
"""

import os

import pytest
from fleet_support import Fleet, check_fleet
from playbook_support import outcome_table

pytestmark = pytest.mark.sandbox

COUNT = 20


@pytest.fixture
def fleet(sandbox):
    jobs = Fleet(sandbox, COUNT)
    try:
        jobs.wait_checkpoints()
        yield jobs
    finally:
        jobs.delete()


def test_check_mode_over_twenty_jobs_says_what_it_would_do_and_writes_nothing(sandbox, fleet, tmp_path):
    records = str(tmp_path / "records")
    before = fleet.views()
    assert sorted(before) == fleet.names
    run, elapsed = check_fleet(sandbox, fleet, records)
    print("guarded_stop.yml --check --forks 20 over %d Jobs: %.1fs" % (COUNT, elapsed))
    assert run.rc == 0, run
    table = outcome_table(run)
    rows = {
        name: next((line for line in table.splitlines() if line.startswith(name + " ")), "") for name in fleet.names
    }
    assert all(" would stop " in line and "would stop at step" in line for line in rows.values()), table
    assert fleet.views() == before, "check mode changed a Job (resourceVersion, generation or spec)"
    assert not os.path.exists(records), "check mode wrote under the records dir: %s" % [
        os.path.join(d, f) for d, _dirs, files in os.walk(records) for f in files
    ]
