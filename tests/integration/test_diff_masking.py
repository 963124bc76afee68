"""--check --diff -v of rlark_job on a Job whose env carries secrets: the diff is shown, no secret is.

Unlike the migrate test (the review refuses the manifest before any diff), rlark_job runs directly
on a Job definition, as a console user or a hand-written playbook would, so the diff really prints.
"""

import copy
import os
import subprocess
import sys

import pytest
import yaml
from helpers import ROOT, VENV_BIN, ansible_env
from independent import get_job
from playbook_support import Workload

sys.path.insert(0, os.path.join(ROOT, ".build", "collections"))
from ansible_collections.rlark.ops.plugins.module_utils.preflight import preflight

pytestmark = pytest.mark.sandbox

SECRETS = {
    "DB_PASS": "hunter2",
    "GH_PAT": "ghp_Q8w7E6r5T4y3U2i1O0p9A8s7D6f5G4h3J2k1",
    "OPENAI_KEY": "sk-proj-Mn3bV6cX9zL2kJ5hG8fD1sA4pO7iU0yT",
    "ALERT_URL": "https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/q1W2e3R4t5Y6u7I8o9P0a1S2",
    "WANDB_KEY": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
}
MASK = "***REDACTED***"


def with_secrets(job):
    job = copy.deepcopy(job)
    container = job["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    container["env"] = container.get("env", []) + [{"name": k, "value": v} for k, v in SECRETS.items()]
    return job


def head_env(job):
    container = job["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def test_check_diff_verbose_shows_the_diff_but_no_secret(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    rendered = preflight(w.manifest, w.profile)
    assert rendered["ok"], rendered["findings"]
    existing = copy.deepcopy(rendered["job"])
    existing["metadata"]["name"] = w.name + "-old"
    existing["spec"]["stopped"] = True  # stored but never started: only its spec matters here
    try:
        created = w.module("rlark_job", {"definition": existing})
        assert created.get("changed"), created
        w.created.append(existing["metadata"]["name"])
        new = with_secrets(rendered["job"])
        play = [{
            "name": "Secrets in a Job definition", "hosts": "localhost", "gather_facts": False,
            "tasks": [
                {"name": "Create a Job with secrets", "rlark.ops.rlark_job": {"definition": new}},
                {"name": "Update a Job with secrets", "rlark.ops.rlark_job": {"definition": with_secrets(existing),
                                                                              "update": True}},
            ],
        }]  # fmt: skip
        path = str(tmp_path / "secrets.yml")
        with open(path, "w") as fh:
            yaml.safe_dump(play, fh)
        log = str(tmp_path / "ansible.log")
        env = ansible_env(sandbox.env(), sandbox.kubeconfig)
        env.update(ANSIBLE_LOG_PATH=log, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default")
        cmd = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", path]
        run = subprocess.run(
            cmd + ["--check", "--diff", "-v"], env=env, cwd=ROOT, capture_output=True, text=True, check=False
        )
        assert run.returncode == 0, run.stdout + run.stderr
        with open(log) as fh:
            texts = {"stdout": run.stdout, "stderr": run.stderr, "log": fh.read()}
        # The diffs did print (the create and the env update), with the placeholder where the values were.
        assert texts["stdout"].count("changed: [localhost]") == 2, texts["stdout"]
        diffs = [part.split("changed: [localhost]")[0] for part in texts["stdout"].split("+++ after")[1:]]
        assert len(diffs) == 2, texts["stdout"]
        for diff in diffs:
            assert all(diff.count('"%s"' % name) == 1 for name in SECRETS), diff
            assert diff.count(MASK) == len(SECRETS), diff
        leaks = [(where, name) for where, text in texts.items() for name, value in SECRETS.items() if value in text]
        assert leaks == []
        # Check mode wrote nothing: the new Job does not exist, the old one kept its env (independent reader).
        assert get_job(sandbox, w.name) is None
        old = get_job(sandbox, w.name + "-old")
        assert not set(SECRETS) & set(head_env(old)), head_env(old)
    finally:
        w.cleanup()
