"""The sandbox's processes: where each one's files are, how it starts, how to tell it is ready.

Every starter takes the state dir's `Layout` and the recorded state (ports, tokens, S3 keys), so a
process started again after a crash gets the same ports, certificates and data dirs (docs/sandbox.md).
"""

import os
import shutil
import sys
import time
import urllib.error
import urllib.request

from . import dataplane, procs
from .kubeapi import KubeApi

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # sandbox/
ROOT = os.path.dirname(HERE)
# Port 0: any free port; bound to loopback only like every sandbox service.
CONTROLLER_MANAGER_FLAGS = [
    "--leader-elect=false",
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
]
BUCKET = "checkpoints"
# A second bucket: the backup target of hostPath checkpoints (rlark_checkpoint_backup_s3, docs/sandbox.md).
BACKUP_BUCKET = "checkpoint-backups"
SERVICE_CIDR = "10.0.0.0/24"


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
        # Idle cost (the suite keeps 3-4 sandboxes up for its whole run): no per-type object counts or db-size
        # polls of etcd, no identity-lease heartbeat. Metrics and a lease nothing here reads; the API is unchanged.
        "--etcd-count-metric-poll-period=0", "--etcd-db-metric-poll-interval=0",
        "--feature-gates=APIServerIdentity=false",
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
    """The checkpoints bucket and the backup bucket (a sandbox made before the backup bucket gets it now)."""
    missing = [b for b in (BUCKET, BACKUP_BUCKET) if not os.path.isdir(os.path.join(lay.s3, b))]
    if not missing:
        return
    import boto3  # only on the first start: the bucket is a directory of the POSIX backend afterwards

    client = boto3.client(
        "s3",
        endpoint_url=state["s3"]["endpoint"],
        aws_access_key_id=state["s3"]["access_key"],
        aws_secret_access_key=state["s3"]["secret_key"],
        region_name="us-east-1",
    )
    for bucket in missing:
        client.create_bucket(Bucket=bucket)


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


def env_vars(lay, state):
    return {
        "KUBECONFIG": lay.kubeconfigs["admin"],
        "K8S_AUTH_KUBECONFIG": lay.kubeconfigs["admin"],
        "RLARK_SANDBOX_DIR": lay.dir,
        "RLARK_SANDBOX_CRDS": state["crds"],
        "RLARK_S3_ENDPOINT": state["s3"]["endpoint"],
        "RLARK_S3_BUCKET": BUCKET,
        "RLARK_S3_BACKUP_BUCKET": BACKUP_BUCKET,
        "AWS_ACCESS_KEY_ID": state["s3"]["access_key"],
        "AWS_SECRET_ACCESS_KEY": state["s3"]["secret_key"],
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": state["s3"]["endpoint"],
        "RLARK_DATA_PLANE_DIR": lay.data_plane,
        "RLARK_GATEWAY_URL": state["gateway"]["url"],
    }
