# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Permission check before acting: who am I (SelfSubjectReview) and may I (SelfSubjectAccessReview).

A guarded stop asks first, before it exports a log or writes a record, so that a token that may only
read is refused with one sentence instead of a 403 halfway through. The reviews create nothing: the
API server answers them without storing an object.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.findings import finding
from ansible_collections.rlark.ops.plugins.module_utils.jobspec import API_GROUP as GROUP
from ansible_collections.rlark.ops.plugins.module_utils.kube import ApiError

ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SELF_REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
RBAC_DOC = "docs/rbac.yml"
UNKNOWN_IDENTITY = "unknown (SelfSubjectReview not allowed)"

# What a guarded stop of one Job does on the API: read it with its Tasks and Pod CRs, then patch it.
GUARDED_STOP_CHECKS = (
    ("get", "jobs", True),
    ("list", "tasks", False),
    ("list", "pods", False),
    ("patch", "jobs", True),
)


def whoami(client):
    """``{username, groups}`` of the credentials in use; the username says so when it cannot be asked."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        answer = client.request("POST", SELF_REVIEWS, body=body, content_type="application/json")
    except ApiError as exc:
        if exc.code in (403, 404):
            return {"username": UNKNOWN_IDENTITY, "groups": []}
        raise
    user = (answer.get("status") or {}).get("userInfo") or {}
    return {"username": user.get("username") or UNKNOWN_IDENTITY, "groups": list(user.get("groups") or [])}


def may(client, verb, resource, group=GROUP, name=None, namespace=None):
    """``(allowed, reason)`` from one SelfSubjectAccessReview."""
    attributes = {"group": group, "resource": resource, "verb": verb}
    if name:
        attributes["name"] = name
    if namespace:
        attributes["namespace"] = namespace
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    status = client.request("POST", ACCESS_REVIEWS, body=body, content_type="application/json").get("status") or {}
    return bool(status.get("allowed")) and not status.get("denied"), status.get("reason") or ""


def describe(verb, resource, group=GROUP, name=None):
    target = "%s.%s" % (resource, group)
    return "%s %s%s" % (verb, target, "/" + name if name else "")


def check_job_access(client, job, checks=GUARDED_STOP_CHECKS):
    """``{identity, allowed: [...], denied: [...], findings, msg}`` for acting on Job ``job``.

    ``checks`` is ``(verb, plural, named)`` triples; a named check asks about that Job only. One
    ``permission-denied`` finding per denial; ``msg`` is one sentence naming identity, verbs and the
    RBAC file, empty when everything is allowed.
    """
    identity = whoami(client)
    allowed, denied = [], []
    for verb, resource, named in checks:
        name = job if named else None
        ok, reason = may(client, verb, resource, name=name)
        entry = {"verb": verb, "resource": "%s.%s" % (resource, GROUP), "name": name, "reason": reason}
        (allowed if ok else denied).append(entry)
    user = identity["username"]
    findings = [
        finding(
            "permission-denied",
            "%s may not %s." % (user, describe(d["verb"], d["resource"].split(".")[0], name=d["name"])),
            path="kubeconfig",
            hint="Bind the ClusterRole rlark-ops-guarded-stop from %s to this identity." % RBAC_DOC,
            verb=d["verb"],
            resource=d["resource"],
        )
        for d in denied
    ]
    msg = ""
    if denied:
        msg = "%s may not %s on Job %s, so nothing was exported, recorded or stopped; bind the ClusterRole from %s." % (
            user,
            " or ".join(sorted({d["verb"] + " " + d["resource"] for d in denied})),
            job,
            RBAC_DOC,
        )
    return {"identity": identity, "allowed": allowed, "denied": denied, "findings": findings, "msg": msg}


ACCESS_CHECK_SPEC = dict(
    job=dict(type="str"),  # without a Job: only who the credentials are (record headers)
    timeout=dict(type="int", default=60),
)


def access_check(client, params):
    """The rlark_access_check result for validated ``params`` (the runner owns ``client``)."""
    if params.get("job"):
        checked = check_job_access(client, params["job"])
    else:
        checked = {"identity": whoami(client), "allowed": [], "denied": [], "findings": [], "msg": ""}
    result = dict(checked, changed=False)
    if checked["denied"]:
        result["failed"] = True
    else:
        result.pop("msg")
    return result


__all__ = [
    "ACCESS_CHECK_SPEC",
    "GUARDED_STOP_CHECKS",
    "RBAC_DOC",
    "access_check",
    "check_job_access",
    "may",
    "whoami",
]
