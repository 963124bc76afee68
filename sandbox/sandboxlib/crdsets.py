"""The sandbox's CRD sets (the project's, RLark's upstream ones) and RLark's hand-built controller-manager."""

import os

from sandboxlib import bootstrap, say

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
PROJECT_CRDS = os.path.join(HERE, "crds")
UPSTREAM_CRDS = os.path.normpath(os.path.join(ROOT, "..", "shared", "upstream", "rlark-crds"))
# RLark's DomainPeer and Addon (same commit): installed in upstream mode only. The collection and rlark-sim
# never read or write them, so the project set does not model them (see docs/sandbox.md).
UPSTREAM_EXTRA_CRDS = os.path.normpath(os.path.join(ROOT, "..", "shared", "upstream", "rlark-crds-extra"))
CONTROLLER_MANAGER_ENV = "RLARK_CONTROLLER_MANAGER"


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


def crds_with_controller_manager(crds, cm_path):
    """The CRD set `up` uses next to RLark's controller-manager: upstream unless asked otherwise.

    Its Domain controller watches DomainPeer, which only the upstream set has (with the project set it logs
    `no matches for kind "DomainPeer"` over and over); an explicit `--crds project` is kept, with a warning.
    """
    if not cm_path:
        return crds
    if crds is None:
        return "upstream"
    if crds == "project":
        say(
            "warning: RLark's controller-manager watches DomainPeer, which the project CRD set lacks; "
            "use --crds upstream (SANDBOX_CRDS=upstream)"
        )
    return crds
