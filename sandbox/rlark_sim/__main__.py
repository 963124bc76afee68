"""rlark-sim entry point: python -m rlark_sim --kubeconfig PATH --state-dir DIR [options]."""

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time

import requests

from .agent import Agent
from .collector import GarbageCollector
from .controller import Controller, NodeIndex
from .dataplane import DataPlane
from .gateway import GatewayServer
from .kube import ApiError, Informer, Kube, core_path, crd_path, wait_synced
from .storage import S3Settings
from .trainer import TrainerManager, pod_log_path
from .workload import SYSTEM_NS, pod_task_key

log = logging.getLogger("rlark_sim")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="rlark_sim", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--state-dir", required=True, help="sandbox state dir (.sandbox)")
    parser.add_argument("--no-controller", action="store_true", help="leave the Job controller to real RLark")
    parser.add_argument(
        "--no-gc", action="store_true", help="no garbage collector (Task cascade delete) even without the controller"
    )
    parser.add_argument(
        "--ordered-resolution",
        action="store_true",
        help="resolve Task namespaces by the first matching Node in list order (default: like RLark, any match)",
    )
    # The default since issue 31; still accepted so that recorded --sim-args of older sandboxes keep working.
    parser.add_argument("--random-resolution", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-agent", action="store_true", help="leave the data-plane agent to real RLark")
    parser.add_argument("--no-trainer", action="store_true", help="do not simulate RLinf in head pods")
    parser.add_argument("--grace-seconds", type=float, default=5.0, help="stop grace period before Pod CRs go")
    parser.add_argument("--tick-seconds", type=float, default=1.0, help="longest pause between passes")
    parser.add_argument(
        "--cr-only-labels",
        default="rlark.io/cluster-id,rlark.io/agent-type",
        help="Node CR labels the data-plane scheduler cannot see (comma list; empty for none)",
    )
    parser.add_argument(
        "--data-plane", help="clusters.json of the data-plane apiservers (sandboxctl writes it): mirror pods there"
    )
    parser.add_argument("--gateway-port", type=int, help="serve RLark's gateway routes on 127.0.0.1:PORT")
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


def ensure_namespace(kube, name, timeout=60, sleep=time.sleep):
    """Create namespace ``name`` if missing; retried while the apiserver does not answer (it may be restarting
    while rlark-sim starts: `sandboxctl up` does not wait for the sim), like the informers' lists."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            kube.create_if_missing(
                core_path("v1", "namespaces"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )
            return
        except ApiError as exc:
            log.warning("namespace %s: %s", name, exc)
            return
        except requests.ConnectionError as exc:
            if time.monotonic() >= deadline:
                raise
            log.warning("namespace %s: apiserver not answering, retrying: %s", name, exc)
            sleep(0.5)


PASS_RECORD = "rlark-sim-pass.json"
AGENT_HOLD_DIR = "agent-hold"


def write_pass_record(state_dir, number, seen):
    """After each whole pass: its number and what its informers had seen when it began.

    Tests wait on this instead of sleeping: "a pass that saw my write has ended" is a condition
    (tests/integration/sim_support.py: sim_passes).
    """
    path = os.path.join(state_dir, PASS_RECORD)
    with open(path + ".tmp", "w") as fh:
        json.dump({"pid": os.getpid(), "pass": number, "seen": seen}, fh)
    os.replace(path + ".tmp", path)


class PassRecord:
    """Whole passes of rlark-sim's loops (the main loop and, in its own thread, the controller).

    A recorded pass is a round: every loop ended a pass that began after the previous round ended. Its
    ``seen`` is, per informer, the least that those passes had seen when they began, so "a recorded pass
    saw my write" means every loop acted on it.
    """

    def __init__(self, state_dir, loops):
        self.state_dir = state_dir
        self.loops = tuple(loops)
        self.lock = threading.Lock()
        self.started = 0  # passes begun, any loop
        self.mark = 0  # `started` when the last round ended
        self.ended = {}  # loop -> (its start number, seen)
        self.number = 0

    def begin(self):
        with self.lock:
            self.started += 1
            return self.started

    def end(self, loop, token, seen):
        with self.lock:
            self.ended[loop] = (token, seen)
            if not all(self.ended.get(name, (0,))[0] > self.mark for name in self.loops):
                return
            merged = {}
            for _token, part in self.ended.values():
                for key, value in part.items():
                    merged[key] = min(merged.get(key, value), value)
            self.number += 1
            self.mark = self.started
            write_pass_record(self.state_dir, self.number, merged)


def run_controller(controller, informers, wake, stopping, record, tick):
    """The controller's own loop: like controller-runtime it acts on each Job/Task event at once, not at the
    start of the next whole pass (so a Job reads Running while the agent still places other Tasks' pods).
    A Job whose reconcile failed is retried with a growing back-off, as a work queue does."""
    failures = 0
    while not stopping.is_set():
        wake.clear()
        token = record.begin()
        seen = {inf.name: inf.seen_rv for inf in informers}
        try:
            controller.reconcile_all()
        except Exception:
            log.exception("Controller pass failed")
        record.end("controller", token, seen)
        failures = min(failures + 1, 12) if controller.pending() else 0
        wake.wait(min(tick, 0.005 * 2**failures) if failures else tick)


def start_parts(args, kube, wake, controller_wake):
    """(informers, controller or None, the parts one main pass reconciles, trainers or None)."""
    state_dir = os.path.abspath(args.state_dir)
    jobs = Informer(kube, crd_path("jobs"), [wake, controller_wake], name="jobs").start()
    tasks = Informer(kube, crd_path("tasks"), [wake, controller_wake], name="tasks").start()
    nodes = Informer(kube, crd_path("nodes"), wake, name="nodes").start()
    pods = Informer(kube, crd_path("pods"), wake, name="pods", index_fn=pod_task_key).start()
    informers = [jobs, tasks, nodes, pods]
    sts = None
    if not args.no_agent:
        ensure_namespace(kube, SYSTEM_NS)
        sts = Informer(kube, core_path("apps/v1", "statefulsets", SYSTEM_NS), None, name="statefulsets").start()
        informers.append(sts)
    wait_synced(informers)
    node_index = NodeIndex(nodes)
    controller = None
    if not args.no_controller:
        # Its own NodeIndex: it runs in its own thread, next to the agent's.
        controller = Controller(kube, jobs, tasks, nodes, random_resolution=not args.ordered_resolution)
    collector = None if args.no_gc else GarbageCollector(kube, jobs, tasks)
    cr_only = [x.strip() for x in args.cr_only_labels.split(",") if x.strip()]
    hold_dir = os.path.join(state_dir, AGENT_HOLD_DIR)
    agent = (
        None
        if args.no_agent
        else Agent(kube, tasks, nodes, pods, sts, node_index, args.grace_seconds, cr_only, hold_dir=hold_dir)
    )
    trainers = None if args.no_trainer else TrainerManager(tasks, pods, state_dir, S3Settings(state_dir))
    data_plane = None
    if args.data_plane:
        with open(args.data_plane) as fh:
            conf = json.load(fh)
        data_plane = DataPlane(conf, tasks, nodes, pods, lambda task, local: pod_log_path(state_dir, task, local))
    if args.gateway_port:
        GatewayServer(args.gateway_port, kube, data_plane.clients() if data_plane else {}).start()
    parts = [part for part in (collector, agent, trainers, data_plane) if part is not None]
    log.info(
        "rlark-sim running (controller=%s resolution=%s gc=%s agent=%s trainer=%s grace=%ss tick=%ss)",
        controller is not None,
        "ordered" if args.ordered_resolution else "random",
        collector is not None,
        agent is not None,
        trainers is not None,
        args.grace_seconds,
        args.tick_seconds,
    )
    return informers, controller, parts, trainers


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stdout,
    )
    kube = Kube(args.kubeconfig)
    wake = threading.Event()
    controller_wake = threading.Event()  # Job and Task events wake the controller's loop too
    informers, controller, parts, trainers = start_parts(args, kube, wake, controller_wake)
    stopping = threading.Event()

    def on_signal(signum, _frame):
        log.info("signal %d: exiting", signum)
        stopping.set()
        wake.set()
        controller_wake.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    record = PassRecord(os.path.abspath(args.state_dir), ["main", "controller"] if controller is not None else ["main"])
    if controller is not None:
        ctrl_informers = informers[:3]  # jobs, tasks, nodes
        threading.Thread(
            target=run_controller,
            args=(controller, ctrl_informers, controller_wake, stopping, record, args.tick_seconds),
            name="controller",
            daemon=True,
        ).start()
    while not stopping.is_set():
        wake.clear()
        token = record.begin()
        seen = {inf.name: inf.seen_rv for inf in informers}
        for part in parts:
            try:
                part.reconcile_all()
            except Exception:
                log.exception("%s pass failed", type(part).__name__)
        record.end("main", token, seen)
        # Informer events wake us early; a short debounce batches bursts of events.
        wake.wait(args.tick_seconds)
        time.sleep(0.05)
    if trainers is not None:
        trainers.stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
