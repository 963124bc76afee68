"""ansible-rulebook, for real: the shipped example rulebook stops Jobs at their step budget on the sandbox.

ansible-rulebook (PyPI, requirements-dev.txt, with Java 17 for its Drools engine) runs
``rlark.ops.guarded_stop_at_budget`` from the collection installed from its tarball, with the sandbox
inventory (and its group_vars) given to ``-i`` and the budget in ``--vars``. The event source gates each
Job's hostPath checkpoints on the node's inventory host (no host_path_template). Five Jobs, one after
another, each run to the budget: each is guarded-stopped by the rulebook's run_playbook exactly once, with
its stop record; a replay of the same action finds it "already stopped". The latency from the event
(ansible-rulebook's ``received_at``) to the stop patch (seen by polling the Job) goes to
bench/results/eda_rulebook.json (p50/p95/max over 5).
"""

import json
import os
import re
import shutil
import subprocess
import time
from datetime import datetime

import pytest
import yaml
from helpers import ROOT, VENV_BIN, install_collection_tarball, read_env_file, run_playbook
from kubernetes import client, config
from playbook_support import INVENTORY, Workload, all_output

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"
RULEBOOK = "rlark.ops.guarded_stop_at_budget"
STEP_BUDGET = 3  # the sandbox trainer saves every 3 steps: the first checkpoint reaches the budget
STOPS = int(os.environ.get("RLARK_EDA_STOPS") or 2)  # the bench asks for 5
JAVA_MISSING = (
    "ansible-rulebook needs Java 17 or later (its Drools engine runs in a JVM through jpy) and none was found: "
    "install a JDK/JRE 17+ (Debian: apt-get install -y openjdk-17-jre-headless) or set JAVA_HOME"
)


def java_home():
    """JAVA_HOME of a Java >= 17; the test fails (never skips) with JAVA_MISSING when there is none."""
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    assert java and os.path.exists(java), JAVA_MISSING
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    found = re.search(r'version "(\d+)', out)
    assert found and int(found.group(1)) >= 17, "%s (found: %s)" % (JAVA_MISSING, out.strip()[:200])
    return os.path.dirname(os.path.dirname(os.path.realpath(java)))


