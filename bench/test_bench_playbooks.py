# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Playbook figures on the live sandbox (needs `make sandbox-up`; `make bench` runs it).

- migrate.yml end to end: <= 15 s wall and <= 10 Python-module task runs (counted by
  callback_plugins/rlark_module_count.py, retries included).
- guarded_stop.yml over 20 Jobs <= 3x the wall time for 1 Job.
"""

import json
import os
import random
import string
import subprocess
import sys
import tempfile
import time

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from helpers import ansible_env, read_env_file  # noqa: E402

SANDBOX = os.environ.get("RLARK_SANDBOX_DIR") or os.path.join(ROOT, ".sandbox")
INVENTORY = os.path.join(ROOT, "examples", "sandbox", "inventory.yml")
RESULTS = os.path.join(ROOT, "bench", "results")
MIGRATE_WALL_S = 15.0
MIGRATE_MODULE_RUNS = 10
STOP_RATIO = 3.0


def sandbox_env():
    status = subprocess.run(
        [sys.executable, os.path.join(ROOT, "sandbox", "sandboxctl.py"), "status"],
        capture_output=True,
        text=True,
        check=False,
    )
    if status.returncode != 0:
        pytest.fail("the sandbox is not running (make sandbox-up):\n" + status.stdout)
    return read_env_file(os.path.join(SANDBOX, "env"))


def playbook(path, extra, forks=None, env=None):
    handle, count_file = tempfile.mkstemp(suffix=".json")
    os.close(handle)
    run_env = ansible_env(env)
    run_env.update(
        ANSIBLE_CALLBACK_PLUGINS=os.path.join(ROOT, "bench", "callback_plugins"),
        ANSIBLE_CALLBACKS_ENABLED="rlark_module_count",
        RLARK_MODULE_COUNT_FILE=count_file,
    )
    cmd = [
        os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
        "-i",
        INVENTORY,
        path,
        "-e",
        json.dumps(extra),
    ]
    if forks:
        cmd += ["--forks", str(forks)]
    start = time.monotonic()
    proc = subprocess.run(cmd, env=run_env, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    with open(count_file) as fh:
        counted = json.load(fh) if os.path.getsize(count_file) else {"module_runs": None}
    os.unlink(count_file)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return wall, counted


def save(name, data):
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, name), "w") as fh:
        json.dump(data, fh, indent=2)
    print("\n%s: %s" % (name, json.dumps(data)))


def suffix():
    return "".join(random.choice(string.ascii_lowercase + string.digits) for _index in range(5))


def delete(names, env):
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Delete",
                    "rlark.ops.rlark_job": {"name": "{{ item }}", "state": "absent", "wait": True},
                    "loop": names,
                }
            ],
        }
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as fh:
        yaml.safe_dump(play, fh)
    playbook(fh.name, {}, env=env)
    os.unlink(fh.name)


def test_migrate_wall_time_and_module_runs(tmp_path):
    env = sandbox_env()
    name = "bench-" + suffix()
    with open(os.path.join(ROOT, "examples", "sandbox", "launch_manifest.yml")) as fh:
        manifest = yaml.safe_load(fh)
    manifest["job"]["name"] = name
    # its own checkpoint directory, as an operator gives each run (a demo may have written into "demo")
    for entry in manifest["hydra"]["overrides"]:
        if entry["override"].startswith("runner.logger.experiment_name="):
            entry["override"] = "runner.logger.experiment_name=" + name
    path = tmp_path / "launch_manifest.yml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    os.makedirs(os.path.join(SANDBOX, "nodes", "a100-01", "data", "rlinf"), exist_ok=True)
    try:
        wall, counted = playbook(
            os.path.join(ROOT, "playbooks", "migrate.yml"),
            {"rlark_launch_manifest": str(path), "rlark_records_dir": str(tmp_path / "records")},
            env=env,
        )
        rerun_wall, rerun_counted = playbook(
            os.path.join(ROOT, "playbooks", "migrate.yml"),
            {"rlark_launch_manifest": str(path), "rlark_records_dir": str(tmp_path / "records")},
            env=env,
        )
    finally:
        delete([name], env)
    save(
        "playbook_migrate.json",
        {
            "wall_s": round(wall, 2),
            "module_runs": counted["module_runs"],
            "by_action": counted.get("by_action"),
            "in_process_actions": counted.get("in_process_actions"),
            "rerun_wall_s": round(rerun_wall, 2),
            "rerun_module_runs": rerun_counted["module_runs"],
            "targets": {"wall_s": MIGRATE_WALL_S, "module_runs": MIGRATE_MODULE_RUNS},
        },
    )
    assert wall <= MIGRATE_WALL_S
    assert counted["module_runs"] <= MIGRATE_MODULE_RUNS


def small_job(name):
    """A one-task Job on edge-01 (no GPU) whose trainer saves every 10 fast steps on a hostPath."""
    script = (
        "cd /w && python train.py runner.logger.log_path=/data/rlinf/logs "
        "runner.logger.experiment_name=%s runner.save_interval=10 runner.max_steps=100000" % name
    )
    env = [
        {"name": "SIM_STEP_SECONDS", "value": "0.3"},
        {"name": "SIM_SAVE_SECONDS", "value": "0.5"},
        {"name": "SIM_RLINF_WORLD_SIZE", "value": "1"},
    ]
    container = {
        "name": "main",
        "image": "registry.example.com/rlinf/rlinf@sha256:" + "5" * 64,
        "env": env,
        "volumeMounts": [{"name": "data", "mountPath": "/data/rlinf"}],
    }
    return {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "tasks": [
                {
                    "name": "head",
                    "head": True,
                    "role": "Actor",
                    "agentType": "Kubernetes",
                    "runScript": script,
                    "nodeSelector": {"kubernetes.io/hostname": "edge-01"},
                    "kubernetes": {
                        "workload": {
                            "kind": "StatefulSet",
                            "replicas": 1,
                            "template": {
                                "spec": {
                                    "containers": [container],
                                    "volumes": [{"name": "data", "hostPath": {"path": "/data/rlinf"}}],
                                }
                            },
                        }
                    },
                }
            ]
        },
    }


def start_jobs(names, env):
    os.makedirs(os.path.join(SANDBOX, "nodes", "edge-01", "data", "rlinf"), exist_ok=True)
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Create",
                    "rlark.ops.rlark_job": {"definition": "{{ item }}", "wait": True},
                    "loop": [small_job(n) for n in names],
                }
            ],
        }
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as fh:
        yaml.safe_dump(play, fh)
    playbook(fh.name, {}, env=env)
    os.unlink(fh.name)
    deadline = time.monotonic() + 120
    for n in names:
        root = os.path.join(SANDBOX, "nodes", "edge-01", "data", "rlinf", "logs", n, "checkpoints")
        while not (os.path.isdir(root) and os.listdir(root)):
            assert time.monotonic() < deadline, "no checkpoint for %s" % n
            time.sleep(0.5)


def stop(names, env, forks):
    extra = {
        "rlark_jobs": names,
        "rlark_launch_manifest": "",
        "rlark_save_window_seconds": 60,
        "rlark_gate_options": {"quiet_seconds": 1},
        "rlark_records_dir": tempfile.mkdtemp(prefix="rlark-bench-records-"),
    }
    return playbook(os.path.join(ROOT, "playbooks", "guarded_stop.yml"), extra, forks=forks, env=env)


def test_guarded_stop_20_jobs_within_3x_one_job():
    env = sandbox_env()
    tag = suffix()
    one = ["gs1-%s" % tag]
    many = ["gs20-%s-%02d" % (tag, i) for i in range(20)]
    forks = int(os.environ.get("RLARK_BENCH_FORKS", "20"))
    try:
        start_jobs(one, env)
        wall_one = stop(one, env, forks)[0]
        start_jobs(many, env)
        wall_many, counted = stop(many, env, forks)
    finally:
        delete(one + many, env)
    ratio = wall_many / wall_one
    save(
        "playbook_guarded_stop.json",
        {
            "one_job_wall_s": round(wall_one, 2),
            "twenty_jobs_wall_s": round(wall_many, 2),
            "ratio": round(ratio, 2),
            "forks": forks,
            "target_ratio": STOP_RATIO,
            "module_runs_20": counted["module_runs"],
        },
    )
    assert ratio <= STOP_RATIO
