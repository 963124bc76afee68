#!/usr/bin/env python3
"""Local RLark sandbox: etcd + kube-apiserver (RBAC, static tokens) + RLark CRDs + fleet + S3 + rlark-sim,
plus one data-plane kube-apiserver per cluster ID (pods, nodes and logs; see docs/sandbox.md).

  sandboxctl.py up [--fresh] [--crds project|upstream] [--no-sim] [--sim-args "..."]
                   ($RLARK_CONTROLLER_MANAGER=/path: RLark's own controller-manager replaces rlark-sim's controller)
  sandboxctl.py down
  sandboxctl.py status
  sandboxctl.py kill COMPONENT    (SIGKILL, as a crash: fault tests)

State lives in .sandbox/ (or $RLARK_SANDBOX_DIR / --dir). `up` is idempotent and restarts dead components
in place (same ports, certificates, etcd and S3 data); a fresh, empty sandbox only after `down` or with
`up --fresh`. `down` stops exactly the processes `up` started (by pid + start time, whole process groups).
See docs/sandbox.md.
"""

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from sandboxlib import bootstrap, dataplane, pki, procs, say  # noqa: E402
from sandboxlib.crdsets import (  # noqa: E402
    UPSTREAM_CRDS,
    controller_manager,
    crd_docs,
    crds_with_controller_manager,
    drop_other_crds,
)
from sandboxlib.services import (  # noqa: E402
    BACKUP_BUCKET,
    BUCKET,
    Layout,
    admin_api,
    api_ready,
    data_plane_ready,
    ensure_bucket,
    http_ok,
    sim_available,
    start_apiserver,
    start_controller_manager,
    start_data_plane,
    start_etcd,
    start_s3,
    start_sim,
    wait_for,
)
from sandboxlib.statefiles import identity, load_state, locked, save_state, write_configs, write_file  # noqa: E402

ROOT = os.path.dirname(HERE)
DATA_PLANE = tuple(dataplane.service(c) for c in dataplane.CLUSTERS)
# Start order; stopped in reverse.
SERVICES = ("etcd", "kube-apiserver", *DATA_PLANE, "s3", "rlark-sim", "rlark-controller-manager")
# What `up` restarts in place when it died (revive); rlark-sim and the controller-manager follow in reuse.
CONTROL_PLANE = SERVICES[:-2]


# ---------------------------------------------------------------- commands
def health(lay, state):
    """{service: alive?} for the recorded processes."""
    return {name: procs.alive(state["procs"].get(name)) for name in SERVICES if state["procs"].get(name)}


def up(lay, args):
    t0 = time.monotonic()
    with locked(lay):
        state = load_state(lay)
        why_fresh = not_revivable(lay, state, args) if state else None
        if why_fresh:
            say("%s: stopping the previous sandbox, starting a fresh one" % why_fresh)
            stop_all(lay, state)
            state = None
        if state:
            crashed = [name for name, ok in health(lay, state).items() if not ok and name not in CONTROL_PLANE]
            restarted = revive(lay, state)
            reuse(lay, state, args)
            restarted += [name for name in crashed if procs.alive(state["procs"].get(name))]
            took = time.monotonic() - t0
            if not restarted:
                say("sandbox already running (crds=%s, %s) [%.1f s]" % (state["crds"], state["server"], took))
                return 0
            say("restarted %s on the kept data [%.1f s]" % (", ".join(restarted), took))
            return 0
        fresh_start(lay, args)
    say("sandbox up in %.1f s; use it with: . %s" % (time.monotonic() - t0, os.path.relpath(lay.env)))
    return 0


def not_revivable(lay, state, args):
    """Why the recorded sandbox is not restarted in place (a fresh one is started instead), or None."""
    if args.fresh:
        return "fresh sandbox requested"
    if "data_plane" not in state:
        return "previous sandbox incomplete (started by a checkout without data-plane apiservers)"
    if not os.path.isdir(os.path.join(lay.etcd, "member")):
        return "previous sandbox incomplete (no etcd data in %s)" % lay.etcd
    return None


