# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sandbox timings on an isolated state dir: fresh `up`, warm `up` (target <= 20 s), RSS, `down`."""

import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARM_UP_TARGET_S = 20.0


def _ctl(state_dir, *args):
    """(seconds, stdout) of one sandboxctl.py call on `state_dir`."""
    env = dict(os.environ, RLARK_SANDBOX_DIR=state_dir)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "sandbox", "sandboxctl.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    return time.monotonic() - start, proc.stdout


def test_bench_sandbox_up_warm_up_rss_down(tmp_path):
    subprocess.run(["bash", os.path.join(ROOT, "sandbox", "build.sh")], capture_output=True, check=True)
    state_dir = str(tmp_path / "sandbox")
    try:
        fresh = _ctl(state_dir, "up")[0]
        time.sleep(3)  # let rlark-sim finish its initial sync before measuring memory
        # Warm `make sandbox-up` = build.sh (stamps only) + sandboxctl up (reuse).
        warm_start = time.monotonic()
        subprocess.run(["bash", os.path.join(ROOT, "sandbox", "build.sh")], check=True, capture_output=True)
        out = _ctl(state_dir, "up")[1]
        warm = time.monotonic() - warm_start
        assert "already running" in out
        status = _ctl(state_dir, "status")[1]
        rss = {
            m.group(1): int(m.group(2))
            for m in re.finditer(r"^\s+(\S+)\s+pid \d+\s+up\s+rss\s+(\d+) MiB", status, re.M)
        }
    finally:
        down = _ctl(state_dir, "down")[0]
    result = {
        "fresh_up_s": round(fresh, 2),
        "warm_up_s": round(warm, 2),
        "down_s": round(down, 2),
        "rss_mib": rss,
        "rss_total_mib": sum(rss.values()),
    }
    print("\nsandbox bench: " + json.dumps(result, sort_keys=True))
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "sandbox.json"), "w") as fh:
        json.dump(result, fh, indent=2, sort_keys=True)
    assert warm <= WARM_UP_TARGET_S, result
