# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_node_match at fleet scale and the API cost of a stop, on an isolated sandbox.

1. 10,000 Node CRs in 50 cluster namespaces; a Job with 8 selectors. The ``rlark_node_match`` task's
   wall time (from ansible-playbook's json callback) must be <= 1.0x a loop of 8
   ``kubectl get nodes.rlinf.io -A -l <selector> -o json`` against the same API server, measured
   side by side (median of several rounds). Peak memory of both is reported.
2. ``rlark_job state=stopped wait=false`` on a 3-task Job: at most 3 API calls.

Results go to bench/results/node_match.json and bench/results/stop.json and are printed.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".build", "collections"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from ansible_collections.rlark.ops.plugins.module_utils.kube import client_from_params, resource_path  # noqa: E402
from figures import save  # noqa: E402
from helpers import ansible_env, ensure_collection_link  # noqa: E402

KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")
NAMESPACES = 50
NODES_PER_NAMESPACE = 200
ROUNDS = 5
RATIO_TARGET = 1.0
STOP_CALLS_TARGET = 3


def ctl(state_dir, *args):
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "sandbox", "sandboxctl.py"), *args],
        env=dict(os.environ, RLARK_SANDBOX_DIR=state_dir),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def bench_sandbox():
    """A sandbox of its own (so 10,000 Node CRs never reach the shared one), stopped afterwards."""
    build = subprocess.run(
        ["bash", os.path.join(ROOT, "sandbox", "build.sh")], capture_output=True, text=True, check=False
    )
    assert build.returncode == 0, build.stderr
    ensure_collection_link()
    state_dir = tempfile.mkdtemp(prefix="rlark-bench-")
    try:
        ctl(state_dir, "up")
        yield state_dir
    finally:
        ctl(state_dir, "down")


def node(ns_index, index):
    ns = "rlark-bench-%02d" % ns_index
    name = "bench-%02d-%03d" % (ns_index, index)
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "rlark.io/agent-type": "Kubernetes",
        "rlark.io/cluster-id": ns,
        "rlinf.io/pool": "pool-%d" % (index % 10),
        "bench.rlark.io/group": "g-%02d-%02d" % (ns_index, index // 4),
    }
    annotations = {"rlark.io/gpu-model": "A100", "rlark.io/city": "bench"}
    return ns, {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Node",
        "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": annotations},
        "spec": {"agentType": "Kubernetes", "unschedulable": False},
    }


def seed(kubeconfig):
    """Create the namespaces and Node CRs with 8 parallel connections; returns seconds taken."""
    admin = client_from_params({"kubeconfig": kubeconfig}, timeout=600)
    for i in range(NAMESPACES):
        admin.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "rlark-bench-%02d" % i}})
    work = [node(i, j) for i in range(NAMESPACES) for j in range(NODES_PER_NAMESPACE)]
    started = time.monotonic()
    errors = []

    def worker(chunk):
        client = client_from_params({"kubeconfig": kubeconfig}, timeout=600)
        try:
            for ns, obj in chunk:
                client.create(resource_path("nodes", namespace=ns), obj)
        except Exception as exc:  # reported below; the bench cannot run on a partial fleet
            errors.append(exc)
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(work[k::8],)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    return time.monotonic() - started


POD = {
    "spec": {"containers": [{"name": "main", "image": "rlinf/rlinf:bench", "resources": {"requests": {"cpu": "1"}}}]}
}


def bench_job():
    """8 tasks: a head on one hostname, seven groups of 4 nodes in different clusters."""
    tasks = [
        {
            "name": "actor",
            "head": True,
            "role": "Actor",
            "nodeSelector": {"kubernetes.io/hostname": "bench-07-100"},
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 1, "template": POD}},
        }
    ]
    for k in range(7):
        tasks.append(
            {
                "name": "w%d" % k,
                "role": "Rollout",
                "nodeSelector": {"bench.rlark.io/group": "g-%02d-%02d" % (7 * k + 1, k)},
                "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": 4, "template": POD}},
            }
        )
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job", "metadata": {"name": "bench"}, "spec": {"tasks": tasks}}


def label_selector(selector):
    return ",".join("%s=%s" % kv for kv in sorted(selector.items()))


