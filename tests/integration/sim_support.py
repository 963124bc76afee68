"""Switching rlark-sim's flags for one test (not a test module): `sandboxctl up --sim-args` as a user types it."""

import json
import os
import shlex
import subprocess
import sys

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
