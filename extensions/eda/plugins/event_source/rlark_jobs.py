# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_jobs: an Event-Driven Ansible source for RLark Job phase transitions and checkpoint verdicts.

The work happens in ``plugins/module_utils/job_events.py`` (plain Python, unit-tested); this file
only validates the arguments, runs the blocking watcher and poller in threads and feeds the queue.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
short_description: Phase transitions and checkpoint verdicts of RLark Jobs
description:
  - 'Watches C(rlinf.io/v1alpha1) Jobs (list, then watch from its resourceVersion with bookmarks) and puts one
    event per phase transition,
    C({"rlark": {"type": "phase_changed", "job": NAME, "phase": ..., "previous_phase": ...}}).'
  - A dropped connection resumes from the last resourceVersion; an expired one (410 Gone, for example after an
    API server restart) lists again and reports only what really changed, so no transition is repeated and a
    change made while disconnected is reported once.
  - With O(checkpoints=true) it also runs the collection's checkpoint gate every O(checkpoint_interval) seconds
    on each Running Job's checkpoint location (found from the head task's run script like the guarded_stop role
    does) and puts C(checkpoint_completed) once per newer complete step and C(checkpoint_incomplete) once for a
    newest step that is incomplete although nothing was written to it for the gate's C(quiet_seconds).
  - Every event carries C(job), C(uid), C(labels), C(phase), C(stopped), C(start_time) and C(running_seconds).
options:
  kubeconfig:
    description: Path of the kubeconfig (default C(K8S_AUTH_KUBECONFIG), then C(~/.kube/config)).
    type: str
  context:
    description: Kubeconfig context (default C(K8S_AUTH_CONTEXT), then the current context).
    type: str
  host:
    description: API server URL instead of a kubeconfig.
    type: str
  api_key:
    description: Bearer token with O(host).
    type: str
  validate_certs:
    description: Verify the API server's certificate.
    type: bool
  ca_cert:
    description: CA bundle path.
    type: str
  label_selector:
    description: Only Jobs with these labels, for example V(team=rl).
    type: str
  initial_events:
    description: Also put one C(phase_changed) event (C(previous_phase) null) per Job that exists at start.
    type: bool
    default: false
  watch_seconds:
    description: Seconds one watch request lasts before it is renewed from the last resourceVersion.
    type: int
    default: 290
  checkpoints:
    description: Also report checkpoint verdicts.
    type: bool
    default: false
  checkpoint_interval:
    description: Seconds between two gate runs per Running Job.
    type: float
    default: 60
  checkpoint_root:
    description: Container path of the checkpoints root, when the run script does not tell it.
    type: str
  object_storage:
    description:
      - StorageClass name to C({bucket, prefix, endpoint_url, region}) (as the guarded_stop role's
        C(rlark_object_storage)) for checkpoints on object-storage claims. Credentials come from the usual
        C(AWS_*) variables.
    type: dict
  inventory:
    description:
      - The inventory with the hosts of the RLark Nodes (C(rlark_node_name), C(rlark_node_cluster),
        C(rlark_node_root), as for the playbooks), usually the one given to C(ansible-rulebook -i).
      - A hostPath checkpoint is gated where it lives, by running C(rlark.ops.rlark_ckpt_gate) on its Node's host
        (ansible-runner), so no path has to be visible to the rulebook host.
      - Without it and without O(host_path_template) hostPath checkpoints are not gated, and the source logs
        once per Job which of the two to set.
    type: str
  host_path_template:
    description:
      - Instead of O(inventory) where a node's hostPath checkpoints are visible to the rulebook host, with C({node})
        and C({host_path}) placeholders, for example V(/mnt/nodes/{node}{host_path}).
    type: str
  gate_options:
    description: Checkpoint gate options (C(runner), C(backend), world sizes, C(quiet_seconds)).
    type: dict
"""

EXAMPLES = r"""
- name: Guarded stop of RLark Jobs at a step budget
  hosts: localhost
  sources:
    - rlark.ops.rlark_jobs:
        kubeconfig: ~/.kube/rlark
        label_selector: team=rl
        checkpoints: true
        inventory: /etc/ansible/rlark-inventory.yml
        object_storage:
          rlark-s3: {bucket: checkpoints, endpoint_url: "https://s3.example.com"}
  rules:
    - name: Stop once step 1000 is safely on storage
      condition: event.rlark.type == "checkpoint_completed" and event.rlark.step >= 1000
      action:
        run_playbook:
          name: rlark.ops.guarded_stop
          extra_vars:
            rlark_jobs: ["{{ event.rlark.job }}"]
