"""What the sandbox API server needs after start: RBAC for the tokens, namespaces, CRDs, the fleet."""

import copy
import glob
import os
import time

import yaml

from . import fleet
from .kubeapi import ApiError

CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
CRD_SET_ANNOTATION = "rlark.ops/crd-set"
GROUP = "rlinf.io"
ALL_PLURALS = ["jobs", "tasks", "nodes", "pods", "workflows", "domains"]
READ = ["get", "list", "watch"]

# token name -> (user, groups); admin is system:masters, the others get the ClusterRoles below.
IDENTITIES = {
    "admin": ("rlark-admin", ["system:masters"]),
    "operator": ("rlark-operator", ["rlark:operators"]),
    "viewer": ("rlark-viewer", ["rlark:viewers"]),
}
CLUSTER_ROLES = {
    "rlark-operator": [
        {"apiGroups": [GROUP], "resources": ALL_PLURALS, "verbs": READ},
        {"apiGroups": [GROUP], "resources": ["jobs"], "verbs": ["create", "patch", "update", "delete"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": READ},
    ],
    "rlark-viewer": [
        {"apiGroups": [GROUP], "resources": ["*"], "verbs": READ},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": READ},
    ],
}


def crd_files(crd_set, project_dir, upstream_dir):
    directory = project_dir if crd_set == "project" else upstream_dir
    files = sorted(glob.glob(os.path.join(directory, "*.yaml")))
    if not files:
        raise SystemExit("no CRD files for set %r in %s" % (crd_set, directory))
    return files


def load_crds(files, crd_set):
    docs = []
    for path in files:
        with open(path) as fh:
            for doc in yaml.safe_load_all(fh):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    doc = copy.deepcopy(doc)
                    doc["metadata"].setdefault("annotations", {})[CRD_SET_ANNOTATION] = crd_set
                    docs.append(doc)
    return docs


def live_crd_set(api):
    """The crd-set annotation shared by every rlinf.io CRD, or None when mixed/absent."""
    items = api.get(CRD_API)["items"]
    sets = {i["metadata"].get("annotations", {}).get(CRD_SET_ANNOTATION) for i in items if i["spec"]["group"] == GROUP}
    return sets.pop() if len(sets) == 1 else None


def install_crds(api, docs, timeout=60.0):
    """Create or replace each CRD in place (objects survive a schema swap) and wait until served."""
    changed = False
    for doc in docs:
        name = doc["metadata"]["name"]
        current = api.get(CRD_API + "/" + name, missing_ok=True)
        if current is None:
            api.call("POST", CRD_API, doc)
            changed = True
        elif (
            current["metadata"].get("annotations", {}).get(CRD_SET_ANNOTATION)
            != doc["metadata"]["annotations"][CRD_SET_ANNOTATION]
            or current["spec"].get("versions") != doc["spec"]["versions"]
        ):
            doc = copy.deepcopy(doc)
            doc["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            api.call("PUT", CRD_API + "/" + name, doc)
            changed = True
    deadline = time.monotonic() + timeout
    names = [d["metadata"]["name"] for d in docs]
    plurals = {d["spec"]["names"]["plural"] for d in docs}
    while True:
        pending = [n for n in names if not _established(api.get(CRD_API + "/" + n))]
        discovery = api.get("/apis/%s/v1alpha1" % GROUP, missing_ok=True) or {}
        served = {r["name"] for r in discovery.get("resources", [])}
        if not pending and plurals <= served:
            break
        if time.monotonic() > deadline:
            raise SystemExit("CRDs not established after %ds: %s" % (timeout, pending or plurals - served))
        time.sleep(0.2)
    if changed:
        time.sleep(1.0)  # the CRD handler swaps its storage/schema asynchronously after an update
        for doc in docs:  # lists answer 429 while the new storage initializes (request() waits it out)
            api.call("GET", "/apis/%s/v1alpha1/%s?limit=1" % (GROUP, doc["spec"]["names"]["plural"]))
    return changed


def _established(crd):
    conds = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
    return conds.get("Established") == "True" and conds.get("NamesAccepted") == "True"


def ensure_rbac(api):
    for name, rules in CLUSTER_ROLES.items():
        role = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        }
        _create_or_replace(api, RBAC_API + "/clusterroles", role)
        user = IDENTITIES[name.split("-", 1)[1]][0]
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }
        _create_or_replace(api, RBAC_API + "/clusterrolebindings", binding)


def _create_or_replace(api, collection, obj):
    status, _ = api.request("POST", collection, obj)
    if status == 409:
        current = api.get(collection + "/" + obj["metadata"]["name"])
        obj = dict(obj, metadata=dict(obj["metadata"], resourceVersion=current["metadata"]["resourceVersion"]))
        api.call("PUT", collection + "/" + obj["metadata"]["name"], obj)
    elif status not in (200, 201):
        raise ApiError(status, "POST", collection, _)


def ensure_namespaces(api):
    for ns in [*fleet.NAMESPACES, "default"]:
        status, body = api.request(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        if status not in (200, 201, 409):
            raise ApiError(status, "POST", "/api/v1/namespaces", body)


def fleet_present(api):
    items = api.get("/apis/%s/v1alpha1/nodes" % GROUP)["items"]
    have = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in items if i.get("status", {}).get("phase")}
    return all((d["metadata"]["namespace"], d["metadata"]["name"]) in have for d, _ in fleet.nodes())


def seed_fleet(api):
    """Create-or-update each Node CR, then write its status through the status subresource."""
    for doc, status in fleet.nodes():
        ns, name = doc["metadata"]["namespace"], doc["metadata"]["name"]
        collection = "/apis/%s/v1alpha1/namespaces/%s/nodes" % (GROUP, ns)
        api.create_or_merge(collection, doc)
        api.merge_patch("%s/%s/status" % (collection, name), {"status": status})
