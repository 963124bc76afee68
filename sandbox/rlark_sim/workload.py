"""What RLark's data-plane agent applies for a Task (rlark-platform.md section 3): the workload in
rlark-system with the agent's mutations, the head Service, the PVC names, and the labels that tie a
Pod CR to its Task. agent.py reconciles these; scheduling.py places their pods.
"""

import copy

SYSTEM_NS = "rlark-system"
TASK_NAME_LABEL = "rlark.io/task-name"
LOCAL_NAME_LABEL = "rlark.io/local-pod-name"
LOCAL_NS_LABEL = "rlark.io/local-pod-namespace"
HOSTNAME = "kubernetes.io/hostname"


def pod_task_key(pod):
    """Index key of a Pod CR: (namespace, Task name) from its rlark.io/task-name label."""
    task_name = (pod["metadata"].get("labels") or {}).get(TASK_NAME_LABEL)
    return (pod["metadata"].get("namespace"), task_name) if task_name else None


def is_cluster_namespace(namespace):
    return bool(namespace) and namespace.startswith("rlark-") and namespace != SYSTEM_NS


def workload_of(task):
    return ((task.get("spec") or {}).get("kubernetes") or {}).get("workload")


def replicas_of(workload):
    replicas = workload.get("replicas")
    return 1 if replicas is None else int(replicas)


def is_head(task):
    return (task["metadata"].get("annotations") or {}).get("rlark.io/ray-role") == "head"


def _set_env(container, name, value=None, field=None):
    env = [e for e in container.get("env") or [] if e.get("name") != name]
    item = {"name": name}
    if field:
        item["valueFrom"] = {"fieldRef": {"fieldPath": field}}
    else:
        item["value"] = "" if value is None else str(value)
    env.append(item)
    container["env"] = env


def pvc_claims(task):
    """(volume name, claim name, storage class) for each PVC volume; empty claimName -> pvc-<task>-<volume>."""
    workload = workload_of(task) or {}
    storage_map = workload.get("pvcStorageMap") or {}
    name = task["metadata"]["name"]
    out = []
    for vol in ((workload.get("template") or {}).get("spec") or {}).get("volumes") or []:
        pvc = vol.get("persistentVolumeClaim")
        if pvc is None:
            continue
        claim = pvc.get("claimName") or "pvc-%s-%s" % (name, vol.get("name"))
        out.append((vol.get("name"), claim, storage_map.get(pvc.get("claimName") or claim)))
    return out


WORKLOAD_PLURALS = {"StatefulSet": "statefulsets", "Deployment": "deployments", "DaemonSet": "daemonsets"}


def workload_kind(task):
    return (workload_of(task) or {}).get("kind") or "StatefulSet"


def effective_stopped(task):
    """replicas 0 stops StatefulSets and Deployments; DaemonSets ignore it (RLark never scales them)."""
    workload = workload_of(task)
    return workload is not None and workload_kind(task) != "DaemonSet" and replicas_of(workload) == 0


def build_workload(task, privileged=True):
    """The workload (StatefulSet, Deployment or DaemonSet, as the Task says) RLark's agent would apply in
    rlark-system, with the mutations that matter."""
    meta = task["metadata"]
    name = meta["name"]
    workload = workload_of(task)
    template = _template(task, copy.deepcopy(workload.get("template") or {}))
    pod = template.setdefault("spec", {})
    _ray_containers(task, pod)
    for vol, claim, _cls in pvc_claims(task):
        for v in pod.get("volumes") or []:
            if v.get("name") == vol:
                v["persistentVolumeClaim"]["claimName"] = claim
    for container in (pod.get("containers") or []) + (pod.get("initContainers") or []):
        if privileged:
            sc = dict(container.get("securityContext") or {})
            sc["privileged"] = True
            container["securityContext"] = sc
    _placement(task, pod)
    head_task = (meta.get("annotations") or {}).get("rlark.io/ray-head-task-name") or name
    kind = workload_kind(task)
    kind = kind if kind in WORKLOAD_PLURALS else "StatefulSet"
    spec = {"selector": {"matchLabels": {"app": name}}, "template": template}
    if kind != "DaemonSet":
        spec["replicas"] = replicas_of(workload)
    if kind == "StatefulSet":
        spec["serviceName"] = "%s-ray-head" % head_task
        spec["podManagementPolicy"] = "OrderedReady"
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": SYSTEM_NS,
            "labels": {"app": name},
            "annotations": {
                "rlark.io/management-task-name": name,
                "rlark.io/management-task-namespace": meta.get("namespace", ""),
                "rlark.io/management-task-uid": meta.get("uid", ""),
                "rlark.io/management-task-resource-version": meta.get("resourceVersion", ""),
            },
        },
        "spec": spec,
    }


