"""Switching rlark-sim's flags for one test (not a test module): `sandboxctl up --sim-args` as a user types it."""

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time

import pytest
from helpers import ROOT


def sim_args_now(sandbox):
    with open(os.path.join(sandbox.dir, "state.json")) as fh:
        return json.load(fh).get("sim_args") or []


def restart_sim(sandbox, argv):
    """`sandboxctl up --sim-args X`; X may be one flag-like word such as `--no-controller`."""
    cmd = [sys.executable, os.path.join(ROOT, "sandbox", "sandboxctl.py"), "--dir", sandbox.dir, "up"]
    cmd += ["--crds", sandbox.crds, "--sim-args", " ".join(shlex.quote(a) for a in argv)]
    up = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert up.returncode == 0, up.stdout + up.stderr
    extra = ["--no-controller"] if sandbox.state.get("controller_manager") and "--no-controller" not in argv else []
    assert sim_args_now(sandbox) == list(argv) + extra


@pytest.fixture
def sim_mode(sandbox):
    """``sim_mode(add=[...], remove=[...])`` restarts rlark-sim with changed flags; the session's come back after."""
    before = sim_args_now(sandbox)

    def switch(add=(), remove=()):
        want = [a for a in before if a not in remove and a not in add] + list(add)
        if sorted(want) != sorted(sim_args_now(sandbox)):
            restart_sim(sandbox, want)

    yield switch
    if sim_args_now(sandbox) != before:
        restart_sim(sandbox, before)


# ---------------------------------------------------------------- waiting on rlark-sim's passes
PASS_RECORD = "rlark-sim-pass.json"  # written by rlark_sim/__main__.py after each whole pass
INFORMER_OF_KIND = {"Job": "jobs", "Task": "tasks", "Node": "nodes", "Pod": "pods", "StatefulSet": "statefulsets"}
PASS_TIMEOUT = 120  # only reached when rlark-sim is stuck: a pass takes about a second even under load


def read_pass_record(state_dir):
    try:
        with open(os.path.join(state_dir, PASS_RECORD)) as fh:
            return json.load(fh)
    except (FileNotFoundError, ValueError):  # not written yet, or replaced while read
        return None


def wait_sim_passes(state_dir, *written, passes=2, timeout=PASS_TIMEOUT):
    """Until ``passes`` whole rlark-sim passes of the sandbox in ``state_dir`` ended that began with every object in
    ``written`` seen.

    ``written``: what the test's writes returned (each has kind and resourceVersion). This is the condition
    a "nothing happens after X" assertion needs in place of a sleep: rlark-sim has acted on X, twice, so its
    reaction to its own writes of the first pass is in too. A delete answers a Status without one: pass
    what a later write of the same kind returned.
    """
    want = {}
    for obj in written:
        name = INFORMER_OF_KIND[obj["kind"]]
        want[name] = max(want.get(name, 0), int(obj["metadata"]["resourceVersion"]))
    first, pid = None, None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = read_pass_record(state_dir)
        if record is not None:
            if record["pid"] != pid:  # rlark-sim restarted: count its passes afresh
                first, pid = None, record["pid"]
            if first is None and all(record["seen"].get(k, 0) >= rv for k, rv in want.items()):
                first = record["pass"]
            if first is not None and record["pass"] - first + 1 >= passes:
                return record
        time.sleep(0.05)
    raise AssertionError("rlark-sim ended no %d passes that saw %s within %d s: %r" % (passes, want, timeout, record))


def wait_trainer_gone(sandbox, pod, how, timeout=PASS_TIMEOUT):
    """Until rlark-sim's log says the trainer of head pod ``pod`` is ``how`` ("killed" or "ended"): the
    trainer writes nothing more after that line, so an assertion on what it left behind is final."""
    path = os.path.join(sandbox.logs_dir, "_services", "rlark-sim.log")
    line = ": %s: trainer %s at step " % (pod, how)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, errors="replace") as fh:
            if line in fh.read():
                return
        time.sleep(0.1)
    raise AssertionError("rlark-sim's log (%s) never said %r within %d s" % (path, line, timeout))


# ---------------------------------------------------------------- holding rlark-sim's agent back
AGENT_HOLD_DIR = "agent-hold"  # rlark_sim/__main__.py: one file per held Task name or fnmatch pattern


@contextlib.contextmanager
def agent_held(sandbox, *patterns):
    """rlark-sim's agent leaves Tasks whose name matches one of ``patterns`` alone (no finalizer, workload,
    Pod CR or status) until the block ends, as when RLark's agent has not reached them yet. It is
    rlark-sim's agent in every mode, also next to RLark's own controller-manager."""
    folder = os.path.join(sandbox.dir, AGENT_HOLD_DIR)
    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, p) for p in patterns]
    for path in paths:
        with open(path, "w"):
            pass
    try:
        yield
    finally:
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