def starter(name):
    """The start function of a control-plane service: (lay, state) -> proc."""
    for cluster in dataplane.CLUSTERS:
        if name == dataplane.service(cluster):
            return lambda lay, state: start_data_plane(lay, state, cluster)
    return {"etcd": start_etcd, "kube-apiserver": start_apiserver, "s3": start_s3}[name]


def revive(lay, state):
    """Start the dead control-plane processes again on the recorded ports, certificates, tokens and data
    (etcd/, s3/), then wait until every API server answers /readyz. Returns the names restarted.

    Live processes are left alone, so clients (rlark-sim, tests) see an outage, never a new sandbox.
    rlark-sim and RLark's controller-manager are restarted by `reuse`.
    """
    for proc in state["procs"].values():
        procs.kill_leftovers(proc)  # a dead leader's children (its process group) go before it restarts
    alive = health(lay, state)
    dead = [name for name in CONTROL_PLANE if not alive.get(name)]
    if dead:
        say("restarting %s (same ports, certificates and data; `up --fresh` starts anew)" % ", ".join(dead))
        write_configs(lay, state)  # the tokens files and kubeconfigs the processes read, as recorded
    try:
        for name in dead:
            state["procs"][name] = starter(name)(lay, state)
            save_state(lay, state)
            if name == "etcd":
                wait_etcd(state, 60)
        wait_control_plane(lay, state)
    except SystemExit as exc:
        raise SystemExit(
            "%s\nrestart in place failed; `sandboxctl.py up --fresh` (make sandbox-up FRESH=1) starts a fresh, "
            "empty sandbox" % exc
        ) from None
    return dead


def wait_etcd(state, timeout):
    url = "http://127.0.0.1:%d/health" % state["ports"]["etcd"]
    wait_for("etcd", lambda: http_ok(url), timeout, state["procs"]["etcd"])


def wait_control_plane(lay, state, timeout=120):
    """Until the management and data-plane apiservers answer /readyz and the S3 server answers."""
    procs_ = state["procs"]
    wait_for("kube-apiserver", lambda: api_ready(lay, state), timeout, procs_["kube-apiserver"])
    for cluster in dataplane.CLUSTERS:
        name = dataplane.service(cluster)
        wait_for(name, lambda c=cluster: data_plane_ready(lay, state, c), timeout, procs_[name])
    wait_for("s3", lambda: http_ok(state["s3"]["endpoint"]), 30, procs_["s3"])


def reuse(lay, state, args):
    """Bring a running (or just revived) sandbox to the requested shape without restarting its control plane."""
    write_configs(lay, state)  # cheap; restores kubeconfigs/env if someone removed them
    if args.crds is None:  # no explicit choice: keep the running set (e.g. `up` only to revive rlark-sim)
        args.crds = state["crds"]
    api = admin_api(lay, state)
    try:
        if state["crds"] != args.crds or bootstrap.live_crd_set(api) != args.crds:
            say("switching CRDs %s -> %s in place" % (state["crds"], args.crds))
            docs = crd_docs(args.crds)
            bootstrap.install_crds(api, docs)
            drop_other_crds(api, docs)
            state["crds"] = args.crds
            write_configs(lay, state)  # RLARK_SANDBOX_CRDS in .sandbox/env
        if not bootstrap.fleet_present(api):
            say("re-seeding the fleet")
            bootstrap.ensure_namespaces(api)
            bootstrap.seed_fleet(api)
    finally:
        api.close()
    ensure_bucket(lay, state)  # a sandbox made before a bucket was added gets it here
    state["s3"].setdefault("backup_bucket", BACKUP_BUCKET)
    want_sim = not args.no_sim and sim_available()
    sim_args = sim_argv(args)
    if state["procs"].get("rlark-sim") and (not want_sim or state.get("sim_args") != sim_args):
        procs.stop(state["procs"].pop("rlark-sim"))
    cm_proc = state["procs"].get("rlark-controller-manager")
    if cm_proc and state.get("controller_manager") != args.controller_manager:
        procs.stop(state["procs"].pop("rlark-controller-manager"))
    state["sim_args"] = sim_args
    state["controller_manager"] = args.controller_manager
    if want_sim and not procs.alive(state["procs"].get("rlark-sim")):
        say("starting rlark-sim")
        state["procs"]["rlark-sim"] = start_sim(lay, state)
    if args.controller_manager and not procs.alive(state["procs"].get("rlark-controller-manager")):
        say("starting RLark's controller-manager %s" % args.controller_manager)
        state["procs"]["rlark-controller-manager"] = start_controller_manager(lay, state)
    save_state(lay, state)


