"""A second, isolated sandbox's lifecycle: `up` reuses a running sandbox and restarts a killed component in place on
the kept data, `up --fresh` empties it, `down` leaves no process behind and `up` works again.

One sandbox serves the whole sequence (each fresh start costs about 20 CPU-s). It runs once, on RLark's own CRDs (the
Makefile's it-upstream group): starting, stopping and restarting the sandbox's processes does not depend on the CRD
set, and each group's session sandbox already comes up on its own set. Objects are read with the `kubernetes`
package and the tests' REST client, never with the collection.
"""

import json
import os
import subprocess
import sys
import time

import pytest
import sandbox_faults
from helpers import ROOT
from independent import custom_objects
from job_test_support import demo_job, unique
from kubeapi_for_tests import Api
from sandbox_nodes import FLEET_SIZE
from sandboxlib import procs
from sim_support import wait_sim_passes

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"


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


def test_a_second_sandbox_restarts_in_place_starts_fresh_and_leaves_no_process(sandbox, tmp_path):
    """Own state dir and ports: nothing here disturbs the shared sandbox."""
    state_dir = str(tmp_path / "sbx")
    env = dict(os.environ, RLARK_SANDBOX_DIR=state_dir)
    ctl = [sys.executable, os.path.join(ROOT, "sandbox", "sandboxctl.py")]
    kubeconfig = os.path.join(state_dir, "kubeconfig")

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

        # A killed apiserver: status names it, `up` restarts it alone on the kept data (the same Job, same uid).
        name = unique("fresh")
        created = custom_objects(kubeconfig).create_cluster_custom_object(
            GROUP, VERSION, "jobs", demo_job(name, stopped=True)
        )
        # rlark-sim has started (`up` does not wait for it) and acted on the Job: the kill hits a running sim.
        wait_sim_passes(state_dir, created, passes=1)
        sandbox_faults.kill(state_dir, "apiserver")
        status = run("status")
        assert status.returncode == 1 and "DEGRADED" in status.stdout, status.stdout
        assert [line.split()[0] for line in status.stdout.splitlines() if " DEAD " in line] == ["kube-apiserver"]
        assert "restarted kube-apiserver" in sandbox_faults.restart(state_dir)
        kept = custom_objects(kubeconfig).get_cluster_custom_object(GROUP, VERSION, "jobs", name)
        assert kept["metadata"]["uid"] == created["metadata"]["uid"]
        assert run("status").returncode == 0

        # `up --fresh`: an empty sandbox on the same URL and credentials (the same kubeconfig file works).
        fresh = run("up", "--fresh", "--crds", sandbox.crds)
        assert fresh.returncode == 0 and "fresh sandbox requested" in fresh.stdout, fresh.stdout + fresh.stderr
        kube = custom_objects(kubeconfig)
        assert kube.list_cluster_custom_object(GROUP, VERSION, "jobs")["items"] == []
        assert len(kube.list_cluster_custom_object(GROUP, VERSION, "nodes")["items"]) == FLEET_SIZE

        # `down`: no process of it is left, and `up` works again.
        pids = _pids_of(state_dir)
        down = run("down")
        assert down.returncode == 0, down.stdout + down.stderr
        assert not _processes_mentioning(state_dir), "left behind: %s" % _processes_mentioning(state_dir)
        for component, pid in pids.items():
            assert not procs.alive({"pid": pid, "start": procs.start_time(pid) or -1}), component
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
