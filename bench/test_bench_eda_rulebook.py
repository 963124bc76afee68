# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Event-Driven Ansible's event-to-stop latency: the shipped rulebook stopping five Jobs at their budget.

The integration test (tests/integration/test_eda_rulebook.py) proves the behaviour with two Jobs; this bench
runs the same test with five (RLARK_EDA_STOPS=5) on this checkout's sandbox with rlark-sim's own timing (no
suite override of the stop grace period), and keeps its figures: bench/results/eda_rulebook.json
(event ``received_at`` to the Job's stop patch, p50/p95/max).
"""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULT = os.path.join(ROOT, "bench", "results", "eda_rulebook.json")
STOPS = 5


def test_rulebook_event_to_stop_latency():
    env = dict(os.environ, RLARK_EDA_STOPS=str(STOPS), RLARK_SIM_ARGS=os.environ.get("RLARK_SIM_ARGS", ""))
    test = os.path.join(ROOT, "tests", "integration", "test_eda_rulebook.py")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", test, "-q", "-s", "-p", "no:cacheprovider"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    with open(RESULT) as fh:
        figures = json.load(fh)
    assert figures["stops"] == STOPS and figures["p95_seconds"] < 120, figures