def kubectl_loop(kubeconfig, selectors):
    """Wall time and peak RSS (KiB) of the 8 kubectl calls, run from a fresh helper process."""
    code = (
        "import resource, subprocess, sys, time, json\n"
        "t = time.monotonic()\n"
        "for sel in sys.argv[3:]:\n"
        "    out = subprocess.run([sys.argv[1], '--kubeconfig', sys.argv[2], 'get', 'nodes.rlinf.io', '-A',"
        " '-l', sel, '-o', 'json'], capture_output=True, check=True).stdout\n"
        "    assert json.loads(out)['items']\n"
        "print(json.dumps({'seconds': time.monotonic() - t,"
        " 'peak_rss_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, KUBECTL, kubeconfig, *selectors], capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout)


def write_playbook(workdir, module, args):
    play = [
        {
            "name": "bench",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [{"name": "measured", "rlark.ops." + module: args}],
        }
    ]
    path = os.path.join(workdir, "%s.yml" % module)
    with open(path, "w") as handle:
        yaml.safe_dump(play, handle)
    return path


TIMER_CALLBACK = """
import json, os, time
from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_timer"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._start = time.monotonic()

    def _done(self, result):
        out = {"seconds": time.monotonic() - self._start, "result": result._result}
        with open(os.environ["BENCH_TIMER_OUT"], "w") as handle:
            json.dump(out, handle, default=str)

    v2_runner_on_ok = v2_runner_on_failed = _done
"""


def run_task(playbook, env):
    """Run the playbook; a small callback times the task (start to result); returns (seconds, result)."""
    workdir = os.path.dirname(playbook)
    plugins = os.path.join(workdir, "callback_plugins")
    os.makedirs(plugins, exist_ok=True)
    with open(os.path.join(plugins, "bench_timer.py"), "w") as handle:
        handle.write(TIMER_CALLBACK)
    out = os.path.join(workdir, "timer.json")
    run_env = dict(env, ANSIBLE_CALLBACK_PLUGINS=plugins, ANSIBLE_CALLBACKS_ENABLED="bench_timer", BENCH_TIMER_OUT=out)
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local"]
    proc = subprocess.run([*cmd, playbook], env=run_env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out) as handle:
        data = json.load(handle)
    return data["seconds"], data["result"]


def playbook_peak_rss(playbook, env):
    """Peak RSS (KiB) of ansible-playbook and its workers (the action plugin runs in a worker)."""
    code = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local"]
    proc = subprocess.run(
        [sys.executable, "-c", code, *cmd, playbook], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return int(proc.stdout.strip())


def core_peak_rss(kubeconfig, job):
    """Peak RSS (KiB) of a bare Python process running only the proof core (no Ansible)."""
    code = (
        "import json, resource, sys\n"
        "sys.path.insert(0, %r)\n"
        "from ansible_collections.rlark.ops.plugins.module_utils.nodes import node_match\n"
        "node_match({'job': json.loads(sys.argv[1]), 'kubeconfig': sys.argv[2], 'fail_on_findings': False})\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n" % os.path.join(ROOT, ".build", "collections")
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(job), kubeconfig], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return int(proc.stdout.strip())


def test_bench_node_match_vs_kubectl(bench_sandbox):
    kubeconfig = os.path.join(bench_sandbox, "kubeconfig")
    seconds_seed = seed(kubeconfig)
    job = bench_job()
    selectors = [label_selector(t["nodeSelector"]) for t in job["spec"]["tasks"]]
    workdir = tempfile.mkdtemp(prefix="bench-nm-")
    env = ansible_env({"K8S_AUTH_KUBECONFIG": kubeconfig, "KUBECONFIG": kubeconfig})
    playbook = write_playbook(workdir, "rlark_node_match", {"job": job, "fail_on_findings": False})
    kubectl_loop(kubeconfig, selectors)  # warm kubectl's discovery cache, as an operator's would be
    run_task(playbook, env)
    module_times, kubectl_times, kubectl_rss = [], [], 0
    result = None
    for _round in range(ROUNDS):
        seconds, result = run_task(playbook, env)
        module_times.append(seconds)
        loop = kubectl_loop(kubeconfig, selectors)
        kubectl_times.append(loop["seconds"])
        kubectl_rss = max(kubectl_rss, loop["peak_rss_kib"])
    proof_tasks = result["proof"]["tasks"]
    assert [t["count"] for t in proof_tasks] == [1] + [4] * 7
    playbook_rss = playbook_peak_rss(playbook, env)
    core_rss = core_peak_rss(kubeconfig, job)
    ratio = statistics.median(module_times) / statistics.median(kubectl_times)
    out = {
        "nodes": NAMESPACES * NODES_PER_NAMESPACE,
        "namespaces": NAMESPACES,
        "selectors": len(selectors),
        "seed_seconds": round(seconds_seed, 1),
        "rounds": ROUNDS,
        "rlark_node_match_task_seconds_median": round(statistics.median(module_times), 3),
        "rlark_node_match_task_seconds": [round(s, 3) for s in module_times],
        "kubectl_loop_seconds_median": round(statistics.median(kubectl_times), 3),
        "kubectl_loop_seconds": [round(s, 3) for s in kubectl_times],
        "ratio": round(ratio, 3),
        "ratio_target": RATIO_TARGET,
        "api_calls": result["api_calls"],
        "ansible_playbook_peak_rss_mib": round(playbook_rss / 1024.0, 1),
        "proof_core_peak_rss_mib": round(core_rss / 1024.0, 1),
        "kubectl_peak_rss_mib": round(kubectl_rss / 1024.0, 1),
    }
    save("node_match.json", out)
    assert ratio <= RATIO_TARGET, out


def test_bench_stop_api_calls(bench_sandbox):
    kubeconfig = os.path.join(bench_sandbox, "kubeconfig")
    operator = os.path.join(bench_sandbox, "kubeconfig-operator")
    job = bench_job()
    job["metadata"]["name"] = "bench-stop"
    job["spec"]["tasks"] = job["spec"]["tasks"][:3]
    client = client_from_params({"kubeconfig": kubeconfig})
    client.create(resource_path("jobs"), job)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        tasks = client.list(resource_path("tasks"), label_selector="rlinf.io/job=bench-stop")[0]
        if len(tasks) == 3:
            break
        time.sleep(0.5)
    workdir = tempfile.mkdtemp(prefix="bench-stop-")
    env = ansible_env({"K8S_AUTH_KUBECONFIG": operator, "KUBECONFIG": operator})
    playbook = write_playbook(workdir, "rlark_job", {"name": "bench-stop", "state": "stopped", "wait": False})
    seconds, result = run_task(playbook, env)
    assert result["changed"] and len(result["tasks"]) == 3
    out = {
        "job_tasks": 3,
        "api_calls": result["api_calls"],
        "api_retries": result["api_retries"],
        "api_calls_target": STOP_CALLS_TARGET,
        "task_seconds": round(seconds, 3),
    }
    save("stop.json", out)
    assert result["api_calls"] <= STOP_CALLS_TARGET, out