class RulebookRun:
    """ansible-rulebook in its own process group; its output in ``log``; ended by its pid."""

    def __init__(self, sandbox, collections, base, variables):
        self.base = base
        inventory = os.path.join(base, "inventory")
        # The sandbox inventory and its group_vars, less the per-Job inputs (a fleet inventory has no launch
        # manifest; the guarded stop finds each Job's checkpoints from the Job itself).
        with open(os.path.join(os.path.dirname(INVENTORY), "group_vars", "all.yml")) as fh:
            group_vars = yaml.safe_load(fh)
        for key in ("rlark_launch_manifest", "rlark_deployment_profile"):
            group_vars.pop(key)
        os.makedirs(os.path.join(inventory, "group_vars"))
        with open(os.path.join(inventory, "group_vars", "all.yml"), "w") as fh:
            yaml.safe_dump(group_vars, fh)
        shutil.copy(INVENTORY, os.path.join(inventory, "hosts.yml"))
        self.inventory = os.path.join(inventory, "hosts.yml")
        variables = dict(variables, rlark_inventory=self.inventory)
        with open(os.path.join(base, "budget.yml"), "w") as fh:
            yaml.safe_dump(variables, fh)
        env = dict(os.environ)
        env.update(read_env_file(os.path.join(sandbox.dir, "env")))
        env.update(
            ANSIBLE_COLLECTIONS_PATH=collections,
            JAVA_HOME=java_home(),
            PATH=VENV_BIN + os.pathsep + env.get("PATH", ""),
            ANSIBLE_PYTHON_INTERPRETER=os.path.join(VENV_BIN, "python"),
            RLARK_SANDBOX_DIR=sandbox.dir,
        )
        self.log = os.path.join(base, "ansible-rulebook.log")
        cmd = [os.path.join(VENV_BIN, "ansible-rulebook"), "-r", RULEBOOK, "-i", inventory]
        cmd += ["--vars", os.path.join(base, "budget.yml"), "--print-events", "-v"]
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=base, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def output(self):
        with open(self.log, errors="replace") as fh:
            return fh.read()

    def event_times(self, job):
        """received_at of each checkpoint_completed event of ``job`` (ansible-rulebook's --print-events)."""
        out = []
        for chunk in self.output().split("[received event]")[1:]:
            block = re.split(r"\n\*{20,}", chunk, maxsplit=1)[0]
            if "'type': 'checkpoint_completed'" in block and "'job': '%s'" % job in block:
                stamp = re.search(r"'received_at': '([^']+)'", block).group(1)
                out.append(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def wait_for(what, predicate, timeout, rulebook):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert rulebook.proc.poll() is None, "ansible-rulebook ended:\n%s" % rulebook.output()[-6000:]
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s; ansible-rulebook said:\n%s" % (what, rulebook.output()[-6000:]))


def stopped_at(jobs_api, name, rulebook, timeout=180):
    """Wall time at which the test first saw spec.stopped of ``name`` (polled every 0.1 s)."""

    def stopped():
        job = jobs_api.get_cluster_custom_object(GROUP, VERSION, "jobs", name)
        return time.time() if (job.get("spec") or {}).get("stopped") else None

    return wait_for("the rulebook's stop of %s" % name, stopped, timeout, rulebook)


def write_figures(samples):
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    figures = {
        "what": "ansible-rulebook %s: checkpoint_completed event (received_at) to the Job's stop patch" % RULEBOOK,
        "stops": len(samples),
        "seconds": [round(s, 3) for s in samples],
        "p50_seconds": round(ordered[len(ordered) // 2], 3),
        "p95_seconds": round(p95, 3),
        "max_seconds": round(ordered[-1], 3),
        "includes": "run_playbook start (ansible-runner) and the guarded_stop playbook up to its patch",
    }
    path = os.path.join(ROOT, "bench", "results", "eda_rulebook.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(figures, fh, indent=2, sort_keys=True)
    return figures


@pytest.fixture(scope="module")
def jobs_api(sandbox):
    config.load_kube_config(config_file=sandbox.kubeconfig)
    return client.CustomObjectsApi()


def test_rulebook_stops_each_job_at_its_budget_once(sandbox, tmp_path, jobs_api):
    token = "rb%d" % (time.time() * 1000 % 1e9)
    collections = install_collection_tarball(str(tmp_path / "tarball"))
    records = str(tmp_path / "records")
    variables = {
        "rlark_kubeconfig": sandbox.kubeconfig_operator,
        "rlark_label_selector": "rlark-test-rulebook=%s" % token,
        "rlark_step_budget": STEP_BUDGET,
        "rlark_time_budget_seconds": 86400,
        "rlark_object_storage": {},
        "rlark_checkpoint_interval": 1,
        "rlark_gate_options": {"quiet_seconds": 1},
    }
    os.environ["RLARK_RECORDS_DIR"] = records  # the inventory's group_vars read it (rlark_records_dir)
    rulebook = RulebookRun(sandbox, collections, str(tmp_path), variables)
    latencies = []
    try:
        for index in range(STOPS):

            def labelled(manifest, _profile):
                manifest["job"].setdefault("labels", {})["rlark-test-rulebook"] = token

            (tmp_path / ("job%d" % index)).mkdir()
            w = Workload(sandbox, tmp_path / ("job%d" % index), mutate=labelled)
            w.records = records
            try:
                run = w.play("migrate.yml")
                assert run.rc == 0, run
                patched = stopped_at(jobs_api, w.name, rulebook)
                wait_for(
                    "the stop record of %s" % w.name,
                    lambda w=w: [r for r in w.records_of("stop") if r["data"]["outcome"] == "stopped"],
                    120,
                    rulebook,
                )
                events = rulebook.event_times(w.name)
                assert events, "no checkpoint_completed event of %s was printed" % w.name
                latencies.append(patched - min(events))
                if index == 0:
                    check_once_and_replay(w, sandbox, rulebook, jobs_api)
            finally:
                w.cleanup()
    finally:
        rulebook.stop()
        os.environ.pop("RLARK_RECORDS_DIR", None)
    assert len(latencies) == STOPS and all(0 < s < 120 for s in latencies), latencies
    if os.environ.get("RLARK_EDA_STOPS"):
        print("\nansible-rulebook event-to-stop: %s" % write_figures(latencies))


def check_once_and_replay(w, sandbox, rulebook, jobs_api):
    """One stop patch and one stop record; the rulebook's action replayed (a repeated event) stops nothing."""
    wait_for(
        "the rulebook's run_playbook to end",
        lambda: rulebook.output().count("PLAY RECAP") >= 1,
        120,
        rulebook,
    )
    (record,) = w.records_of("stop")
    assert record["data"]["outcome"] == "stopped", record
    job = jobs_api.get_cluster_custom_object(GROUP, VERSION, "jobs", w.name)
    run_id = record.get("run_id") or record["data"].get("run_id")
    assert run_id and run_id in job["metadata"]["annotations"]["rlark.ops/guarded-stop-run"], (record, job["metadata"])
    # The action exactly as the rulebook runs it (its extra_vars, the inventory it was given).
    extra = {"rlark_jobs": [w.name], "rlark_kubeconfig": sandbox.kubeconfig_operator, "rlark_object_storage": {}}
    replay = run_playbook("playbooks/guarded_stop.yml", extra, env=sandbox.env(), inventory=rulebook.inventory)
    assert replay.rc == 0 and "already stopped" in all_output(replay), replay
    assert len(w.records_of("stop")) == 1
    job = jobs_api.get_cluster_custom_object(GROUP, VERSION, "jobs", w.name)
    assert run_id in job["metadata"]["annotations"]["rlark.ops/guarded-stop-run"], "a second stop patch"
