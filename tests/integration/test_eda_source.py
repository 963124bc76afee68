# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rlark_jobs event source run directly (``main(queue, args)``, no rulebook engine) against the sandbox.

A Job is created, its apiserver restarted mid-watch, stopped during a save, and resumed as a new Job;
the source must put exactly the expected ordered transitions and the checkpoint verdicts. Jobs are
written with the kubernetes package; an independent raw watch (http.client, not the collection's
client) timestamps each transition for the latency figure; checkpoints are checked with plain file reads.
"""

import asyncio
import contextlib
import http.client
import importlib.util
import json
import logging
import os
import secrets
import ssl
import threading
import time
import urllib.parse

import pytest
from conftest import sandboxctl
from helpers import ROOT, ensure_collection_link
from independent import custom_objects
from kubernetes import client

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"
SOURCE = "extensions/eda/plugins/event_source/rlark_jobs.py"


def load_source():
    ensure_collection_link()
    path = os.path.join(ROOT, ".build", "collections", "ansible_collections", "rlark", "ops", SOURCE)
    spec = importlib.util.spec_from_file_location("rlark_jobs_source", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class SourceRun(logging.Handler):
    """``main(queue, args)`` on its own loop thread; ``events``: [(monotonic, wall, event)]; ``lines``: its log."""

    def __init__(self, args):
        super().__init__(logging.INFO)
        self.lines = []
        source = load_source()
        source.LOG.setLevel(logging.INFO)
        source.LOG.addHandler(self)
        self.logger = source.LOG
        self.main = source.main
        self.args = args
        self.events = []
        self.error = None
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._thread, daemon=True)
        self.thread.start()

    def _thread(self):
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._run())
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # surfaced by wait()
            self.error = exc

    async def _run(self):
        queue = asyncio.Queue()
        self.task = asyncio.ensure_future(self.main(queue, self.args))
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _pending = await asyncio.wait({getter, self.task}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                self.events.append((time.monotonic(), time.time(), getter.result()))
            if self.task in done:
                getter.cancel()
                self.task.result()
                return

    def emit(self, record):
        self.lines.append(record.getMessage())

    def listed(self):
        return sum(1 for line in self.lines if line.startswith("listed "))

    def of(self, kind, job=None):
        return [
            (mono, wall, e["rlark"])
            for mono, wall, e in list(self.events)
            if e["rlark"]["type"] == kind and (job is None or e["rlark"]["job"] == job)
        ]

    def wait(self, predicate, timeout=120, what="events"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.error is None, "the source failed: %r" % self.error
            assert self.thread.is_alive(), "the source ended"
            value = predicate()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError("timed out waiting for %s; events so far: %s" % (what, [e for _m, _w, e in self.events]))

    def stop(self):
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(30)
        self.logger.removeHandler(self)
        assert not self.thread.is_alive(), "the source did not end after cancel"


class RawWatch:
    """Independent observer: list + watch with http.client, first time each (job, phase) was seen."""

    def __init__(self, sandbox, selector):
        url = urllib.parse.urlsplit(sandbox.server)
        self.host, self.port = url.hostname, url.port
        self.token = sandbox.admin_token
        self.ctx = ssl.create_default_context(cafile=sandbox.ca_cert)
        self.selector = selector
        self.first_seen = {}
        self.stopping = False
        self.conn = None
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _get(self, query):
        self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
        path = "/apis/%s/%s/jobs?%s" % (GROUP, VERSION, urllib.parse.urlencode(query))
        self.conn.request("GET", path, headers={"Authorization": "Bearer " + self.token})
        return self.conn.getresponse()

    def _see(self, job):
        phase = (job.get("status") or {}).get("phase")
        if phase:
            self.first_seen.setdefault((job["metadata"]["name"], phase), time.monotonic())

    def _loop(self):
        while not self.stopping:
            try:
                listing = json.loads(self._get({"labelSelector": self.selector}).read())
                for job in listing["items"]:
                    self._see(job)
                rv = listing["metadata"]["resourceVersion"]
                resp = self._get({"labelSelector": self.selector, "watch": "1", "resourceVersion": rv})
                while not self.stopping:
                    line = resp.readline()
                    if not line:
                        break
                    item = json.loads(line)
                    if item["type"] in ("ADDED", "MODIFIED"):
                        self._see(item["object"])
                    elif item["type"] == "ERROR":
                        break
            except (OSError, ValueError, KeyError, http.client.HTTPException):
                time.sleep(0.1)

    def stop(self):
        self.stopping = True
        with contextlib.suppress(OSError):
            self.conn.sock.shutdown(2)


def p95(values):
    values = sorted(values)
    return values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


@pytest.fixture
def api(sandbox):
    return custom_objects(sandbox.kubeconfig)


@pytest.fixture
def jobs(api):
    names = []
    yield names
    for name in names:
        with contextlib.suppress(client.ApiException):
            api.delete_cluster_custom_object(GROUP, VERSION, "jobs", name)


def training_job(name, label, exp, node):
    container = {
        "name": "main",
        "image": "rlinf/rlinf:sandbox",
        "env": [
            {"name": "SIM_STEP_SECONDS", "value": "0.3"},
            {"name": "SIM_SAVE_SECONDS", "value": "6"},
            {"name": "SIM_RLINF_WORLD_SIZE", "value": "2"},
        ],
        "volumeMounts": [{"name": "data", "mountPath": "/data/rlinf"}],
    }
    script = (
        "cd /workspace && python examples/embodiment/train_embodied_agent.py --config-name maniskill "
        "runner.logger.log_path=/data/rlinf/logs runner.logger.experiment_name=%s "
        "runner.save_interval=4 runner.max_steps=100000" % exp
    )
    return {
        "apiVersion": "%s/%s" % (GROUP, VERSION),
        "kind": "Job",
        "metadata": {"name": name, "labels": {"rlark-test": label}},
        "spec": {
            "tasks": [
                {
                    "name": "actor",
                    "role": "Actor",
                    "agentType": "Kubernetes",
                    "head": True,
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    "runScript": script,
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


def complete_on_disk(step_dir):
    actor = os.path.join(step_dir, "actor")
    return all(
        os.path.exists(os.path.join(actor, rel))
        for rel in ("dcp_checkpoint/.metadata", "dcp_checkpoint/__0_0.distcp", "dcp_checkpoint/__1_0.distcp")
    ) and os.path.exists(os.path.join(actor, "model_state_dict", "full_weights.pt"))


def test_created_stopped_resumed_across_an_apiserver_restart(sandbox, api, jobs):
    label = "eda-" + secrets.token_hex(3)
    exp = label
    node = "a100-03"
    root = os.path.join(sandbox.nodes_dir, node, "data/rlinf/logs", exp, "checkpoints")
    first, second = label + "-a", label + "-b"
    observer = RawWatch(sandbox, "rlark-test=" + label)
    source = SourceRun(
        {
            "kubeconfig": sandbox.kubeconfig_viewer,
            "label_selector": "rlark-test=" + label,
            "watch_seconds": 30,
            "checkpoints": True,
            "checkpoint_interval": 0.5,
            "host_path_template": os.path.join(sandbox.nodes_dir, "{node}") + "{host_path}",
            "gate_options": {"quiet_seconds": 3, "actor_world_size": 2},
        }
    )
    try:
        # The source lists before the Job exists, so the Job's whole life shows as transitions.
        source.wait(source.listed, 60, "the first list")
        jobs.append(first)
        api.create_cluster_custom_object(GROUP, VERSION, "jobs", training_job(first, label, exp, node))
        source.wait(lambda: any(e["phase"] == "Running" for _m, _w, e in source.of("phase_changed", first)), 90)

        # The apiserver goes away mid-watch; its fresh watch cache answers 410 for the old resourceVersion.
        restarted = sandboxctl(sandbox.dir, "restart-apiserver", "--down-seconds", "1")
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        source.wait(lambda: any(line.startswith("watch ") for line in source.lines), 60, "the watch to notice")
        completed = source.wait(lambda: source.of("checkpoint_completed", first), 120, "a complete checkpoint")
        done_step = completed[0][2]["step"]

        # Stop during the next save: it is cut off, and reported once as incomplete when nothing writes any more.
        def saving():
            for name in os.listdir(root):
                step_dir = os.path.join(root, name, "actor", "dcp_checkpoint")
                if os.path.exists(os.path.join(step_dir, "__0_0.distcp")) and not os.path.exists(
                    os.path.join(step_dir, ".metadata")
                ):
                    return int(name.rsplit("_", 1)[1])
            return None

        killed = source.wait(saving, 60, "a save in progress")
        api.patch_cluster_custom_object(GROUP, VERSION, "jobs", first, {"spec": {"stopped": True}})
        source.wait(lambda: source.of("checkpoint_incomplete", first), 90, "the cut-off save reported")

        # Resume as a new Job from the last complete checkpoint (the collection's copy-to-new-Job shape).
        newest_done = source.of("checkpoint_completed", first)[-1][2]["step"]
        original = api.get_cluster_custom_object(GROUP, VERSION, "jobs", first)
        copy = training_job(second, label, exp, node)
        copy["spec"]["tasks"][0] = original["spec"]["tasks"][0]
        resume_dir = "/data/rlinf/logs/%s/checkpoints/global_step_%d" % (exp, newest_done)
        copy["spec"]["tasks"][0]["runScript"] += " ++runner.resume_dir=" + resume_dir
        jobs.append(second)
        api.create_cluster_custom_object(GROUP, VERSION, "jobs", copy)
        source.wait(lambda: any(e["phase"] == "Running" for _m, _w, e in source.of("phase_changed", second)), 90)
        resumed = source.wait(
            lambda: [e for _m, _w, e in source.of("checkpoint_completed", second) if e["step"] > newest_done],
            120,
            "a checkpoint of the resumed Job",
        )
        api.patch_cluster_custom_object(GROUP, VERSION, "jobs", second, {"spec": {"stopped": True}})
        source.wait(lambda: len(source.of("phase_changed", second)) == 3, 90, "the resumed Job stopped")
    finally:
        observer.stop()
        source.stop()

    transitions = [(e["job"], e["previous_phase"], e["phase"]) for _m, _w, e in source.of("phase_changed")]
    assert transitions == [
        (first, None, "Pending"),
        (first, "Pending", "Running"),
        (first, "Running", "Stopped"),
        (second, None, "Pending"),
        (second, "Pending", "Running"),
        (second, "Running", "Stopped"),
    ]
    assert all(e["labels"] == {"rlark-test": label} for _m, _w, e in source.of("phase_changed"))
    stopped = source.of("phase_changed", first)[2][2]
    assert stopped["stopped"] is True

    steps = [e["step"] for _m, _w, e in source.of("checkpoint_completed", first)]
    assert steps == sorted(set(steps)) and steps[0] == done_step
    for step in steps:
        assert complete_on_disk(os.path.join(root, "global_step_%d" % step)), step
    incomplete = [e for _m, _w, e in source.of("checkpoint_incomplete", first)]
    assert [e["step"] for e in incomplete] == [killed], incomplete
    assert incomplete[0]["latest_complete_step"] == newest_done and incomplete[0]["reasons"]
    assert resumed[0]["step"] > newest_done

    latencies = []
    for mono, _wall, e in source.of("phase_changed"):
        seen = observer.first_seen.get((e["job"], e["phase"]))
        assert seen is not None, e
        latencies.append(max(0.0, mono - seen))
    figure = "rlark_jobs phase event latency (independent watch -> event): p95 %.3fs, max %.3fs over %d" % (
        p95(latencies),
        max(latencies),
        len(latencies),
    )
    ckpt = []
    for _mono, wall, e in source.of("checkpoint_completed"):
        marker = os.path.join(root, "global_step_%d" % e["step"], "actor", "model_state_dict", "full_weights.pt")
        if os.path.exists(marker):
            ckpt.append(max(0.0, wall - os.path.getmtime(marker)))
    figure += (
        "; checkpoint_completed (last file written -> event, quiet 3s, poll 0.5s): median %.2fs, p95 %.2fs over %d"
        % (
            sorted(ckpt)[len(ckpt) // 2],
            p95(ckpt),
            len(ckpt),
        )
    )
    figure += "; watch log: %s" % [line for line in source.lines if line.startswith(("watch ", "listed "))]
    print("\n" + figure)
    with open(os.path.join(ROOT, ".build", "eda-latency.txt"), "w") as fh:
        fh.write(figure + "\n")
