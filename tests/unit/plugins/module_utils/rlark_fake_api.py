# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-memory stand-in for the API server, plugged into ``kube.Client`` as its transport.

It implements just what the core uses: GET/list with label selectors (``=``, ``in``), limit/continue,
POST, JSON merge patch and DELETE with a resourceVersion precondition, dryRun=All, fieldValidation=Strict
for a known set of Job spec fields, and scripted faults (status codes or exceptions) per request.
Unit tests only: integration tests use the real kube-apiserver.
"""

import copy
import json
import re
from urllib.parse import parse_qsl, unquote, urlsplit

PREFIX = "/apis/rlinf.io/v1alpha1"
JOB_SPEC_FIELDS = {"domain", "stopped", "tasks", "sshPublicKey"}
TASK_FIELDS = {
    "name",
    "head",
    "agentType",
    "role",
    "domain",
    "sshPublicKey",
    "downstreamName",
    "nodeSelector",
    "kubernetes",
    "docker",
    "raw",
    "tensorBoardDir",
    "prepareScript",
    "runScript",
}


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def status(code, reason, message, causes=None):
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason}
    body["message"] = message
    if causes:
        body["details"] = {"causes": causes}
    return code, {}, json.dumps(body).encode()


def selector_matches(labels, selector):
    if not selector:
        return True
    labels = labels or {}
    for part in re.split(r",(?![^(]*\))", selector):
        part = part.strip()
        m = re.match(r"^(\S+) in \((.*)\)$", part)
        if m:
            if labels.get(m.group(1)) not in m.group(2).split(","):
                return False
        elif "=" in part:
            key, value = part.split("=", 1)
            if labels.get(key) != value:
                return False
        elif labels.get(part) is None:
            return False
    return True


class FakeApi:
    def __init__(self):
        self.objects = {}  # (plural, namespace, name) -> object
        self.rv = 100
        self.requests = []
        self.faults = []  # list of (predicate(method, path, query), response-or-exception)
        self.hooks = []  # callables(method, path, query) run before handling (to simulate concurrency)

    # --- seeding ---
    def add(self, plural, obj):
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        meta.setdefault("uid", "uid-%d" % self.rv)
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        self.objects[(plural, meta.get("namespace"), meta["name"])] = obj
        return obj

    def get(self, plural, name, namespace=None):
        return self.objects.get((plural, namespace, name))

    def fail_next(self, response, method=None, times=1, path_contains=None):
        for _count in range(times):
            self.faults.append((method, path_contains, response))

    def count(self, method=None):
        return len([r for r in self.requests if method is None or r[0] == method])

    def close(self):
        pass

    # --- transport interface ---
    def send(self, method, path, headers, body, timeout):
        parts = urlsplit(path)
        query = dict(parse_qsl(parts.query))
        self.requests.append((method, parts.path, query, json.loads(body) if body else None))
        for hook in list(self.hooks):
            hook(method, parts.path, query)
        for index, (fmethod, fpath, response) in enumerate(self.faults):
            if (fmethod is None or fmethod == method) and (fpath is None or fpath in parts.path):
                del self.faults[index]
                if isinstance(response, BaseException):
                    raise response
                if response[0] == "apply-then-raise":
                    self._handle(method, parts.path, query, body)
                    raise response[1]
                if response[0] == "apply-then-respond":
                    # The server applied the request; the answer the client gets says otherwise (a 5xx).
                    self._handle(method, parts.path, query, body)
                    return response[1]
                return response
        return self._handle(method, parts.path, query, body)

    def _parse(self, path):
        assert path.startswith(PREFIX), path
        rest = [unquote(p) for p in path[len(PREFIX) + 1 :].split("/")]
        namespace = None
        if rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        return plural, namespace, name, sub

    def _handle(self, method, path, query, body):
        plural, namespace, name, _sub = self._parse(path)
        dry = query.get("dryRun") == "All"
        data = json.loads(body) if body else None
        if method == "GET" and name is None:
            return self._list(plural, namespace, query)
        key = (plural, namespace, name)
        if method == "GET":
            obj = self.objects.get(key)
            if obj is None:
                return status(404, "NotFound", '%s.rlinf.io "%s" not found' % (plural, name))
            return 200, {}, json.dumps(obj).encode()
        if method == "POST":
            name = data["metadata"]["name"]
            key = (plural, namespace, name)
            bad = self._strict(data, query)
            if bad:
                return bad
            if key in self.objects:
                return status(409, "AlreadyExists", '%s.rlinf.io "%s" already exists' % (plural, name))
            obj = copy.deepcopy(data)
            obj["metadata"]["uid"] = "new"
            obj["metadata"]["resourceVersion"] = str(self.rv + 1)
            if not dry:
                obj = self.add(plural, data)
            return 201, {}, json.dumps(obj).encode()
        if method == "PATCH":
            obj = self.objects.get(key)
            if obj is None:
                return status(404, "NotFound", '%s.rlinf.io "%s" not found' % (plural, name))
            want_rv = (data.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != obj["metadata"]["resourceVersion"]:
                return status(
                    409,
                    "Conflict",
                    'Operation cannot be fulfilled on %s.rlinf.io "%s": the object has been modified' % (plural, name),
                )
            merged = merge_patch(obj, data)
            bad = self._strict(merged, query)
            if bad:
                return bad
            if dry:
                merged["metadata"]["resourceVersion"] = obj["metadata"]["resourceVersion"]
                return 200, {}, json.dumps(merged).encode()
            merged = self.add(plural, merged)
            return 200, {}, json.dumps(merged).encode()
        if method == "DELETE":
            obj = self.objects.get(key)
            if obj is None:
                return status(404, "NotFound", '%s.rlinf.io "%s" not found' % (plural, name))
            want_rv = ((data or {}).get("preconditions") or {}).get("resourceVersion")
            if want_rv and want_rv != obj["metadata"]["resourceVersion"]:
                return status(
                    409,
                    "Conflict",
                    "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s"
                    % (want_rv, obj["metadata"]["resourceVersion"]),
                )
            if not (data or {}).get("dryRun"):
                del self.objects[key]
                # Background propagation: Tasks of a Job go too (the fake has instant GC).
                if plural == "jobs":
                    for k in [k for k, v in self.objects.items() if k[0] == "tasks" and self._job_of(v) == name]:
                        del self.objects[k]
            return 200, {}, json.dumps({"kind": "Status", "status": "Success"}).encode()
        raise AssertionError(method)

    @staticmethod
    def _job_of(task):
        return (task["metadata"].get("labels") or {}).get("rlinf.io/job")

    def _strict(self, obj, query):
        if query.get("fieldValidation") != "Strict" or obj.get("kind") not in (None, "Job"):
            return None
        for key in obj.get("spec") or {}:
            if key not in JOB_SPEC_FIELDS:
                return status(
                    400,
                    "BadRequest",
                    'Job in version "v1alpha1" cannot be handled as a Job: '
                    'strict decoding error: unknown field "spec.%s"' % key,
                )
        for i, task in enumerate((obj.get("spec") or {}).get("tasks") or []):
            for key in task:
                if key not in TASK_FIELDS:
                    return status(
                        400,
                        "BadRequest",
                        'Job in version "v1alpha1" cannot be handled as a Job: '
                        'strict decoding error: unknown field "spec.tasks[%d].%s"' % (i, key),
                    )
        return None

    def _list(self, plural, namespace, query):
        items = [
            o
            for (p, ns, _n), o in sorted(self.objects.items(), key=lambda kv: (kv[0][1] or "", kv[0][2]))
            if p == plural
            and (namespace is None or ns == namespace)
            and selector_matches(o["metadata"].get("labels"), query.get("labelSelector"))
            and self._field_ok(o, query.get("fieldSelector"))
        ]
        limit = int(query.get("limit", "0") or 0)
        start = int(query.get("continue", "0") or 0)
        page = items[start : start + limit] if limit else items[start:]
        meta = {"resourceVersion": str(self.rv)}
        if limit and start + limit < len(items):
            meta["continue"] = str(start + limit)
        body = {"kind": "List", "apiVersion": "rlinf.io/v1alpha1", "metadata": meta, "items": page}
        return 200, {}, json.dumps(body).encode()

    @staticmethod
    def _field_ok(obj, selector):
        if not selector:
            return True
        key, value = selector.split("=", 1)
        assert key == "metadata.name"
        return obj["metadata"]["name"] == value


class FakeClock:
    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def make_client(api=None, timeout=60.0, clock=None, **kwargs):
    from ansible_collections.rlark.ops.plugins.module_utils.kube import Client, Settings

    settings = Settings()
    settings.server = "https://fake.invalid:6443"
    settings.token = "t0ken"
    clock = clock or FakeClock()
    return Client(
        settings,
        transport=api or FakeApi(),
        timeout=timeout,
        clock=clock,
        sleep=clock.sleep,
        rand=lambda: 0.5,
        **kwargs,
    )


def job(name="demo", stopped=False, phase="Running", tasks=None, pvc=False):
    tasks = tasks or [
        {"name": "actor", "head": True, "role": "Actor", "nodeSelector": {"kubernetes.io/hostname": "a100-01"}},
        {"name": "rollout", "role": "Rollout", "nodeSelector": {"rlinf.io/pool": "rollout"}},
        {"name": "env", "role": "Env", "nodeSelector": {"rlinf.io/pool": "rollout"}},
    ]
    tasks = copy.deepcopy(tasks)
    for t in tasks:
        pod_spec = {
            "containers": [{"name": "main", "image": "rlinf/rlinf:1.0", "resources": {"requests": {"cpu": "4"}}}]
        }
        if pvc:
            pod_spec["volumes"] = [{"name": "ckpt", "persistentVolumeClaim": {"claimName": ""}}]
        t.setdefault("runScript", "python train.py runner.max_steps=10" if t.get("head") else "")
        t.setdefault("kubernetes", {"workload": {"kind": "StatefulSet", "replicas": 1, "template": {"spec": pod_spec}}})
    obj = {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"stopped": stopped, "tasks": tasks},
    }
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def task_obj(job_name, task, namespace="rlark-a100", replicas=1, phase="Running"):
    return {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Task",
        "metadata": {"name": "%s-%s" % (job_name, task), "namespace": namespace, "labels": {"rlinf.io/job": job_name}},
        "spec": {"kubernetes": {"workload": {"kind": "StatefulSet", "replicas": replicas}}},
        "status": {"phase": phase},
    }


def pod_obj(task_name, index=0, namespace="rlark-a100", node="a100-01"):
    return {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Pod",
        "metadata": {
            "name": "uid-%s-%d" % (task_name, index),
            "namespace": namespace,
            "labels": {"rlark.io/task-name": task_name},
        },
        "status": {"phase": "Running", "node": node},
    }
