"""Data-plane clusters: one small kube-apiserver per cluster ID of the fleet (see docs/sandbox.md).

Each has its own etcd prefix on the sandbox etcd, its own port and admin token, so a pod of one cluster
cannot be read through another cluster's kubeconfig. Only the API groups an apiserver needs to run
with RBAC (and core/v1 for Nodes and Pods) are served, without watch cache: about 150 MiB each
instead of 400.
"""

import base64
import os

from . import fleet

CLUSTERS = [ns[len("rlark-") :] for ns in fleet.NAMESPACES if ns != "rlark-system"]
# Fewer groups than a full apiserver: less memory. Each listed group is one whose informers the
# apiserver itself runs (it logs "Failed to watch" for ever when one is missing).
RUNTIME_CONFIG = ",".join(
    ["api/all=false", "api/v1=true"]
    + [
        g + "/v1=true"
        for g in (
            "rbac.authorization.k8s.io",
            "apiregistration.k8s.io",
            "apiextensions.k8s.io",
            "networking.k8s.io",
            "discovery.k8s.io",
            "storage.k8s.io",
            "admissionregistration.k8s.io",
            "scheduling.k8s.io",
            "flowcontrol.apiserver.k8s.io",
            "coordination.k8s.io",
            "resource.k8s.io",
            "node.k8s.io",
        )
    ]
)
# A shorter GC cycle keeps the apiservers' heaps small (three of them run per sandbox).
ENV = {"GOGC": "50"}


def service(cluster_id):
    return "data-plane-" + cluster_id


def namespace(cluster_id):
    return "rlark-" + cluster_id


def apiserver_argv(binary, cluster_id, port, etcd_port, pki_dir, tokens_csv):
    p = lambda f: os.path.join(pki_dir, f)  # noqa: E731
    return [
        binary,
        "--etcd-servers=http://127.0.0.1:%d" % etcd_port, "--etcd-prefix=/data-plane/" + cluster_id,
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=%d" % port,
        "--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"),
        "--authorization-mode=RBAC", "--token-auth-file=" + tokens_csv,
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--service-account-key-file=" + p("sa.pub"), "--service-account-signing-key-file=" + p("sa.key"),
        "--service-cluster-ip-range=10.0.0.0/24", "--cert-dir=" + pki_dir,
        # `kubectl logs` path: the apiserver dials the node's InternalIP and kubelet port (rlark-sim),
        # verifies its serving cert with the sandbox CA and shows its own client cert.
        "--kubelet-certificate-authority=" + p("ca.crt"),
        "--kubelet-client-certificate=" + p("kubelet-client.crt"), "--kubelet-client-key=" + p("kubelet-client.key"),
        "--kubelet-preferred-address-types=InternalIP",
        "--allow-privileged=true", "--disable-admission-plugins=ServiceAccount",
        "--enable-priority-and-fairness=false", "--profiling=false", "--endpoint-reconciler-type=none",
        "--runtime-config=" + RUNTIME_CONFIG, "--watch-cache=false", "--v=1",
        # Idle cost (the suite keeps 3-4 sandboxes up for its whole run): no per-type object counts or db-size
        # polls of etcd, no identity-lease heartbeat. Metrics and a lease nothing here reads; the API is unchanged.
        "--etcd-count-metric-poll-period=0", "--etcd-db-metric-poll-interval=0",
        "--feature-gates=APIServerIdentity=false",
    ]  # fmt: skip


def tokens_row(token, cluster_id):
    return '%s,dp-%s-admin,dp-%s-admin,"system:masters"\n' % (token, cluster_id, cluster_id)


def kubeconfig(cluster_id, server, token, ca_path):
    with open(ca_path, "rb") as fh:
        ca_data = base64.b64encode(fh.read()).decode()
    name = "rlark-data-plane-" + cluster_id
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca_data}}],
        "users": [{"name": name + "-admin", "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name + "-admin"}}],
        "current-context": name,
        "preferences": {},
    }
