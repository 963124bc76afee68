"""Fault injection against a running sandbox, for integration tests (not a test module).

The session fixture ``sandbox`` (conftest.py) carries these as methods, so a test needs no import::

    sandbox.kill("apiserver")   # SIGKILL the component's process group, as a crash; returns when it is gone
    sandbox.restart()           # `sandboxctl.py up` with the sandbox's recorded options: every dead component
                                # starts again on the same ports, certificates, tokens, etcd and S3 data;
                                # returns when every apiserver answers /readyz and the S3 server answers
    sandbox.wait_ready()        # until the management apiserver answers /readyz
    sandbox.alive()             # {"etcd": True, "kube-apiserver": False, ...}

Components: ``etcd``, ``apiserver`` (or ``kube-apiserver``), ``data-plane-a100`` / ``-h100`` / ``-edge``,
``s3``, ``sim`` (or ``rlark-sim``), ``rlark-controller-manager``. ``restart()`` never touches a live
component: rlark-sim keeps running through an apiserver or etcd restart (its informers relist), so its
pid, trainers and pass numbering go on. Clients the test holds (kubernetes package, boto3) keep working
after a restart: URLs and credentials are the same.

The functions below take the state dir (``sandbox.dir``) for use without the fixture.
"""

import json
import os
import shlex
import subprocess
import sys
import time

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "sandbox"))
from sandboxlib import procs
from sandboxlib.kubeapi import KubeApi

SANDBOXCTL = os.path.join(ROOT, "sandbox", "sandboxctl.py")
ALIASES = {"apiserver": "kube-apiserver", "sim": "rlark-sim"}


def _state(state_dir):
    with open(os.path.join(state_dir, "state.json")) as fh:
        return json.load(fh)


def alive(state_dir):
    """{component: running?} for every component the sandbox recorded."""
    return {name: procs.alive(proc) for name, proc in _state(state_dir)["pids"].items()}


def kill(state_dir, component):
    """SIGKILL one component (its whole process group) and return its pid once nothing of it runs.

    The sandbox's state stays as it was, so ``restart()`` (or ``make sandbox-up``) brings it back.
    """
    name = ALIASES.get(component, component)
    proc = _state(state_dir)["pids"].get(name)
    if not procs.alive(proc):
        raise AssertionError("%s is not running in the sandbox %s" % (name, state_dir))
    procs.kill(proc)
    return proc["pid"]


def up_argv(state):
    """`up` with the options the sandbox runs with, so nothing but the dead components changes."""
    argv = ["up", "--crds", state["crds"], "--sim-args=" + shlex.join(state.get("sim_args") or [])]
    if "rlark-sim" not in state["pids"]:
        argv.append("--no-sim")
    return argv


def restart(state_dir, timeout=300):
    """Start every dead component again (``sandboxctl.py up``); returns up's output once all are ready."""
    argv = [sys.executable, SANDBOXCTL, "--dir", state_dir, *up_argv(_state(state_dir))]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    assert run.returncode == 0, "sandboxctl up failed:\n%s%s" % (run.stdout, run.stderr)
    dead = [name for name, ok in alive(state_dir).items() if not ok]
    assert not dead, "still dead after up: %s\n%s" % (dead, run.stdout)
    wait_ready(state_dir)
    return run.stdout


def wait_ready(state_dir, timeout=120):
    """Until the management apiserver answers /readyz with 200 (an apiserver restart or etcd outage over)."""
    state = _state(state_dir)
    api = KubeApi(state["server"], state["tokens"]["admin"], os.path.join(state_dir, "pki", "ca.crt"), timeout=5)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                if api.request("GET", "/readyz")[0] == 200:
                    return
            except OSError:
                pass  # connection refused while it starts
            if time.monotonic() > deadline:
                raise AssertionError("the apiserver of %s did not answer /readyz within %ss" % (state_dir, timeout))
            time.sleep(0.2)
    finally:
        api.close()
