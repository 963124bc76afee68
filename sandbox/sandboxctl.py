#!/usr/bin/env python3
"""Local RLark sandbox: etcd + kube-apiserver (RBAC, static tokens) + RLark CRDs + fleet + S3 + rlark-sim.

  sandboxctl.py up [--crds project|upstream] [--no-sim] [--sim-args "..."]
                   ($RLARK_CONTROLLER_MANAGER=/path: RLark's own controller-manager replaces rlark-sim's controller)
  sandboxctl.py down
  sandboxctl.py status

State lives in .sandbox/ (or $RLARK_SANDBOX_DIR / --dir). `up` is idempotent; `down` stops exactly the
processes `up` started (by pid + start time, whole process groups). See docs/sandbox.md.
"""

import argparse
import base64
import contextlib
import fcntl
import json
import os
import secrets
import shlex
import shutil
import signal
import string
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import yaml  # noqa: E402
from sandboxlib import bootstrap, dataplane, pki, procs  # noqa: E402
from sandboxlib.kubeapi import KubeApi  # noqa: E402

ROOT = os.path.dirname(HERE)
PROJECT_CRDS = os.path.join(HERE, "crds")
UPSTREAM_CRDS = os.path.normpath(os.path.join(ROOT, "..", "shared", "upstream", "rlark-crds"))
# RLark's DomainPeer and Addon (same commit): installed in upstream mode only. The collection and rlark-sim
# never read or write them, so the project set does not model them (see docs/sandbox.md).
UPSTREAM_EXTRA_CRDS = os.path.normpath(os.path.join(ROOT, "..", "shared", "upstream", "rlark-crds-extra"))
DATA_PLANE = tuple(dataplane.service(c) for c in dataplane.CLUSTERS)
# Start order; stopped in reverse.
SERVICES = ("etcd", "kube-apiserver", *DATA_PLANE, "s3", "rlark-sim", "rlark-controller-manager")
CONTROLLER_MANAGER_ENV = "RLARK_CONTROLLER_MANAGER"
# Port 0: any free port; bound to loopback only like every sandbox service.
CONTROLLER_MANAGER_FLAGS = [
    "--leader-elect=false",
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
]
BUCKET = "checkpoints"
SERVICE_CIDR = "10.0.0.0/24"


def say(msg):
    print(">> sandbox: " + msg, flush=True)


class Layout:
    """Every path of one sandbox state dir."""

    def __init__(self, state_dir):
        self.dir = os.path.abspath(state_dir)
        j = lambda *p: os.path.join(self.dir, *p)  # noqa: E731
        # Built binaries stay in the checkout's .sandbox/bin even when the state dir is elsewhere.
        self.bin = os.path.join(ROOT, ".sandbox", "bin")
        self.pki, self.etcd, self.s3 = j("pki"), j("etcd"), j("s3")
        self.nodes, self.logs, self.service_logs = j("nodes"), j("logs"), j("logs", "_services")
        self.state, self.identity, self.env, self.lock = j("state.json"), j("identity.json"), j("env"), j(".lock")
        self.tokens_csv = j("pki", "tokens.csv")
        self.data_plane = j("data-plane")  # <clusterID>.kubeconfig, <clusterID>.tokens.csv, clusters.json
        self.kubeconfigs = {
            "admin": j("kubeconfig"),
            "operator": j("kubeconfig-operator"),
            "viewer": j("kubeconfig-viewer"),
        }

    def binary(self, name):
        """$KUBEBUILDER_ASSETS, then PATH, then .sandbox/bin (same order as build.sh)."""
        assets = os.environ.get("KUBEBUILDER_ASSETS")
        if assets and os.access(os.path.join(assets, name), os.X_OK):
            return os.path.join(assets, name)
        found = shutil.which(name)
        if found:
            return found
        local = os.path.join(self.bin, name)
        if os.access(local, os.X_OK):
            return local
        raise SystemExit("%s not found: run `make sandbox-build` (or bash sandbox/build.sh)" % name)