"""

import asyncio
import logging
import os
import sys

try:
    from ansible_collections.rlark.ops.plugins.module_utils import job_events, node_gate
    from ansible_collections.rlark.ops.plugins.module_utils.kube import AUTH_OPTIONS, KubeError, client_from_params
except ImportError:  # ansible-rulebook loads the file by path: import the collection it sits in
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), *([os.pardir] * 7))))
    from ansible_collections.rlark.ops.plugins.module_utils import job_events, node_gate
    from ansible_collections.rlark.ops.plugins.module_utils.kube import AUTH_OPTIONS, KubeError, client_from_params

LOG = logging.getLogger("rlark.ops.rlark_jobs")
ENV_FALLBACK = {"kubeconfig": "K8S_AUTH_KUBECONFIG", "context": "K8S_AUTH_CONTEXT", "host": "K8S_AUTH_HOST"}
OPTIONS = {
    "label_selector": (str, None),
    "initial_events": (bool, False),
    "watch_seconds": (int, 290),
    "checkpoints": (bool, False),
    "checkpoint_interval": ((int, float), 60),
    "checkpoint_root": (str, None),
    "object_storage": (dict, None),
    "inventory": (str, None),
    "host_path_template": (str, None),
    "gate_options": (dict, None),
}


def parse_args(args):
    """Arguments with defaults; a wrong one raises ValueError naming it."""
    args = dict(args or {})
    unknown = sorted(set(args) - set(OPTIONS) - set(AUTH_OPTIONS))
    if unknown:
        raise ValueError(
            "rlark.ops.rlark_jobs: unknown argument(s) %s; known: %s"
            % (", ".join(unknown), ", ".join(sorted(set(OPTIONS) | set(AUTH_OPTIONS))))
        )
    out = {}
    for name, (kind, default) in OPTIONS.items():
        value = args.get(name, default)
        if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            what = getattr(kind, "__name__", "number")
            raise ValueError("rlark.ops.rlark_jobs: %s must be a %s, not %r" % (name, what, value))
        out[name] = value
    out["inventory"] = out["inventory"] or None  # "" from a rulebook variable left empty
    if out["checkpoint_interval"] <= 0 or out["watch_seconds"] <= 0:
        raise ValueError("rlark.ops.rlark_jobs: checkpoint_interval and watch_seconds must be positive")
    auth = {k: args.get(k) for k in AUTH_OPTIONS if args.get(k) is not None}
    for key, env in ENV_FALLBACK.items():
        if key not in auth and os.environ.get(env):
            auth[key] = os.environ[env]
    if "kubeconfig" in auth:
        auth["kubeconfig"] = os.path.expanduser(auth["kubeconfig"])
    return out, auth


def _put(loop, queue):
    """A thread-safe ``emit`` that keeps the events in order."""

    def emit(item):
        if hasattr(queue, "put_nowait"):
            loop.call_soon_threadsafe(queue.put_nowait, item)
        else:
            asyncio.run_coroutine_threadsafe(queue.put(item), loop).result()

    return emit


async def _poll_checkpoints(queue, poller, watcher, interval):
    polled = {}  # uid -> phase at the last poll
    while True:
        jobs = list(watcher.snapshot)
        for uid in set(polled) - {job["metadata"].get("uid") for job in jobs}:
            polled.pop(uid)
            poller.forget(uid)
        for job in jobs:
            uid = job["metadata"].get("uid")
            phase = (job.get("status") or {}).get("phase")
            if not poller.wants(uid, phase, polled.get(uid)):
                continue
            polled[uid] = phase
            try:
                for item in await asyncio.to_thread(poller.poll, job):
                    await queue.put(item)
            except KubeError as exc:
                LOG.warning("rlark_jobs: checkpoint poll of %s failed: %s", job["metadata"].get("name"), exc)
        await asyncio.sleep(interval)


async def main(queue, args):
    """Put RLark Job events on ``queue`` until cancelled."""
    options, auth = parse_args(args)
    loop = asyncio.get_running_loop()
    client = client_from_params(auth, timeout=60, log=LOG.debug)
    watcher = job_events.JobWatcher(
        client,
        label_selector=options["label_selector"],
        initial_events=options["initial_events"],
        watch_seconds=options["watch_seconds"],
        log=LOG.info,
    )
    tasks = [asyncio.ensure_future(asyncio.to_thread(watcher.run, _put(loop, queue)))]
    poll_client = None
    if options["checkpoints"]:
        poll_client = client.fork()
        poller = job_events.CheckpointPoller(
            poll_client,
            gate_options=options["gate_options"],
            checkpoint_root=options["checkpoint_root"],
            object_storage=options["object_storage"],
            host_path_template=options["host_path_template"],
            node_gate=node_gate.NodeGate(options["inventory"], log=LOG.info) if options["inventory"] else None,
            log=LOG.info,
        )
        tasks.append(asyncio.ensure_future(_poll_checkpoints(queue, poller, watcher, options["checkpoint_interval"])))
    try:
        await asyncio.gather(*tasks)
    finally:
        watcher.stop()
        for task in tasks[1:]:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        client.close()
        if poll_client is not None:
            poll_client.close()


if __name__ == "__main__":
    # python rlark_jobs.py  (KUBECONFIG in K8S_AUTH_KUBECONFIG): print the events.

    class PrintQueue:
        async def put(self, item):
            print(item, flush=True)

    logging.basicConfig(level=logging.INFO)
    asyncio.run(main(PrintQueue(), {"checkpoints": False}))
