"""rlark-sim entry point: python -m rlark_sim --kubeconfig PATH --state-dir DIR [options]."""

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time

from .agent import SYSTEM_NS, Agent, pod_task_key
from .collector import GarbageCollector
from .controller import Controller, NodeIndex
from .dataplane import DataPlane
from .gateway import GatewayServer
from .kube import ApiError, Informer, Kube, core_path, crd_path, wait_synced
from .storage import S3Settings
from .trainer import TrainerManager, pod_log_path

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
        "--random-resolution",
        action="store_true",
        help="resolve Task namespaces like RLark: any matching Node per reconcile (default: first in list order)",
    )
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


def ensure_namespace(kube, name):
    try:
        kube.create_if_missing(
            core_path("v1", "namespaces"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
    except ApiError as exc:
        log.warning("namespace %s: %s", name, exc)


PASS_RECORD = "rlark-sim-pass.json"


def write_pass_record(state_dir, number, seen):
    """After each whole pass: its number and what its informers had seen when it began.

    Tests wait on this instead of sleeping: "a pass that saw my write has ended" is a condition
    (tests/integration/sim_support.py: sim_passes).
    """
    path = os.path.join(state_dir, PASS_RECORD)
    with open(path + ".tmp", "w") as fh:
        json.dump({"pid": os.getpid(), "pass": number, "seen": seen}, fh)
    os.replace(path + ".tmp", path)


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stdout,
    )
    state_dir = os.path.abspath(args.state_dir)
    kube = Kube(args.kubeconfig)
    wake = threading.Event()
    jobs = Informer(kube, crd_path("jobs"), wake, name="jobs").start()
    tasks = Informer(kube, crd_path("tasks"), wake, name="tasks").start()
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
        controller = Controller(kube, jobs, tasks, nodes, random_resolution=args.random_resolution)
        controller.node_index = node_index
    collector = None if args.no_gc else GarbageCollector(kube, jobs, tasks)
    cr_only = [x.strip() for x in args.cr_only_labels.split(",") if x.strip()]
    agent = None if args.no_agent else Agent(kube, tasks, nodes, pods, sts, node_index, args.grace_seconds, cr_only)
    trainers = None if args.no_trainer else TrainerManager(tasks, pods, state_dir, S3Settings(state_dir))
    data_plane = None
    if args.data_plane:
        with open(args.data_plane) as fh:
            conf = json.load(fh)
        data_plane = DataPlane(conf, tasks, nodes, pods, lambda task, local: pod_log_path(state_dir, task, local))
    if args.gateway_port:
        GatewayServer(args.gateway_port, kube, data_plane.clients() if data_plane else {}).start()
    stopping = threading.Event()

    def on_signal(signum, _frame):
        log.info("signal %d: exiting", signum)
        stopping.set()
        wake.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info(
        "rlark-sim running (controller=%s resolution=%s gc=%s agent=%s trainer=%s grace=%ss tick=%ss)",
        controller is not None,
        "random" if args.random_resolution else "ordered",
        collector is not None,
        agent is not None,
        trainers is not None,
        args.grace_seconds,
        args.tick_seconds,
    )
    number = 0
    while not stopping.is_set():
        wake.clear()
        seen = {inf.name: inf.seen_rv for inf in informers}
        for part in (controller, collector, agent, trainers, data_plane):
            if part is None:
                continue
            try:
                part.reconcile_all()
            except Exception:
                log.exception("%s pass failed", type(part).__name__)
        number += 1
        write_pass_record(state_dir, number, seen)
        # Informer events wake us early; a short debounce batches bursts of events.
        wake.wait(args.tick_seconds)
        time.sleep(0.05)
    if trainers is not None:
        trainers.stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
