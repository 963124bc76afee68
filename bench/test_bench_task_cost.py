# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one rlark task costs a one-task play (issue #25, item 7); results in bench/results/task_cost.json.

A one-task playbook running ``rlark.ops.rlark_ckpt_gate`` on a 25-step Megatron torch_dist root (99,100
files, newest step complete) against a one-task playbook running ``ansible.builtin.command: true``, both
as whole ``ansible-playbook`` processes on localhost with the local connection: (gate play - command
play) <= 0.3x one ``find <root> -printf '%s %T@\\n'`` walk of the root. Each figure is the minimum of
ROUNDS interleaved runs (find, gate play, command play, ...) on this shared machine; medians are kept too.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_trees as T  # noqa: E402

RESULTS = os.path.join(ROOT, "bench", "results")
ROUNDS = 5
STEPS = 25
RATIO = 0.3
PLAY = """- hosts: localhost
  gather_facts: false
  tasks:
    - name: The one task
%s
"""
GATE_TASK = """      rlark.ops.rlark_ckpt_gate:
        path: %s
        quiet_seconds: 120"""
TRUE_TASK = """      ansible.builtin.command: "true"
      changed_when: false"""


@pytest.fixture(scope="module")
def plays():
    base = tempfile.mkdtemp(prefix="task-cost-")
    root = os.path.join(base, "checkpoints")
    count = T.write_tree(root, T.torch_dist_step, STEPS, first=100, mtime=time.time() - 86400)
    paths = {}
    for name, task in (("gate", GATE_TASK % root), ("true", TRUE_TASK)):
        paths[name] = os.path.join(base, name + ".yml")
        with open(paths[name], "w") as fh:
            fh.write(PLAY % task)
    yield root, count, paths
    shutil.rmtree(base, ignore_errors=True)


def wall(argv, env=None):
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False)
    took = time.perf_counter() - start
    assert proc.returncode == 0, (proc.stdout.decode()[-1500:], proc.stderr.decode()[-1500:])
    return took


def test_one_gate_task_costs_little_more_than_one_command_task(plays):
    root, count, paths = plays
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
    )
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

    def play(name):
        return wall([playbook, "-i", "localhost,", "-c", "local", paths[name]], env=env)

    find = ["find", root, "-printf", "%s %T@\n"]
    wall(find), play("gate"), play("true")  # warm the caches once for all
    times = {"find": [], "gate": [], "true": []}
    for _round in range(ROUNDS):
        times["find"].append(wall(find))
        times["gate"].append(play("gate"))
        times["true"].append(play("true"))
    data = {
        "files": count,
        "steps": STEPS,
        "rounds": ROUNDS,
        "seconds": {k: {"min": round(min(v), 4), "median": round(statistics.median(v), 4)} for k, v in times.items()},
        "ratio_gate_minus_command_over_find": round((min(times["gate"]) - min(times["true"])) / min(times["find"]), 4),
        "target": RATIO,
    }
    data["goal_met"] = data["ratio_gate_minus_command_over_find"] <= RATIO
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "task_cost.json"), "w") as fh:
        json.dump(data, fh, indent=2)
    print("\ntask cost: %s" % json.dumps(data))
    assert count == STEPS * 3964