def sim_argv(args):
    """--sim-args split like a shell; with RLark's controller-manager the sim's controller is off."""
    argv = shlex.split(args.sim_args or "")
    if args.controller_manager and "--no-controller" not in argv:
        argv.append("--no-controller")
    return argv


def pick_ports(lay, ident):
    """Free loopback ports, the ones of the previous start when still free (stable URLs); kept in identity.json."""
    ports = {}
    names = ["etcd", "etcd_peer", "apiserver", "s3", "gateway"]
    names += [kind + "-" + c for c in dataplane.CLUSTERS for kind in ("dp", "kubelet")]
    for name in names:
        ports[name] = procs.free_port(ident["ports"].get(name))
        while ports[name] in [v for k, v in ports.items() if k != name]:
            ports[name] = procs.free_port()
    ident["ports"] = ports
    write_file(lay.identity, json.dumps(ident, indent=2, sort_keys=True) + "\n")
    return ports


def new_state(lay, args, ident, ports):
    """What state.json records of a fresh sandbox (the processes are added as they start)."""
    return {
        "dir": lay.dir,
        "crds": args.crds,
        "ports": ports,
        "server": "https://127.0.0.1:%d" % ports["apiserver"],
        "tokens": ident["tokens"],
        "s3": {
            "endpoint": "http://127.0.0.1:%d" % ports["s3"],
            "bucket": BUCKET,
            "backup_bucket": BACKUP_BUCKET,
            "access_key": ident["s3_access_key"],
            "secret_key": ident["s3_secret_key"],
        },
        "sim_args": sim_argv(args),
        "controller_manager": args.controller_manager,
        "gateway": {"url": "http://127.0.0.1:%d" % ports["gateway"]},
        "data_plane": {
            cluster: {
                "namespace": dataplane.namespace(cluster),
                "server": "https://127.0.0.1:%d" % ports["dp-" + cluster],
                "kubeconfig": os.path.join(lay.data_plane, cluster + ".kubeconfig"),
                "kubelet_port": ports["kubelet-" + cluster],
                "token": ident["data_plane_tokens"][cluster],
            }
            for cluster in dataplane.CLUSTERS
        },
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "procs": {},
    }


def fresh_start(lay, args):
    if args.crds is None:
        args.crds = os.environ.get("SANDBOX_CRDS") or "project"
    for d in (lay.dir, lay.nodes, lay.logs, lay.service_logs):
        os.makedirs(d, exist_ok=True)
    docs = crd_docs(args.crds)
    made = pki.ensure(lay.pki)
    if made != "reused":
        say("generated CA, serving cert and service-account keys (%s)" % made)
    pki.ensure_kubelet(lay.pki)
    ident = identity(lay)
    state = new_state(lay, args, ident, pick_ports(lay, ident))
    write_configs(lay, state)
    # A fresh control plane: no Job, Task or Pod CR of before; checkpoint data (nodes/, s3/) stays.
    shutil.rmtree(lay.etcd, ignore_errors=True)
    try:
        start_control_plane(lay, state)
        api = admin_api(lay, state)
        bootstrap.ensure_rbac(api)
        bootstrap.ensure_namespaces(api)
        say("installing %s CRDs" % args.crds)
        bootstrap.install_crds(api, docs)
        bootstrap.seed_fleet(api)
        api.close()
        ensure_bucket(lay, state)
        if args.no_sim:
            say("rlark-sim not started (--no-sim)")
        elif not sim_available():
            say("rlark-sim package not found in sandbox/rlark_sim: started without it (a later `up` starts it)")
        else:
            say("starting rlark-sim")
            state["procs"]["rlark-sim"] = start_sim(lay, state)
        if args.controller_manager:
            say("starting RLark's controller-manager %s" % args.controller_manager)
            state["procs"]["rlark-controller-manager"] = start_controller_manager(lay, state)
        save_state(lay, state)
    except BaseException:
        say("start-up failed: stopping what was started")
        stop_all(lay, state)
        raise


