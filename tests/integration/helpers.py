"""Helpers for integration tests: run collection modules and playbooks against the sandbox.

from helpers import run_ansible_module, run_playbook   # tests/integration is on sys.path
result = run_ansible_module("rlark_job_info", {"name": "demo"}, env=sandbox.env())
run = run_playbook("playbooks/verify.yml", {"rlark_job_name": "demo"}, env=sandbox.env())
"""

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UPSTREAM_CRDS = os.path.normpath(os.path.join(ROOT, "..", "shared", "upstream", "rlark-crds"))
# A hard error, never a skip: without ../shared the upstream-CRD half of the suite would not run.
UPSTREAM_MISSING = "RLark's upstream CRDs are missing at %s: check out the shared repository as ../shared." % (
    UPSTREAM_CRDS
)
HERE = os.path.dirname(os.path.abspath(__file__))
COLLECTIONS_PATH = os.path.join(ROOT, ".build", "collections")
VENV_BIN = os.path.dirname(sys.executable)


def read_env_file(path):
    """`export K=V` lines of .sandbox/env as a dict (values may be shell-quoted)."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if line.startswith("export ") and "=" in line:
                key, _sep, value = line[len("export ") :].partition("=")
                out[key] = shlex.split(value)[0] if value else ""
    return out


def ensure_collection_link():
    """ansible needs the repo at ansible_collections/rlark/ops (what `make collection` creates)."""
    link = os.path.join(COLLECTIONS_PATH, "ansible_collections", "rlark", "ops")
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(ROOT, link)


def ansible_env(env=None, kubeconfig=None):
    """Environment for ansible-playbook: the sandbox's exports, this collection, this venv's Python."""
    ensure_collection_link()
    out = dict(os.environ)
    if env is None:
        state_dir = os.environ.get("RLARK_SANDBOX_DIR") or os.path.join(ROOT, ".sandbox")
        env = read_env_file(os.path.join(state_dir, "env"))
    out.update(env)
    out.update(
        {
            "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_PATH,
            "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
            "ANSIBLE_LOCALHOST_WARNING": "false",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "false",
            "PATH": VENV_BIN + os.pathsep + out.get("PATH", ""),
        }
    )
    if kubeconfig:
        out["K8S_AUTH_KUBECONFIG"] = kubeconfig
        out["KUBECONFIG"] = kubeconfig
    return out


class PlaybookRun:
    """Outcome of an ansible-playbook run with the rlark_test_json stdout callback (callback_plugins/)."""

    def __init__(self, proc):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        try:
            # Warnings may precede the document; the callback prints it as the last line.
            self.data = json.loads(_last_json_line(proc.stdout))
        except ValueError:
            self.data = None

    def task_results(self, host="localhost"):
        """[(task name, result dict)] in execution order (skipped/failed tasks included)."""
        return [(t["task"], t["result"]) for t in (self.data or {}).get("tasks", []) if t["host"] == host]

    @property
    def stats(self):
        return (self.data or {}).get("stats", {})

    def __repr__(self):
        return "PlaybookRun(rc=%s)\nstdout:\n%s\nstderr:\n%s" % (self.rc, self.stdout[-4000:], self.stderr[-4000:])


def run_playbook(
    path, extra_vars=None, check=False, diff=False, env=None, kubeconfig=None, inventory=None, timeout=900, args=()
):
    """ansible-playbook `path` (relative to the repo root or absolute) -> PlaybookRun."""
    cmd = [os.path.join(VENV_BIN, "ansible-playbook"), path if os.path.isabs(path) else os.path.join(ROOT, path)]
    cmd += ["-i", inventory or "localhost,"]
    if inventory is None:
        cmd += ["-c", "local"]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    cmd += list(args)
    run_env = ansible_env(env, kubeconfig)
    run_env["ANSIBLE_CALLBACK_PLUGINS"] = os.path.join(HERE, "callback_plugins")
    run_env["ANSIBLE_STDOUT_CALLBACK"] = "rlark_test_json"
    proc = subprocess.run(cmd, env=run_env, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    return PlaybookRun(proc)


def _last_json_line(text):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return line
    return ""


def run_ansible_module(module, args, check=False, diff=False, env=None, kubeconfig=None, timeout=600, keywords=None):
    """Run one module task on localhost and return its result dict (`failed`/`msg` on failure).

    `module` is a FQCN or a short rlark.ops name (`rlark_job_info`); `keywords` adds task keywords
    (`environment`, `become`, ...).
    """
    fqcn = module if "." in module else "rlark.ops." + module
    play = [
        {
            "name": "run " + fqcn,
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {"name": "module", fqcn: args, "check_mode": bool(check), "diff": bool(diff), **(keywords or {})}
            ],
        }
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".yml", prefix="module-", delete=False) as fh:
        yaml.safe_dump(play, fh)
    try:
        run = run_playbook(fh.name, env=env, kubeconfig=kubeconfig, timeout=timeout)
    finally:
        os.unlink(fh.name)
    results = run.task_results()
    if not results:
        raise AssertionError("no module result from ansible-playbook: %r" % run)
    return results[-1][1]


def install_collection_tarball(base):
    """Build the collection tarball and install it (``ansible-galaxy collection install``) into
    ``<base>/collections``, as a user of the released collection has it; returns that collections path."""
    galaxy = os.path.join(VENV_BIN, "ansible-galaxy")
    dist, collections = os.path.join(base, "dist"), os.path.join(base, "collections")
    subprocess.run([galaxy, "collection", "build", "--output-path", dist, ROOT], check=True, capture_output=True)
    (tarball,) = [os.path.join(dist, n) for n in os.listdir(dist) if n.endswith(".tar.gz")]
    install = [galaxy, "collection", "install", "--offline", "--no-deps", "-p", collections, tarball]
    subprocess.run(install, check=True, capture_output=True, env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=""))
    assert os.path.isfile(os.path.join(collections, "ansible_collections", "rlark", "ops", "MANIFEST.json"))
    return collections


def wait_until(predicate, timeout=90, interval=0.5, what="condition"):
    """The first truthy value of ``predicate()``, polled every ``interval`` s until ``timeout`` s have passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
