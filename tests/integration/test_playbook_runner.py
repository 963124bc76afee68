"""The four playbooks through ansible-runner, the way AWX/AAP and EDA's run_playbook start them.

The collection comes from its built tarball, installed with ``ansible-galaxy collection install`` into a
collections dir of its own (not the checkout). Each run gets an ansible-runner private data dir as AWX
writes one: ``inventory/hosts`` (the sandbox inventory and its group_vars), ``env/envvars`` (the collections path, the
sandbox's exports and the credential's ``K8S_AUTH_KUBECONFIG``, the EE's Python), ``env/extravars`` (the
survey/extra vars) and ``ansible-runner run <dir> -p rlark.ops.<playbook>``. The artifacts (status, rc,
job_events) must show the outcome, and ansible-playbook must agree with it: verify (read-only) gives the
same task outcomes in the same order; after a runner migrate, stop or resume, ansible-playbook finds the
work done (changed=0, "already stopped", "already resumed as <the Job runner created>").
"""

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from helpers import VENV_BIN, install_collection_tarball, read_env_file
from playbook_support import INVENTORY, Workload, all_output

pytestmark = pytest.mark.sandbox


class RunnerRun:
    """The artifacts of one ``ansible-runner run``: status, rc, stdout and the job events."""

    def __init__(self, pdd, ident, proc):
        self.dir = os.path.join(pdd, "artifacts", ident)
        self.proc = proc
        with open(os.path.join(self.dir, "status")) as fh:
            self.status = fh.read().strip()
        with open(os.path.join(self.dir, "rc")) as fh:
            self.rc = int(fh.read().strip())
        with open(os.path.join(self.dir, "stdout")) as fh:
            self.stdout = fh.read()
        self.events = []
        for path in glob.glob(os.path.join(self.dir, "job_events", "*.json")):
            with open(path) as fh:
                self.events.append(json.load(fh))
        self.events.sort(key=lambda e: e["counter"])

    def task_outcomes(self):
        """[(task, host, ok|failed|skipped|ignored)] in order, as the test callback reports them."""
        kinds = {"runner_on_ok": "ok", "runner_on_failed": "failed", "runner_on_skipped": "skipped"}
        out = []
        for e in self.events:
            if e["event"] in kinds:
                data = e["event_data"]
                kind = (
                    "ignored" if data.get("ignore_errors") and e["event"] == "runner_on_failed" else kinds[e["event"]]
                )
                out.append((data["task"], data["host"], kind))
        return out

    def result(self, task):
        """The result of the last run of ``task`` on localhost."""
        found = [
            e["event_data"]["res"]
            for e in self.events
            if e["event"] == "runner_on_ok"
            and e["event_data"]["task"] == task
            and e["event_data"]["host"] == "localhost"
        ]
        assert found, "no ok result of %r in the runner's events" % task
        return found[-1]

    @property
    def stats(self):
        (stats,) = [e["event_data"] for e in self.events if e["event"] == "playbook_on_stats"]
        return stats

    def failures(self):
        return [
            (e["event_data"]["task"], e["event_data"]["host"], str(e["event_data"]["res"].get("msg", ""))[:2000])
            for e in self.events
            if e["event"] == "runner_on_failed" and not e["event_data"].get("ignore_errors")
        ]

    def __repr__(self):
        return "RunnerRun(status=%s, rc=%s, failed tasks: %s)\n%s\n%s" % (
            self.status,
            self.rc,
            self.failures(),
            self.stdout[-3000:],
            self.proc.stderr[-2000:],
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The collection installed from its built tarball into a collections dir of its own."""
    return install_collection_tarball(str(tmp_path_factory.mktemp("tarball")))


class Runner:
    def __init__(self, sandbox, collections, base):
        self.sandbox, self.collections, self.base = sandbox, collections, base
        self.count = 0

    def run(self, playbook, extravars, kubeconfig=None):
        self.count += 1
        ident = "%s-%d" % (playbook, self.count)
        pdd = os.path.join(self.base, ident)
        for sub in ("env", "project"):
            os.makedirs(os.path.join(pdd, sub))
        # An AWX inventory source from the project: the inventory file with its group_vars.
        shutil.copytree(
            os.path.join(os.path.dirname(INVENTORY), "group_vars"), os.path.join(pdd, "inventory", "group_vars")
        )
        shutil.copy(INVENTORY, os.path.join(pdd, "inventory", "hosts.yml"))
        envvars = read_env_file(os.path.join(self.sandbox.dir, "env"))
        envvars.update(
            {
                "ANSIBLE_COLLECTIONS_PATH": self.collections,  # only the installed tarball
                "K8S_AUTH_KUBECONFIG": kubeconfig or self.sandbox.kubeconfig,  # AWX's Kubernetes credential
                "RLARK_SANDBOX_DIR": self.sandbox.dir,  # the inventory's node roots
                "ANSIBLE_PYTHON_INTERPRETER": sys.executable,  # the EE's Python, with requirements.txt installed
                "ANSIBLE_NOCOLOR": "1",
            }
        )
        with open(os.path.join(pdd, "env", "envvars"), "w") as fh:
            yaml.safe_dump(envvars, fh)
        with open(os.path.join(pdd, "env", "extravars"), "w") as fh:
            yaml.safe_dump(extravars, fh)
        cmd = [os.path.join(VENV_BIN, "ansible-runner"), "run", pdd, "-p", "rlark.ops." + playbook, "--ident", ident]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "K8S_AUTH_"))}
        env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, check=False)
        return RunnerRun(pdd, ident, proc)


@pytest.fixture(scope="module")
def chain(sandbox, installed, tmp_path_factory):
    """One workload through migrate, verify, guarded_stop and resume, each started by ansible-runner."""
    w = Workload(sandbox, tmp_path_factory.mktemp("runner-workload"))
    runner = Runner(sandbox, installed, str(tmp_path_factory.mktemp("runner-pdd")))
    state = {"w": w, "runner": runner}
    yield state
    w.cleanup()


def successful(run):
    if run.status != "successful" or run.rc != 0:
        pytest.fail(repr(run), pytrace=False)
    assert run.stats["failures"] == {} and run.stats["dark"] == {}, run.stats
    return run


def test_migrate_through_ansible_runner(chain):
    w, runner = chain["w"], chain["runner"]
    run = successful(runner.run("migrate", w.vars()))
    assert run.stats["changed"].get("localhost", 0) > 0, run.stats
    job = w.info()
    assert job is not None and job["job"]["status"]["phase"] == "Running", job
    assert w.records_of("run"), "no run record"
    chain["migrated"] = True
    # ansible-playbook agrees: the same inputs find the Job as created, nothing to change.
    again = w.play("migrate.yml")
    assert again.rc == 0 and again.stats["localhost"]["changed"] == 0, again


def test_verify_through_ansible_runner_matches_ansible_playbook(chain):
    w, runner = chain["w"], chain["runner"]
    assert chain.get("migrated"), "migrate did not run"
    run = successful(runner.run("verify", w.vars(rlark_job_name=w.name)))
    direct = w.play("verify.yml", extra={"rlark_job_name": w.name})
    assert direct.rc == 0, direct
    expected = [(t["task"], t["host"], t["status"]) for t in direct.data["tasks"]]
    assert run.task_outcomes() == expected
    assert w.records_of("verify"), "no verify record"


def test_guarded_stop_through_ansible_runner(chain, sandbox):
    w, runner = chain["w"], chain["runner"]
    assert chain.get("migrated"), "migrate did not run"
    w.wait_steps(1)
    run = successful(runner.run("guarded_stop", w.vars(rlark_jobs=[w.name]), kubeconfig=sandbox.kubeconfig_operator))
    table = run.result("Build the summary")["decision"]["table"]
    line = next(x for x in table.splitlines() if x.startswith(w.name + " "))
    assert " stopped " in line + " ", table
    (record,) = w.records_of("stop")
    assert record["data"]["outcome"] == "stopped", record
    info = w.info()
    assert info["job"]["spec"]["stopped"] is True and info["pods"] == []
    chain["stopped"] = True
    # ansible-playbook agrees: the Job is already stopped with a complete record.
    again = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra={"rlark_jobs": [w.name]})
    assert again.rc == 0 and "already stopped" in all_output(again), again


def test_resume_through_ansible_runner(chain):
    w, runner = chain["w"], chain["runner"]
    assert chain.get("stopped"), "the guarded stop did not run"
    new = w.name + "-r"
    w.created.append(new)
    run = successful(runner.run("resume", w.vars(rlark_resume_source=w.name, rlark_resume_name=new)))
    assert "new Job %s writes to its own directory" % new in run.stdout, run
    record = w.records_of("resume")[-1]["data"]
    assert record["new_job"] == new, record
    assert w.records_of("verify", job=new)[-1]["data"]["ok"]
    # ansible-playbook agrees: the resume is done, as the Job runner created.
    again = w.play("resume.yml", extra={"rlark_resume_source": w.name})
    assert again.rc == 0 and again.stats["localhost"]["changed"] == 0, again
    assert "already resumed as %s" % new in all_output(again), again
