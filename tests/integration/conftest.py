"""Integration-test fixtures: the live sandbox (real kube-apiserver + etcd, versitygw S3, rlark-sim).

`sandbox` (session): reuses the sandbox running in the state dir (.sandbox, or $RLARK_SANDBOX_DIR) when
its CRD set matches `--sandbox-crds`. When it runs with the other set, the fixture uses a second,
isolated sandbox in <state dir>/alt-<set> instead of switching CRDs under other sessions' feet. A
sandbox the fixture started is stopped at session end (unless RLARK_SANDBOX_KEEP=1).

Fault injection: ``sandbox.kill("apiserver")`` then ``sandbox.restart()`` (sandbox_faults.py, docs/sandbox.md).
"""

import json
import os
import subprocess
import sys

import pytest

# tests/integration has no __init__.py (pytest's default rootdir-less "prepend" import mode).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandbox_faults
import suite_profile
from helpers import ROOT, UPSTREAM_CRDS, UPSTREAM_MISSING, read_env_file

SANDBOXCTL = os.path.join(ROOT, "sandbox", "sandboxctl.py")
# Where each test's time goes, when RLARK_SUITE_PROFILE names a file (suite_profile.py).
pytest_runtest_call = suite_profile.pytest_runtest_call
pytest_runtest_logreport = suite_profile.pytest_runtest_logreport


def pytest_addoption(parser):
    parser.addoption(
        "--sandbox-crds",
        choices=["project", "upstream"],
        # RLark's own controller-manager needs the upstream set (its Domain controller watches DomainPeer)
        default=os.environ.get("SANDBOX_CRDS")
        or ("upstream" if os.environ.get("RLARK_CONTROLLER_MANAGER") else "project"),
        help="CRD set the sandbox runs with: the project's (sandbox/crds) or upstream RLark's (../shared); "
        "default upstream when $RLARK_CONTROLLER_MANAGER is set",
    )


class Sandbox:
    """Everything a test needs to reach the sandbox; built from .sandbox/state.json."""

    def __init__(self, state_dir):
        with open(os.path.join(state_dir, "state.json")) as fh:
            state = json.load(fh)
        self.dir = state_dir
        self.crds = state["crds"]
        self.server = state["server"]
        self.kubeconfig = os.path.join(state_dir, "kubeconfig")
        self.kubeconfig_operator = os.path.join(state_dir, "kubeconfig-operator")
        self.kubeconfig_viewer = os.path.join(state_dir, "kubeconfig-viewer")
        self.admin_token = state["tokens"]["admin"]
        self.operator_token = state["tokens"]["operator"]
        self.viewer_token = state["tokens"]["viewer"]
        self.ca_cert = os.path.join(state_dir, "pki", "ca.crt")
        self.s3_endpoint = state["s3"]["endpoint"]
        self.s3_bucket = state["s3"]["bucket"]
        # the backup target of hostPath checkpoints (a sandbox started before it existed gets the default name)
        self.s3_backup_bucket = state["s3"].get("backup_bucket", "checkpoint-backups")
        self.s3_access_key = state["s3"]["access_key"]
        self.s3_secret_key = state["s3"]["secret_key"]
        self.nodes_dir = os.path.join(state_dir, "nodes")
        self.logs_dir = os.path.join(state_dir, "logs")
        # Data-plane clusters (docs/sandbox.md "Data plane and gateway"): {cluster ID: kubeconfig path}.
        self.data_plane_dir = os.path.join(state_dir, "data-plane")
        self.data_plane_kubeconfigs = {c: conf["kubeconfig"] for c, conf in state.get("data_plane", {}).items()}
        self.gateway_url = state.get("gateway", {}).get("url")
        self.state = state

    def env(self):
        """os.environ plus the sandbox's exports (.sandbox/env): for subprocess env=."""
        env = dict(os.environ)
        env.update(read_env_file(os.path.join(self.dir, "env")))
        return env

    # Fault injection (sandbox_faults.py): e.g. ``sandbox.kill("apiserver"); sandbox.restart()``.
    def kill(self, component):
        """SIGKILL one component (``apiserver``, ``etcd``, ``s3``, ``sim``, ``data-plane-a100``...); returns its pid."""
        return sandbox_faults.kill(self.dir, component)

    def restart(self):
        """Restart every dead component on the kept ports, credentials and data; returns when all are ready."""
        return sandbox_faults.restart(self.dir)

    def wait_ready(self, timeout=120):
        """Until the management apiserver answers /readyz."""
        sandbox_faults.wait_ready(self.dir, timeout)

    def alive(self):
        """{component: running?}"""
        return sandbox_faults.alive(self.dir)

    def __repr__(self):
        return "Sandbox(dir=%r, crds=%r, server=%r)" % (self.dir, self.crds, self.server)


