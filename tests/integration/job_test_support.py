# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared pieces of the rlark_job / rlark_node_match integration tests (not a test module).

Modules run through ``ansible-playbook`` (so ``--check`` and ``--diff`` are the real thing) with the
least-privilege ``operator`` kubeconfig unless a test says otherwise; fixtures use the admin
kubeconfig through the collection's own client.
"""

import contextlib
import json
import os
import random
import string
import subprocess
import sys
import tempfile

import pytest
import yaml
from helpers import ansible_env, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.join(ROOT, ".build", "collections") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, ".build", "collections"))

from ansible_collections.rlark.ops.plugins.module_utils import jobs as jobs_core  # noqa: E402
from ansible_collections.rlark.ops.plugins.module_utils.kube import (  # noqa: E402
    ApiError,
    client_from_params,
    resource_path,
)

__all__ = ["ApiError", "client_from_params", "jobs_core", "resource_path", "wait_until"]


ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
TEST_ACTIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "action_plugins")  # rlark_test_save


# --- helpers shared by the job and node_match integration tests -----------------------------------


def unique(prefix="h3"):
    return "%s-%s" % (prefix, "".join(random.choice(string.ascii_lowercase + string.digits) for _i in range(6)))


def admin_client(sandbox, timeout=120):
    return client_from_params({"kubeconfig": sandbox.kubeconfig}, timeout=timeout)


def run_module(
    sandbox, module, args, check=False, diff=False, kubeconfig="operator", env=None, task_env=None, with_stdout=False
):
    """Run one module task with ansible-playbook; returns its registered result (and stdout if asked).

    ``env`` goes to ansible-playbook's process; ``task_env`` becomes the task's ``environment``.
    """
    args = dict(args)
    if kubeconfig and "kubeconfig" not in args and "host" not in args:
        args["kubeconfig"] = sandbox.kubeconfig_operator if kubeconfig == "operator" else kubeconfig
    workdir = tempfile.mkdtemp(prefix="h3-play-")
    out = os.path.join(workdir, "result.json")
    play = [
        {
            "name": "Integration test",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Module under test",
                    "rlark.ops." + module: args,
                    "register": "result",
                    "ignore_errors": True,
                    "environment": task_env or {},
                },
                {
                    "name": "Save the result",
                    "rlark_test_save": {"content": "{{ result | to_json }}", "dest": out},
                    "check_mode": False,
                },
            ],
        }
    ]
    path = os.path.join(workdir, "play.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(play, handle)
    cmd = [ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", path]
    cmd += ["--check"] if check else []
    cmd += ["--diff"] if diff else []
    proc = subprocess.run(
        cmd,
        env=dict(ansible_env(dict(sandbox.env(), **(env or {}))), ANSIBLE_ACTION_PLUGINS=TEST_ACTIONS),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert os.path.exists(out), "ansible-playbook failed:\n%s\n%s" % (proc.stdout, proc.stderr)
    with open(out) as handle:
        result = json.load(handle)
    return (result, proc.stdout) if with_stdout else result


def demo_job(name, stopped=False):
    """Three StatefulSet tasks on the a100 cluster, no GPU requests (other tests share the fleet)."""

    def template(head=False):
        main = {
            "name": "main",
            "image": "rlinf/rlinf:agentic-rlinf0.1-torch2.6.0",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        }
        return {
            "spec": {
                "containers": [main],
                "volumes": [{"name": "data", "hostPath": {"path": "/data/rlinf"}}],
            }
        }

    def task(tname, role, selector, replicas, head=False):
        t = {
            "name": tname,
            "role": role,
            "agentType": "Kubernetes",
            "nodeSelector": selector,
            "kubernetes": {"workload": {"kind": "StatefulSet", "replicas": replicas, "template": template(head)}},
        }
        if head:
            t["head"] = True
            t["runScript"] = (
                "cd /opt/rlinf && python examples/embodiment/train_embodied_agent.py --config-name h3 "
                "runner.logger.log_path=/data/rlinf/h3/%s runner.save_interval=100000 runner.max_steps=1000000" % name
            )
        return t

    return {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"rlark-test": "h3"}},
        "spec": {
            "stopped": stopped,
            "tasks": [
                task("actor", "Actor", {"kubernetes.io/hostname": "a100-01"}, 1, head=True),
                task("rollout", "Rollout", {"rlinf.io/pool": "rollout"}, 2),
                task("env", "Env", {"kubernetes.io/hostname": "a100-02"}, 1),
            ],
        },
    }


def _cleanup(sandbox):
    """Names of Jobs to delete (admin, background) after the test."""
    names = []
    yield names
    client = admin_client(sandbox)
    for name in names:
        with contextlib.suppress(ApiError):  # already gone
            client.delete(resource_path("jobs", name))
    client.close()


# Test modules bind it by assignment: ``cleanup = job_test_support.cleanup``.
cleanup = pytest.fixture(_cleanup)


def running_job(sandbox, cleanup, grace=None):
    """`grace`: the templates' terminationGracePeriodSeconds (how long rlark-sim keeps Pod CRs after a stop)."""
    name = unique()
    cleanup.append(name)
    job = demo_job(name)
    for task in job["spec"]["tasks"] if grace is not None else []:
        task["kubernetes"]["workload"]["template"]["spec"]["terminationGracePeriodSeconds"] = grace
    result = run_module(sandbox, "rlark_job", {"definition": job, "wait": True, "wait_timeout": 180})
    assert result["changed"] and not result.get("failed"), result.get("msg")
    assert len(result["tasks"]) == 3 and {t["status"]["phase"] for t in result["tasks"]} == {"Running"}
    return name