def _template(task, template):
    """The pod template with the app label and the management annotations RLark's agent adds."""
    meta = task["metadata"]
    spec = task.get("spec") or {}
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = dict(tmeta.get("labels") or {}, app=meta["name"])
    tann = dict(tmeta.get("annotations") or {})
    tann.update(
        {
            "rlark.io/management-task-name": meta["name"],
            "rlark.io/management-task-namespace": meta.get("namespace", ""),
            "rlark.io/management-task-domain": spec.get("domain", ""),
        }
    )
    tmeta["annotations"] = tann
    return template


def _ray_containers(task, pod):
    """The main container runs RLark's Ray script with its environment; the scripts volume is mounted."""
    spec = task.get("spec") or {}
    ann = task["metadata"].get("annotations") or {}
    head = is_head(task)
    script_cm = "ray-head-init" if head else "ray-worker-init"
    for container in pod.get("containers") or []:
        if container.get("name") != "main":
            continue
        container["command"] = ["bash", "/rlark/scripts/%s" % ("ray_head.sh" if head else "ray_worker.sh")]
        _set_env(container, "RLARK_RAY_PORT", "6379")
        _set_env(container, "RLARK_PREPARE_SCRIPT", spec.get("prepareScript", ""))
        _set_env(container, "RLARK_SSH_PUBLIC_KEY", spec.get("sshPublicKey", ""))
        _set_env(container, "RLARK_NODE_RANK_START", ann.get("rlark.io/ray-node-rank-start", "0"))
        _set_env(container, "POD_NAME", field="metadata.name")
        if head:
            _set_env(container, "RLARK_RUN_SCRIPT", spec.get("runScript", ""))
            _set_env(container, "RLARK_TOTAL_NODES", ann.get("rlark.io/ray-total-nodes", "1"))
            _set_env(container, "RLARK_NODE_IP", field="status.podIP")
            _set_env(container, "RLARK_DOMAIN", spec.get("domain", ""))
        else:
            head_task = ann.get("rlark.io/ray-head-task-name", "")
            addr = "%s-0.rlark-domain" % head_task if spec.get("domain") else "%s-ray-head" % head_task
            _set_env(container, "RLARK_HEAD_ADDRESS", addr)
        mounts = [m for m in container.get("volumeMounts") or [] if m.get("mountPath") != "/rlark/scripts"]
        mounts.append({"name": "rlark-ray-scripts", "mountPath": "/rlark/scripts"})
        container["volumeMounts"] = mounts
    if any(c.get("name") == "main" for c in pod.get("containers") or []):
        volumes = [v for v in pod.get("volumes") or [] if v.get("name") != "rlark-ray-scripts"]
        volumes.append({"name": "rlark-ray-scripts", "configMap": {"name": script_cm, "defaultMode": 0o755}})
        pod["volumes"] = volumes


def _placement(task, pod):
    """nodeSelector, the comma values as ORed affinity terms, one pod per node, host network for workers."""
    name = task["metadata"]["name"]
    selector = (task.get("spec") or {}).get("nodeSelector") or {}
    singles = {k: v for k, v in selector.items() if "," not in str(v)}
    commas = {k: v for k, v in selector.items() if "," in str(v)}
    affinity = pod.setdefault("affinity", {})
    if singles:
        pod["nodeSelector"] = dict(singles)
    if commas:
        # One term per key: Kubernetes ORs nodeSelectorTerms (RLark's behaviour, kept on purpose).
        terms = [
            {"matchExpressions": [{"key": k, "operator": "In", "values": [x.strip() for x in str(v).split(",")]}]}
            for k, v in sorted(commas.items())
        ]
        affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
    anti = affinity.setdefault("podAntiAffinity", {})
    required = list(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    required.append({"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": HOSTNAME})
    anti["requiredDuringSchedulingIgnoredDuringExecution"] = required
    if not is_head(task):
        pod["hostNetwork"] = True
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"


def build_head_service(task):
    name = task["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "%s-ray-head" % name,
            "namespace": SYSTEM_NS,
            "annotations": {"rlark.io/management-task-namespace": task["metadata"].get("namespace", "")},
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {"app": name},
            "ports": [
                {"name": "gcs", "port": 6379},
                {"name": "dashboard", "port": 8265},
                {"name": "metrics", "port": 8080},
            ],
        },
    }


def ordinal_of(pod):
    local = (pod["metadata"].get("labels") or {}).get(LOCAL_NAME_LABEL, "")
    tail = local.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1
