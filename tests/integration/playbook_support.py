"""Support for the playbook integration tests: per-test workloads, runs with the sandbox inventory, reads.

Each test gets its own Job name and RLinf experiment directory (so checkpoints never mix), its own
records directory, and deletes its Jobs at the end (Job deletion never touches checkpoint data).
"""

import copy
import json
import os
import random
import string
import time

import yaml
from helpers import ROOT, run_ansible_module, run_playbook
from independent import create_job, delete_job, job_view

EXAMPLE = os.path.join(ROOT, "examples", "sandbox")
INVENTORY = os.path.join(EXAMPLE, "inventory.yml")


def unique(prefix="pb"):
    return "%s-%s" % (prefix, "".join(random.choice(string.ascii_lowercase + string.digits) for _index in range(6)))


def load_example():
    with open(os.path.join(EXAMPLE, "launch_manifest.yml")) as fh:
        manifest = yaml.safe_load(fh)
    with open(os.path.join(EXAMPLE, "deployment_profile.yml")) as fh:
        profile = yaml.safe_load(fh)
    return manifest, profile


class Workload:
    """The example workload under a unique Job name, written to ``tmp_path``."""

    def __init__(self, sandbox, tmp_path, name=None, mutate=None):
        self.sandbox = sandbox
        self.name = name or unique()
        self.dir = str(tmp_path)
        self.records = os.path.join(self.dir, "records")
        manifest, profile = load_example()
        manifest["job"]["name"] = self.name
        for o in manifest["hydra"]["overrides"]:
            if o["override"].startswith("runner.logger.experiment_name="):
                o["override"] = "runner.logger.experiment_name=%s" % self.name
        manifest["checkpoint"]["root"] = "/data/rlinf/logs/%s/checkpoints" % self.name
        if mutate:
            mutate(manifest, profile)
        self.manifest, self.profile = manifest, profile
        self.manifest_path = os.path.join(self.dir, "launch_manifest.yml")
        self.profile_path = os.path.join(self.dir, "deployment_profile.yml")
        with open(self.manifest_path, "w") as fh:
            yaml.safe_dump(manifest, fh, sort_keys=False)
        with open(self.profile_path, "w") as fh:
            yaml.safe_dump(profile, fh, sort_keys=False)
        self.checkpoints = os.path.join(sandbox.nodes_dir, "a100-01", "data", "rlinf", "logs", self.name, "checkpoints")
        os.makedirs(os.path.join(sandbox.nodes_dir, "a100-01", "data", "rlinf"), exist_ok=True)
        self.created = [self.name]

    def vars(self, **more):
        out = {
            "rlark_launch_manifest": self.manifest_path,
            "rlark_deployment_profile": self.profile_path,
            "rlark_records_dir": self.records,
        }
        out.update(more)
        return out

    def play(self, playbook, kubeconfig=None, inventory=INVENTORY, **kw):
        extra = self.vars(**kw.pop("extra", {}))
        return run_playbook(
            os.path.join("playbooks", playbook) if "/" not in playbook else playbook,
            extra,
            env=self.sandbox.env(),
            kubeconfig=kubeconfig or self.sandbox.kubeconfig,
            inventory=inventory,
            **kw,
        )

    def start(self, migrated_job=None):
        """Start the Job: with ``migrated_job`` (conftest's session fixture) as migrate.yml created that Job, under
        this workload's name (no play: for tests of what comes after a migration); else with migrate.yml."""
        if migrated_job is None:
            run = self.play("migrate.yml")
            assert run.rc == 0, run
            return
        template_name, template = migrated_job
        # The name is also the Job's experiment and checkpoint directory: renaming is the whole difference.
        create_job(self.sandbox, json.loads(json.dumps(template).replace(template_name, self.name)))

    def info(self, name=None):
        """The Job, its Tasks and Pod CRs from the API server (an independent reader), None when absent."""
        return job_view(self.sandbox, name or self.name)

    def steps(self):
        if not os.path.isdir(self.checkpoints):
            return []
        return sorted(int(d.split("_")[-1]) for d in os.listdir(self.checkpoints) if d.startswith("global_step_"))

    def wait_steps(self, count, timeout=90):
        deadline = time.monotonic() + timeout
        while len(self.steps()) < count:
            assert time.monotonic() < deadline, "only %s checkpoints after %ss" % (self.steps(), timeout)
            time.sleep(0.5)
        return self.steps()

    def records_of(self, kind, job=None):
        base = os.path.join(self.records, job or self.name)
        out = []
        for stamp in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            path = os.path.join(base, stamp, "%s.yml" % kind)
            if os.path.exists(path):
                with open(path) as fh:
                    out.append(yaml.safe_load(fh))
        return out

    def module(self, name, args, kubeconfig=None):
        return run_ansible_module(name, args, env=self.sandbox.env(), kubeconfig=kubeconfig or self.sandbox.kubeconfig)

    def cleanup(self):
        for name in self.created:
            delete_job(self.sandbox, name)


def to_object_storage(manifest, _profile):
    """A Workload mutation: the checkpoint mount on the sandbox's S3 StorageClass instead of a hostPath."""
    for role in manifest["roles"]:
        for mount in role.get("mounts") or []:
            if mount.get("purpose") == "checkpoint":
                mount["source"] = {"object_storage": {"storage_class": "rlark-s3"}}


def all_output(run):
    """Everything a run printed (the JSON callback keeps task messages in the results)."""
    return run.stdout + run.stderr + json.dumps(run.data or {})


def failed_messages(run):
    """The msg of every failed task (and failed loop item), as the operator sees them."""
    out = []
    for _task, result in run.task_results():
        if result.get("failed"):
            out.append(str(result.get("msg", "")))
            out += [str(r.get("msg", "")) for r in result.get("results") or [] if r.get("failed")]
    return out


def outcome_table(run):
    """The guarded-stop summary table from a run, or ''."""
    for task, result in run.task_results():
        if task == "Build the summary":
            return (result.get("decision") or {}).get("table", "")
    return ""


def without_server_fields(job):
    job = copy.deepcopy(job)
    job.pop("status", None)
    meta = job.get("metadata", {})
    for key in ("resourceVersion", "managedFields"):
        meta.pop(key, None)
    return job