def read_json(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def write_file(path, text, mode=0o600):
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def save_state(lay, state):
    clean = {k: v for k, v in state.items() if k != "procs"}
    clean["pids"] = {
        n: {k: v for k, v in p.items() if not k.startswith("_")} for n, p in state.get("procs", {}).items() if p
    }
    write_file(lay.state, json.dumps(clean, indent=2, sort_keys=True) + "\n", 0o644)


def load_state(lay):
    state = read_json(lay.state)
    if state:
        state["procs"] = state.pop("pids", {})
    return state


@contextlib.contextmanager
def locked(lay):
    os.makedirs(lay.dir, exist_ok=True)
    with open(lay.lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def identity(lay):
    """Tokens, S3 credentials and preferred ports, stable across down/up so clients keep working."""
    ident = read_json(lay.identity) or {}
    alphabet = string.ascii_uppercase + string.digits
    ident.setdefault("tokens", {name: secrets.token_hex(24) for name in bootstrap.IDENTITIES})
    ident.setdefault("s3_access_key", "RLARK" + "".join(secrets.choice(alphabet) for _ in range(15)))
    ident.setdefault("s3_secret_key", secrets.token_urlsafe(30))
    ident.setdefault("ports", {})
    dp_tokens = ident.setdefault("data_plane_tokens", {})
    for cluster in dataplane.CLUSTERS:
        dp_tokens.setdefault(cluster, secrets.token_hex(24))
    write_file(lay.identity, json.dumps(ident, indent=2, sort_keys=True) + "\n")
    return ident


def admin_api(lay, state):
    return KubeApi(state["server"], state["tokens"]["admin"], os.path.join(lay.pki, "ca.crt"))


def api_ready(lay, state, timeout=2.0):
    try:
        api = KubeApi(state["server"], state["tokens"]["admin"], os.path.join(lay.pki, "ca.crt"), timeout=timeout)
        status, _ = api.request("GET", "/readyz")
        api.close()
        return status == 200
    except OSError:
        return False


def wait_for(what, check, timeout, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if proc is not None and not procs.alive(proc):
            raise SystemExit("%s exited during start-up; see %s" % (what, proc["log"]))
        time.sleep(0.2)
    raise SystemExit("%s not ready after %ds; see %s" % (what, timeout, proc["log"] if proc else "logs"))


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status < 500
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except OSError:
        return False


# ---------------------------------------------------------------- services
def start_etcd(lay, state):
    port, peer = state["ports"]["etcd"], state["ports"]["etcd_peer"]
    client, peer_url = "http://127.0.0.1:%d" % port, "http://127.0.0.1:%d" % peer
    argv = [
        lay.binary("etcd"), "--name=sandbox", "--data-dir=" + lay.etcd,
        "--listen-client-urls=" + client, "--advertise-client-urls=" + client,
        "--listen-peer-urls=" + peer_url, "--initial-advertise-peer-urls=" + peer_url,
        "--initial-cluster=sandbox=" + peer_url, "--initial-cluster-state=new",
        "--unsafe-no-fsync", "--log-level=warn", "--quota-backend-bytes=2147483648",
    ]  # fmt: skip
    return procs.launch("etcd", argv, os.path.join(lay.service_logs, "etcd.log"), cwd=lay.dir)


def start_apiserver(lay, state):
    p = lambda f: os.path.join(lay.pki, f)  # noqa: E731
    argv = [
        lay.binary("kube-apiserver"),
        "--etcd-servers=http://127.0.0.1:%d" % state["ports"]["etcd"],
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        "--secure-port=%d" % state["ports"]["apiserver"],
        "--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"),
        "--client-ca-file=" + p("ca.crt"),
        "--authorization-mode=RBAC", "--token-auth-file=" + lay.tokens_csv,
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--service-account-key-file=" + p("sa.pub"), "--service-account-signing-key-file=" + p("sa.key"),
        "--service-cluster-ip-range=" + SERVICE_CIDR,
        "--cert-dir=" + lay.pki,
        # The agent marks every container privileged; the StatefulSet's pod template must validate.
        "--allow-privileged=true",
        # No kube-controller-manager: nothing would create the ServiceAccounts this plugin waits for.
        "--disable-admission-plugins=ServiceAccount",
        "--enable-priority-and-fairness=false", "--profiling=false",
        "--endpoint-reconciler-type=none", "--v=1",
    ]  # fmt: skip
    return procs.launch("kube-apiserver", argv, os.path.join(lay.service_logs, "kube-apiserver.log"), cwd=lay.dir)


def start_data_plane(lay, state, cluster):
    argv = dataplane.apiserver_argv(
        lay.binary("kube-apiserver"),
        cluster,
        state["ports"]["dp-" + cluster],
        state["ports"]["etcd"],
        lay.pki,
        os.path.join(lay.data_plane, cluster + ".tokens.csv"),
    )
    log = os.path.join(lay.service_logs, dataplane.service(cluster) + ".log")
    return procs.launch(dataplane.service(cluster), argv, log, env=dict(os.environ, **dataplane.ENV), cwd=lay.dir)


def data_plane_ready(lay, state, cluster, timeout=2.0):
    conf = state["data_plane"][cluster]
    try:
        api = KubeApi(conf["server"], conf["token"], os.path.join(lay.pki, "ca.crt"), timeout=timeout)
        status, _ = api.request("GET", "/readyz")
        api.close()
        return status == 200
    except OSError:
        return False


def start_s3(lay, state):
    os.makedirs(lay.s3, exist_ok=True)
    env = dict(os.environ, ROOT_ACCESS_KEY=state["s3"]["access_key"], ROOT_SECRET_KEY=state["s3"]["secret_key"])
    argv = [lay.binary("versitygw"), "--port=127.0.0.1:%d" % state["ports"]["s3"], "--quiet", "posix", lay.s3]
    return procs.launch("s3", argv, os.path.join(lay.service_logs, "s3.log"), env=env, cwd=lay.dir)


def ensure_bucket(lay, state):
    if os.path.isdir(os.path.join(lay.s3, BUCKET)):
        return
    import boto3  # only on the first start: the bucket is a directory of the POSIX backend afterwards

    client = boto3.client(
        "s3",
        endpoint_url=state["s3"]["endpoint"],
        aws_access_key_id=state["s3"]["access_key"],
        aws_secret_access_key=state["s3"]["secret_key"],
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=BUCKET)


def crd_docs(crd_set):
    files = bootstrap.crd_files(crd_set, PROJECT_CRDS, UPSTREAM_CRDS)
    if crd_set == "upstream" and os.path.isdir(UPSTREAM_EXTRA_CRDS):
        files += bootstrap.crd_files(crd_set, PROJECT_CRDS, UPSTREAM_EXTRA_CRDS)
    return bootstrap.load_crds(files, crd_set)


def drop_other_crds(api, docs):
    """After a switch to the project set: remove upstream-only rlinf.io CRDs (DomainPeer, Addon)."""
    keep = {d["metadata"]["name"] for d in docs}
    for crd in api.get(bootstrap.CRD_API)["items"]:
        if crd["spec"]["group"] == bootstrap.GROUP and crd["metadata"]["name"] not in keep:
            say(
                "removing %s (not in the %s set)"
                % (crd["metadata"]["name"], docs[0]["metadata"]["annotations"][bootstrap.CRD_SET_ANNOTATION])
            )
            api.call("DELETE", bootstrap.CRD_API + "/" + crd["metadata"]["name"])


def controller_manager():
    """$RLARK_CONTROLLER_MANAGER (an RLark controller-manager binary built by hand), or None when unset."""
    path = os.environ.get(CONTROLLER_MANAGER_ENV) or None
    if path is not None and not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise SystemExit(
            "%s=%s: no executable there; build RLark's controller-manager (docs/sandbox.md) or unset the variable."
            % (CONTROLLER_MANAGER_ENV, path)
        )
    return os.path.abspath(path) if path else None


def start_controller_manager(lay, state):
    argv = [state["controller_manager"], "--kubeconfig=" + lay.kubeconfigs["admin"], *CONTROLLER_MANAGER_FLAGS]
    env = dict(os.environ, KUBECONFIG=lay.kubeconfigs["admin"])
    log = os.path.join(lay.service_logs, "rlark-controller-manager.log")
    return procs.launch("rlark-controller-manager", argv, log, env=env, cwd=lay.dir)


def sim_available():
    return os.path.exists(os.path.join(HERE, "rlark_sim", "__main__.py"))


def start_sim(lay, state):
    python = os.path.join(ROOT, ".venv", "bin", "python")
    python = python if os.access(python, os.X_OK) else sys.executable
    argv = [
        python,
        "-m",
        "rlark_sim",
        "--kubeconfig",
        lay.kubeconfigs["admin"],
        "--state-dir",
        lay.dir,
        "--data-plane",
        os.path.join(lay.data_plane, "clusters.json"),
        "--gateway-port",
        str(state["ports"]["gateway"]),
        *state["sim_args"],
    ]
    env = dict(os.environ, PYTHONPATH=HERE, **env_vars(lay, state))
    return procs.launch("rlark-sim", argv, os.path.join(lay.service_logs, "rlark-sim.log"), env=env, cwd=ROOT)


# ---------------------------------------------------------------- config files
def env_vars(lay, state):
    return {
        "KUBECONFIG": lay.kubeconfigs["admin"],
        "K8S_AUTH_KUBECONFIG": lay.kubeconfigs["admin"],
        "RLARK_SANDBOX_DIR": lay.dir,
        "RLARK_SANDBOX_CRDS": state["crds"],
        "RLARK_S3_ENDPOINT": state["s3"]["endpoint"],
        "RLARK_S3_BUCKET": BUCKET,
        "AWS_ACCESS_KEY_ID": state["s3"]["access_key"],
        "AWS_SECRET_ACCESS_KEY": state["s3"]["secret_key"],
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": state["s3"]["endpoint"],
        "RLARK_DATA_PLANE_DIR": lay.data_plane,
        "RLARK_GATEWAY_URL": state["gateway"]["url"],
    }


def write_configs(lay, state):
    with open(os.path.join(lay.pki, "ca.crt"), "rb") as fh:
        ca_data = base64.b64encode(fh.read()).decode()
    rows = []
    for name, (user, groups) in bootstrap.IDENTITIES.items():
        rows.append('%s,%s,%s,"%s"' % (state["tokens"][name], user, user, ",".join(groups)))
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "rlark-sandbox", "cluster": {"server": state["server"], "certificate-authority-data": ca_data}}
            ],
            "users": [{"name": name, "user": {"token": state["tokens"][name]}}],
            "contexts": [{"name": "rlark-sandbox-" + name, "context": {"cluster": "rlark-sandbox", "user": name}}],
            "current-context": "rlark-sandbox-" + name,
            "preferences": {},
        }
        write_file(lay.kubeconfigs[name], yaml.safe_dump(kubeconfig, sort_keys=False))
    write_file(lay.tokens_csv, "\n".join(rows) + "\n")
    os.makedirs(lay.data_plane, exist_ok=True)
    ca = os.path.join(lay.pki, "ca.crt")
    for cluster, conf in state["data_plane"].items():
        write_file(os.path.join(lay.data_plane, cluster + ".tokens.csv"), dataplane.tokens_row(conf["token"], cluster))
        doc = dataplane.kubeconfig(cluster, conf["server"], conf["token"], ca)
        write_file(conf["kubeconfig"], yaml.safe_dump(doc, sort_keys=False))
    sim_conf = {
        "clusters": state["data_plane"],
        "kubelet_tls": {
            "cert": os.path.join(lay.pki, "kubelet.crt"),
            "key": os.path.join(lay.pki, "kubelet.key"),
            "client_ca": ca,
        },
    }
    write_file(os.path.join(lay.data_plane, "clusters.json"), json.dumps(sim_conf, indent=2, sort_keys=True) + "\n")
    env = "".join("export %s=%s\n" % (k, shlex.quote(v)) for k, v in env_vars(lay, state).items())
    write_file(lay.env, "# generated by sandbox/sandboxctl.py; source it: . .sandbox/env\n" + env, 0o644)