def sandboxctl(state_dir, *args):
    env = dict(os.environ, RLARK_SANDBOX_DIR=state_dir)
    proc = subprocess.run(
        [sys.executable, SANDBOXCTL, *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    return proc


def running_crds(state_dir):
    """The CRD set of a sandbox already running in `state_dir` (healthy or degraded), else None."""
    if sandboxctl(state_dir, "status").returncode not in (0, 1):  # 3: not running
        return None
    with open(os.path.join(state_dir, "state.json")) as fh:
        return json.load(fh)["crds"]


@pytest.fixture(scope="session")
def sandbox(request):
    crds = request.config.getoption("--sandbox-crds")
    # Pods outlive a stop by 1 s instead of the sandbox's 5 (every awaited stop waits that long); a test that
    # needs the window sets its template's terminationGracePeriodSeconds. Every later `sandboxctl up` of the
    # session (restarts after faults) inherits it; RLARK_SIM_ARGS set by the caller wins. Benches keep 5 s.
    os.environ.setdefault("RLARK_SIM_ARGS", "--grace-seconds 1")
    if crds == "upstream" and not os.path.isdir(UPSTREAM_CRDS):
        pytest.fail(UPSTREAM_MISSING, pytrace=False)
    state_dir = os.path.abspath(os.environ.get("RLARK_SANDBOX_DIR") or os.path.join(ROOT, ".sandbox"))
    build = subprocess.run(
        ["bash", os.path.join(ROOT, "sandbox", "build.sh")], capture_output=True, text=True, check=False
    )
    if build.returncode != 0:
        pytest.fail("sandbox build failed:\n%s%s" % (build.stdout, build.stderr))
    running = running_crds(state_dir)
    if running is not None and running != crds:
        # Never switch the CRDs of a sandbox other sessions may be using: run a second, isolated sandbox
        # (own ports, own nodes/ and logs/) inside the state dir for the other set.
        state_dir = os.path.join(state_dir, "alt-" + crds)
        running = running_crds(state_dir)
    started = sandboxctl(state_dir, "up", "--crds", crds)
    if started.returncode != 0:
        pytest.fail("sandbox up failed:\n%s%s" % (started.stdout, started.stderr))
    yield Sandbox(state_dir)
    if running is None and not os.environ.get("RLARK_SANDBOX_KEEP"):
        sandboxctl(state_dir, "down")


@pytest.fixture(scope="session")
def migrated_job(sandbox, tmp_path_factory):
    """(name, Job) of the example workload as migrate.yml creates it: one migrate per session for `running` and the
    scenarios that start from a migrated Job (``Workload.start``).

    The Job is read with the independent client and deleted at once (its checkpoints stay, in their own directory).
    """
    from independent import get_job
    from playbook_support import Workload

    w = Workload(sandbox, tmp_path_factory.mktemp("migrated"))
    try:
        run = w.play("migrate.yml")
        assert run.rc == 0, run
        job = get_job(sandbox, w.name)
    finally:
        w.cleanup()
    meta = job["metadata"]
    job["metadata"] = {k: meta[k] for k in ("name", "labels", "annotations") if k in meta}
    job.pop("status", None)
    return w.name, job


@pytest.fixture
def running(sandbox, tmp_path, migrated_job):
    """The example workload under a unique name, running, with one checkpoint saved; deleted afterwards.

    Its Job is the session's migrated Job with only the name changed (the name is also its experiment and checkpoint
    directory), created with the independent client: the tests that use it stop Jobs, they do not test migrate.
    """
    from playbook_support import Workload

    w = Workload(sandbox, tmp_path)
    w.start(migrated_job)
    w.wait_steps(1)
    yield w
    w.cleanup()