def start_control_plane(lay, state):
    """etcd and the S3 server, then the four apiservers at once; returns when all answer."""
    say("starting etcd and the S3 server")
    state["procs"]["etcd"] = start_etcd(lay, state)
    state["procs"]["s3"] = start_s3(lay, state)
    save_state(lay, state)
    wait_etcd(state, 30)
    say("starting kube-apiserver on %s" % state["server"])
    state["procs"]["kube-apiserver"] = start_apiserver(lay, state)
    say("starting the data-plane apiservers (%s)" % ", ".join(dataplane.CLUSTERS))
    for cluster in dataplane.CLUSTERS:
        state["procs"][dataplane.service(cluster)] = start_data_plane(lay, state, cluster)
    save_state(lay, state)
    wait_control_plane(lay, state)


def stop_all(lay, state):
    """The clients first, then the servers together, etcd last (the apiservers keep their data in it)."""
    clients = [name for name in SERVICES if name not in CONTROL_PLANE]
    for stage in (clients, [name for name in CONTROL_PLANE if name != "etcd"], ["etcd"]):
        procs.stop_together([state["procs"][name] for name in stage if state["procs"].get(name)])
    with contextlib.suppress(FileNotFoundError):
        os.unlink(lay.state)


def down(lay, _args):
    with locked(lay):
        state = load_state(lay)
        if not state:
            say("sandbox not running (no %s)" % os.path.relpath(lay.state))
            return 0
        running = [n for n, ok in health(lay, state).items() if ok]
        stop_all(lay, state)
    say("stopped %s" % (", ".join(running) or "nothing (no live process)"))
    return 0


def status(lay, _args):
    state = load_state(lay)
    if not state:
        print("sandbox: not running (%s)" % lay.dir)
        return 3
    alive = health(lay, state)
    ready = alive.get("kube-apiserver") and api_ready(lay, state)
    print(
        "sandbox: %s  crds=%s  dir=%s"
        % ("running" if ready and all(alive.values()) else "DEGRADED", state["crds"], lay.dir)
    )
    print("  api server  %s (%s)" % (state["server"], "ready" if ready else "not ready"))
    print("  s3          %s  bucket=%s" % (state["s3"]["endpoint"], state["s3"]["bucket"]))
    print("  gateway     %s" % state.get("gateway", {}).get("url"))
    for cluster, conf in sorted(state.get("data_plane", {}).items()):
        print("  data plane  %-5s %s  kubeconfig %s" % (cluster, conf["server"], conf["kubeconfig"]))
    total = 0
    for name in SERVICES:
        proc = state["procs"].get(name)
        if not proc and name == "rlark-controller-manager" and not state.get("controller_manager"):
            continue  # optional: only with $RLARK_CONTROLLER_MANAGER
        if not proc:
            print("  %-15s not started" % name)
            continue
        rss = sum(procs.rss_kib(pid) for pid in procs.group_pids(proc["pid"])) if alive[name] else 0
        total += rss
        print(
            "  %-15s pid %-8d %-5s rss %6.0f MiB  log %s"
            % (name, proc["pid"], "up" if alive[name] else "DEAD", rss / 1024, proc["log"])
        )
    print("  total rss   %.0f MiB" % (total / 1024))
    if not (ready and all(alive.values())):
        print("  `up` restarts the dead components on the kept data (`up --fresh`: a new, empty sandbox)")
    return 0 if ready and all(alive.values()) else 1


