"""Outcome checks through a reader independent of the collection.

The collection's own readers (``jobs.py``, ``kube.py``, ``rlark_job_info``) are what the modules' waits
rely on, so a test that checks "nothing was created" or "no Pod CR is left" with them cannot catch their
bugs. These helpers read the API server with the sandbox's stdlib client (``sandbox/sandboxlib/kubeapi.py``)
and the admin token; ``custom_objects`` gives the `kubernetes` package's client, through a kubeconfig.
"""

from urllib.parse import quote

from helpers import wait_until
from kubeapi_for_tests import Api
from kubernetes import client, config

GROUP = "/apis/rlinf.io/v1alpha1"


def custom_objects(kubeconfig):
    """The `kubernetes` package's custom-objects client through ``kubeconfig`` (a new connection each call: after an
    apiserver restart the old one is dead)."""
    return client.CustomObjectsApi(config.new_client_from_config(config_file=kubeconfig))


def _api(sandbox):
    return Api(sandbox.server, sandbox.admin_token, sandbox.ca_cert)


def get_job(sandbox, name):
    """The Job object, or None when the API server has no Job of that name."""
    api = _api(sandbox)
    try:
        return api.get("%s/jobs/%s" % (GROUP, quote(name, safe="")), missing_ok=True)
    finally:
        api.close()


def create_job(sandbox, job):
    """POST ``job`` as it is (a test's starting state), not through the collection; returns the stored object."""
    api = _api(sandbox)
    try:
        return api.call("POST", "%s/jobs" % GROUP, job)
    finally:
        api.close()


def _pods_by_task(sandbox):
    """[(rlark.io/task-name, Pod CR)] of every Pod CR in any namespace."""
    api = _api(sandbox)
    try:
        items = api.get(GROUP + "/pods")["items"]
    finally:
        api.close()
    return [((p["metadata"].get("labels") or {}).get("rlark.io/task-name") or "", p) for p in items]


def job_pods(sandbox, name):
    """Every Pod CR in any namespace whose rlark.io/task-name belongs to Job ``name`` (``<job>-<task>``)."""
    return [p for task, p in _pods_by_task(sandbox) if task.startswith(name + "-")]


def job_tasks(sandbox, name):
    api = _api(sandbox)
    try:
        return api.get(GROUP + "/tasks?labelSelector=" + quote("rlinf.io/job=" + name, safe=""))["items"]
    finally:
        api.close()


def job_view(sandbox, name):
    """``{job, tasks, pods}`` of Job ``name`` as the API server has them, or None when there is no such Job.

    Pods are the Pod CRs labelled with one of the Job's Task names (listed Tasks and those its templates
    imply), so a Job ``x-again`` beside ``x`` never lends its pods to ``x``.
    """
    job = get_job(sandbox, name)
    if job is None:
        return None
    tasks = job_tasks(sandbox, name)
    names = {t["metadata"]["name"] for t in tasks}
    names.update("%s-%s" % (name, t["name"]) for t in job.get("spec", {}).get("tasks") or () if t.get("name"))
    return {"job": job, "tasks": tasks, "pods": [p for task, p in _pods_by_task(sandbox) if task in names]}


def delete_job(sandbox, name, timeout=180):
    """Delete Job ``name`` (background propagation, as ``rlark_job state=absent`` does) and wait until the Job
    and every Task labelled with it are gone. Test cleanup: no checkpoint data is touched."""
    api = _api(sandbox)
    try:
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        api.call("DELETE", "%s/jobs/%s" % (GROUP, quote(name, safe="")), body, ok=(200, 202, 404))
    finally:
        api.close()
    wait_until(lambda: get_job(sandbox, name) is None and not job_tasks(sandbox, name), timeout, interval=0.2)


def assert_nothing_created(sandbox, name):
    """No Job, no Task and no Pod CR of ``name`` exist."""
    assert get_job(sandbox, name) is None, "Job %s was created" % name
    assert job_tasks(sandbox, name) == [], "Tasks of %s exist" % name
    assert job_pods(sandbox, name) == [], "Pod CRs of %s exist" % name