# ---------------------------------------------------------------- commands
def health(lay, state):
    """{service: alive?} for the recorded processes."""
    return {name: procs.alive(state["procs"].get(name)) for name in SERVICES if state["procs"].get(name)}


def up(lay, args):
    t0 = time.monotonic()
    with locked(lay):
        state = load_state(lay)
        if state and reuse(lay, state, args):
            say(
                "sandbox already running (crds=%s, %s) [%.1f s]"
                % (state["crds"], state["server"], time.monotonic() - t0)
            )
            return 0
        if state:
            say("previous sandbox incomplete: stopping what is left of it")
            stop_all(lay, state)
        fresh_start(lay, args)
    say("sandbox up in %.1f s; use it with: . %s" % (time.monotonic() - t0, os.path.relpath(lay.env)))
    return 0


def reuse(lay, state, args):
    """Bring a running sandbox to the requested shape without restarting the control plane, if possible."""
    alive = health(lay, state)
    if not (alive.get("etcd") and alive.get("kube-apiserver") and api_ready(lay, state)):
        return False
    if "data_plane" not in state or not all(alive.get(name) for name in DATA_PLANE):
        return False  # no (or a dead) data-plane apiserver: a fresh start brings all of them up
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
    if not alive.get("s3"):
        say("restarting the S3 server")
        state["procs"]["s3"] = start_s3(lay, state)
        wait_for("s3", lambda: http_ok(state["s3"]["endpoint"]), 30, state["procs"]["s3"])
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
    return True