def restart_apiserver(lay, args):
    """Stop kube-apiserver and start it again on the same port and etcd (fault-injection hook for tests).

    Clients see their connections drop and, after the restart, a fresh watch cache (410 for old
    resourceVersions); the data in etcd stays.
    """
    with locked(lay):
        state = load_state(lay)
        if not state or not health(lay, state).get("kube-apiserver"):
            say("sandbox not running: nothing to restart")
            return 3
        # Open watches (rlark-sim's informers) hold a graceful stop for the apiserver's 60 s shutdown timeout;
        # it stops listening at once, and its clients see their connections drop either way.
        procs.stop(state["procs"]["kube-apiserver"], timeout=2.0)
        time.sleep(args.down_seconds)
        state["procs"]["kube-apiserver"] = start_apiserver(lay, state)
        save_state(lay, state)
        wait_for("kube-apiserver", lambda: api_ready(lay, state), 120, state["procs"]["kube-apiserver"])
    say("kube-apiserver restarted on %s" % state["server"])
    return 0


def kill(lay, args):
    """SIGKILL one recorded component, as a crash would; the state stays, so the next `up` restarts it."""
    state = load_state(lay)
    proc = state and state["procs"].get(args.component)
    if not procs.alive(proc):
        say("%s is not running" % args.component)
        return 3
    procs.kill(proc)
    say("killed %s (pid %d); `up` restarts it on the kept data" % (args.component, proc["pid"]))
    return 0


def join_sim_args(argv):
    """`--sim-args "--no-controller"` (a value that looks like a flag) -> `--sim-args=--no-controller`."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg == "--sim-args":
            out[i : i + 2] = ["--sim-args=" + out[i + 1]]
            break
    return out


def main(argv=None):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `sandboxctl.py status | head` ends quietly
    parser = argparse.ArgumentParser(description="local RLark sandbox")
    parser.add_argument("--dir", default=os.environ.get("RLARK_SANDBOX_DIR") or os.path.join(ROOT, ".sandbox"))
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up", help="start or reuse the sandbox")
    p_up.add_argument(
        "--crds",
        choices=["project", "upstream"],
        default=os.environ.get("SANDBOX_CRDS") or None,
        help="CRD set (default: $SANDBOX_CRDS; else upstream with $RLARK_CONTROLLER_MANAGER, else the running "
        "sandbox's set, or project for a fresh start)",
    )
    p_up.add_argument(
        "--fresh",
        action="store_true",
        help="stop the running sandbox and start an empty one (etcd wiped: no Job, Task or Pod CR of before)",
    )
    p_up.add_argument("--no-sim", action="store_true", help="do not start rlark-sim (e.g. to run real RLark parts)")
    p_up.add_argument(
        "--sim-args", default=os.environ.get("RLARK_SIM_ARGS", ""), help='extra rlark-sim flags, e.g. "--no-controller"'
    )
    sub.add_parser("down", help="stop every process the sandbox started")
    sub.add_parser("status", help="show what runs")
    p_kill = sub.add_parser("kill", help="SIGKILL one component's process group (fault injection; `up` restarts it)")
    p_kill.add_argument("component", choices=SERVICES)
    p_restart = sub.add_parser("restart-apiserver", help="stop and start kube-apiserver (tests: a restart mid-watch)")
    p_restart.add_argument("--down-seconds", type=float, default=0.0, help="pause between stop and start")
    args = parser.parse_args(join_sim_args(sys.argv[1:] if argv is None else argv))
    lay = Layout(args.dir)
    if args.cmd == "up":
        args.controller_manager = controller_manager()
        args.crds = crds_with_controller_manager(args.crds, args.controller_manager)
    if args.cmd == "up" and args.crds == "upstream" and not os.path.isdir(UPSTREAM_CRDS):
        raise SystemExit("upstream CRDs not found at %s" % UPSTREAM_CRDS)
    commands = {"up": up, "down": down, "status": status, "kill": kill, "restart-apiserver": restart_apiserver}
    return commands[args.cmd](lay, args)


if __name__ == "__main__":
    sys.exit(main())
