"""A fleet of small running Jobs for selection-wide guarded-stop runs (not a test module).

The sandbox's GPU nodes hold one example Job; these Jobs request no GPU (one head pod each on
a100-01, a little CPU and memory), so twenty of them run side by side. Each one's trainer saves
a checkpoint every few steps under its own experiment directory. Created and deleted with the
sandbox's own REST client (admin), never with the collection.
"""

import os
import time

from kubeapi_for_tests import Api
from playbook_support import unique

JOBS = "/apis/rlinf.io/v1alpha1/jobs"
LABEL = "rlark-test-fleet"


def admin_api(sandbox):
    return Api(sandbox.server, sandbox.admin_token, sandbox.ca_cert)


def small_job(name, batch):
    main = {
        "name": "main",
        "image": "rlinf/rlinf:agentic-rlinf0.1-torch2.6.0",
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        "env": [{"name": "SIM_RLINF_RUNNER", "value": "embodied"}, {"name": "SIM_RLINF_BACKEND", "value": "fsdp"}],
        "volumeMounts": [{"name": "data", "mountPath": "/data/rlinf"}],
    }
    actor = {
        "name": "actor",
        "role": "Actor",
        "agentType": "Kubernetes",
        "head": True,
        "nodeSelector": {"kubernetes.io/hostname": "a100-01"},
        "runScript": (
            "cd /workspace/RLinf && python examples/embodiment/train_embodied_agent.py "
            "runner.save_interval=4 runner.max_steps=1000000 runner.logger.log_path=/data/rlinf/logs "
            "runner.logger.experiment_name=%s" % name
        ),
        "kubernetes": {
            "workload": {
                "kind": "StatefulSet",
                "replicas": 1,
                "template": {
                    "spec": {"containers": [main], "volumes": [{"name": "data", "hostPath": {"path": "/data/rlinf"}}]}
                },
            }
        },
    }
    return {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {LABEL: batch}},
        "spec": {"stopped": False, "tasks": [actor]},
    }


class Fleet:
    """``count`` small Jobs labelled ``rlark-test-fleet=<batch>``, each with its checkpoints directory."""

    def __init__(self, sandbox, count):
        self.sandbox = sandbox
        self.api = admin_api(sandbox)
        self.batch = unique("fleet")
        self.names = ["%s-%02d" % (self.batch, index) for index in range(count)]
        self.selector = "%s=%s" % (LABEL, self.batch)
        os.makedirs(os.path.join(sandbox.nodes_dir, "a100-01", "data", "rlinf"), exist_ok=True)
        for name in self.names:
            self.api.call("POST", JOBS, small_job(name, self.batch))

    def checkpoints(self, name):
        return os.path.join(self.sandbox.nodes_dir, "a100-01", "data", "rlinf", "logs", name, "checkpoints")

    def steps(self, name):
        path = self.checkpoints(name)
        return sorted(d for d in os.listdir(path) if d.startswith("global_step_")) if os.path.isdir(path) else []

    def wait_checkpoints(self, count=2, timeout=240):
        """Until every Job has ``count`` step directories (the first one is then complete)."""
        deadline = time.monotonic() + timeout
        while True:
            short = [name for name in self.names if len(self.steps(name)) < count]
            if not short:
                return
            assert time.monotonic() < deadline, "no %d checkpoints after %ss: %s" % (count, timeout, short)
            time.sleep(1)

    def views(self):
        """name -> (resourceVersion, generation, spec) as the API server stores each Job."""
        out = {}
        for item in self.api.get(JOBS + "?labelSelector=" + self.selector)["items"]:
            meta = item["metadata"]
            out[meta["name"]] = (meta["resourceVersion"], meta["generation"], item["spec"])
        return out

    def delete(self):
        for name in self.names:
            self.api.call("DELETE", JOBS + "/" + name, ok=(200, 202, 404))
        self.api.close()


def check_fleet(sandbox, fleet, records_dir, forks=20):
    """``guarded_stop.yml --check`` over the fleet's label selector: (run, seconds it took)."""
    from helpers import run_playbook
    from playbook_support import INVENTORY

    started = time.monotonic()
    run = run_playbook(
        os.path.join("playbooks", "guarded_stop.yml"),
        {
            "rlark_job_selectors": [fleet.selector],
            "rlark_records_dir": records_dir,
            # The example's manifest names another Job: these carry their checkpoint root in the runScript.
            "rlark_launch_manifest": "",
        },
        check=True,
        env=sandbox.env(),
        kubeconfig=sandbox.kubeconfig_operator,
        inventory=INVENTORY,
        args=("--forks", str(forks)),
    )
    return run, time.monotonic() - started
