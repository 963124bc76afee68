"""The sandbox's lifecycle: `down` leaves no process behind and `up` works again, on a second, isolated sandbox.

It runs once, on RLark's own CRDs (the Makefile's it-upstream group): stopping and starting the sandbox's
processes does not depend on the CRD set, and each group's session sandbox already comes up on its own set.
"""

import json
import os
import subprocess
import sys
import time

import pytest
from helpers import ROOT
from kubeapi_for_tests import Api
from sandboxlib import procs

pytestmark = pytest.mark.sandbox
FLEET_SIZE = 9


def _pids_of(state_dir):
    with open(os.path.join(state_dir, "state.json")) as fh:
        return {name: proc["pid"] for name, proc in json.load(fh)["pids"].items()}


def _processes_mentioning(text):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/cmdline" % entry, "rb") as fh:
                    cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
                with open("/proc/%s/stat" % entry) as fh:
                    state = fh.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if text in cmdline and state != "Z":
                found.append((int(entry), cmdline))
    return found


def test_down_leaves_no_process_and_up_works_again(sandbox, tmp_path):
    """A second, isolated sandbox (own state dir and ports): down/up never disturbs the shared one."""
    state_dir = str(tmp_path / "sbx")
    env = dict(os.environ, RLARK_SANDBOX_DIR=state_dir)
    ctl = [sys.executable, os.path.join(ROOT, "sandbox", "sandboxctl.py")]

    def run(*args):
        return subprocess.run([*ctl, *args], env=env, capture_output=True, text=True, timeout=300, check=False)

    try:
        first = run("up", "--crds", sandbox.crds)
        assert first.returncode == 0, first.stdout + first.stderr
        pids = _pids_of(state_dir)
        assert {"etcd", "kube-apiserver", "s3", "data-plane-a100", "data-plane-h100", "data-plane-edge"} <= set(pids)
        again = run("up", "--crds", sandbox.crds)
        assert again.returncode == 0 and "already running" in again.stdout, again.stdout + again.stderr
        assert _pids_of(state_dir) == pids  # reused, not restarted
        down = run("down")
        assert down.returncode == 0, down.stdout + down.stderr
        assert not _processes_mentioning(state_dir), "left behind: %s" % _processes_mentioning(state_dir)
        for name, pid in pids.items():
            assert not procs.alive({"pid": pid, "start": procs.start_time(pid) or -1}), name
        assert run("status").returncode == 3
        second = run("up", "--crds", sandbox.crds)
        assert second.returncode == 0, second.stdout + second.stderr
        with open(os.path.join(state_dir, "state.json")) as fh:
            state = json.load(fh)
        api = Api(state["server"], state["tokens"]["admin"], os.path.join(state_dir, "pki", "ca.crt"))
        deadline = time.monotonic() + 30
        while api.request("GET", "/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(api.call("GET", "/apis/rlinf.io/v1alpha1/nodes")["items"]) == FLEET_SIZE
        api.close()
        assert run("status").returncode == 0
    finally:
        run("down")
    assert not _processes_mentioning(state_dir)