def sim_argv(args):
    """--sim-args split like a shell; with RLark's controller-manager the sim's controller is off."""
    argv = shlex.split(args.sim_args or "")
    if args.controller_manager and "--no-controller" not in argv:
        argv.append("--no-controller")
    return argv


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
    ports = {}
    names = ["etcd", "etcd_peer", "apiserver", "s3", "gateway"]
    names += [kind + "-" + c for c in dataplane.CLUSTERS for kind in ("dp", "kubelet")]
    for name in names:
        ports[name] = procs.free_port(ident["ports"].get(name))
        while ports[name] in [v for k, v in ports.items() if k != name]:
            ports[name] = procs.free_port()
    ident["ports"] = ports
    write_file(lay.identity, json.dumps(ident, indent=2, sort_keys=True) + "\n")
    endpoint = "http://127.0.0.1:%d" % ports["s3"]
    state = {
        "dir": lay.dir,
        "crds": args.crds,
        "ports": ports,
        "server": "https://127.0.0.1:%d" % ports["apiserver"],
        "tokens": ident["tokens"],
        "s3": {
            "endpoint": endpoint,
            "bucket": BUCKET,
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
    write_configs(lay, state)
    # A fresh control plane: Jobs do not survive down/up, checkpoint data (nodes/, s3/) does.
    shutil.rmtree(lay.etcd, ignore_errors=True)
    try:
        say("starting etcd and the S3 server")
        state["procs"]["etcd"] = start_etcd(lay, state)
        state["procs"]["s3"] = start_s3(lay, state)
        save_state(lay, state)
        wait_for("etcd", lambda: http_ok("http://127.0.0.1:%d/health" % ports["etcd"]), 30, state["procs"]["etcd"])
        say("starting kube-apiserver on %s" % state["server"])
        state["procs"]["kube-apiserver"] = start_apiserver(lay, state)
        say("starting the data-plane apiservers (%s)" % ", ".join(dataplane.CLUSTERS))
        for cluster in dataplane.CLUSTERS:
            state["procs"][dataplane.service(cluster)] = start_data_plane(lay, state, cluster)
        save_state(lay, state)
        wait_for("kube-apiserver", lambda: api_ready(lay, state), 120, state["procs"]["kube-apiserver"])
        for cluster in dataplane.CLUSTERS:
            name = dataplane.service(cluster)
            wait_for(name, lambda c=cluster: data_plane_ready(lay, state, c), 120, state["procs"][name])
        api = admin_api(lay, state)
        bootstrap.ensure_rbac(api)
        bootstrap.ensure_namespaces(api)
        say("installing %s CRDs" % args.crds)
        bootstrap.install_crds(api, docs)
        bootstrap.seed_fleet(api)
        api.close()
        wait_for("s3", lambda: http_ok(endpoint), 30, state["procs"]["s3"])
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


def stop_all(lay, state):
    for name in reversed(SERVICES):
        proc = state["procs"].get(name)
        if proc:
            procs.stop(proc)
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
        procs.stop(state["procs"]["kube-apiserver"])
        time.sleep(args.down_seconds)
        state["procs"]["kube-apiserver"] = start_apiserver(lay, state)
        save_state(lay, state)
        wait_for("kube-apiserver", lambda: api_ready(lay, state), 120, state["procs"]["kube-apiserver"])
    say("kube-apiserver restarted on %s" % state["server"])
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
        help="CRD set (default: $SANDBOX_CRDS; else the running sandbox's set, or project for a fresh start)",
    )
    p_up.add_argument("--no-sim", action="store_true", help="do not start rlark-sim (e.g. to run real RLark parts)")
    p_up.add_argument(
        "--sim-args", default=os.environ.get("RLARK_SIM_ARGS", ""), help='extra rlark-sim flags, e.g. "--no-controller"'
    )
    sub.add_parser("down", help="stop every process the sandbox started")
    sub.add_parser("status", help="show what runs")
    p_restart = sub.add_parser("restart-apiserver", help="stop and start kube-apiserver (tests: a restart mid-watch)")
    p_restart.add_argument("--down-seconds", type=float, default=0.0, help="pause between stop and start")
    args = parser.parse_args(join_sim_args(sys.argv[1:] if argv is None else argv))
    lay = Layout(args.dir)
    if args.cmd == "up":
        args.controller_manager = controller_manager()
    if args.cmd == "up" and args.crds == "upstream" and not os.path.isdir(UPSTREAM_CRDS):
        raise SystemExit("upstream CRDs not found at %s" % UPSTREAM_CRDS)
    commands = {"up": up, "down": down, "status": status, "restart-apiserver": restart_apiserver}
    return commands[args.cmd](lay, args)


if __name__ == "__main__":
    sys.exit(main())
