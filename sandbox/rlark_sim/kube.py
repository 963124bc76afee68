"""Minimal REST client for the kube-apiserver plus list+watch caches (informers).

Plain ``requests`` on top of the credentials the ``kubernetes`` package reads from a kubeconfig, so the
simulator sees exactly the API (status codes, validation, pruning) a real controller sees.
"""

import contextlib
import json
import logging
import threading
import time

import requests
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

log = logging.getLogger("rlark_sim.kube")

GROUP_PATH = "/apis/rlinf.io/v1alpha1"


class ApiError(Exception):
    def __init__(self, status, body):
        self.status = status
        self.body = body
        try:
            self.message = json.loads(body).get("message", body)
        except ValueError:
            self.message = body
        super().__init__("HTTP %s: %s" % (status, self.message))


def crd_path(plural, namespace=None, name=None, sub=None):
    """Path of an rlinf.io resource; namespace None means cluster-scoped or all namespaces."""
    parts = [GROUP_PATH]
    if namespace:
        parts.append("namespaces/%s" % namespace)
    parts.append(plural)
    if name:
        parts.append(name)
    if sub:
        parts.append(sub)
    return "/".join(parts)


def core_path(api, plural, namespace=None, name=None):
    """Path of a built-in resource; api is "v1" or "apps/v1"."""
    prefix = "/api/v1" if api == "v1" else "/apis/" + api
    parts = [prefix]
    if namespace:
        parts.append("namespaces/%s" % namespace)
    parts.append(plural)
    if name:
        parts.append(name)
    return "/".join(parts)


class Kube:
    def __init__(self, kubeconfig):
        cfg = k8s_client.Configuration()
        k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=cfg, persist_config=False)
        self.host = cfg.host.rstrip("/")
        self.session = requests.Session()
        self.session.trust_env = False
        self.session.verify = cfg.ssl_ca_cert if cfg.verify_ssl and cfg.ssl_ca_cert else cfg.verify_ssl
        if cfg.cert_file and cfg.key_file:
            self.session.cert = (cfg.cert_file, cfg.key_file)
        token = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
        if token:
            self.session.headers["Authorization"] = token if token.startswith("Bearer ") else "Bearer " + token
        self._verify = self.session.verify
        self._cert = self.session.cert
        self._auth = self.session.headers.get("Authorization")
        self._local = threading.local()

    def _sess(self):
        # requests.Session is not thread-safe: one per thread (informers, trainers, main loop).
        sess = getattr(self._local, "session", None)
        if sess is None:
            sess = requests.Session()
            sess.trust_env = False  # REQUESTS_CA_BUNDLE would otherwise replace the kubeconfig CA
            sess.verify = self._verify
            sess.cert = self._cert
            if self._auth:
                sess.headers["Authorization"] = self._auth
            self._local.session = sess
        return sess

    def request(self, method, path, body=None, params=None, content_type="application/json", timeout=30):
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body)
        resp = self._sess().request(
            method, self.host + path, params=params, data=data, headers=headers, timeout=timeout
        )
        if resp.status_code >= 400:
            raise ApiError(resp.status_code, resp.text)
        return resp.json() if resp.content else {}

    def get(self, path, params=None):
        return self.request("GET", path, params=params)

    def get_or_none(self, path):
        try:
            return self.get(path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, path, body, params=None):
        return self.request("POST", path, body=body, params=params)

    def create_if_missing(self, path, body):
        """POST tolerating 409 AlreadyExists (deterministic names make creation idempotent)."""
        try:
            return self.create(path, body)
        except ApiError as exc:
            if exc.status == 409:
                return None
            raise

    def replace(self, path, body):
        return self.request("PUT", path, body=body)

    def merge_patch(self, path, body):
        return self.request("PATCH", path, body=body, content_type="application/merge-patch+json")

    def json_patch(self, path, ops):
        return self.request("PATCH", path, body=ops, content_type="application/json-patch+json")

    def delete(self, path, ignore_missing=True):
        try:
            return self.request("DELETE", path, body={"propagationPolicy": "Background"})
        except ApiError as exc:
            if ignore_missing and exc.status == 404:
                return None
            raise

    def delete_now(self, path):
        """Delete with grace period 0: without a kubelet to confirm, a bound pod would stay Terminating."""
        try:
            return self.request("DELETE", path, body={"gracePeriodSeconds": 0})
        except ApiError as exc:
            if exc.status != 404:
                raise
            return None

    def get_text(self, path, params=None, timeout=60):
        """(status, body text) of a GET that answers text, e.g. pods/<pod>/log."""
        resp = self._sess().get(self.host + path, params=params, timeout=timeout)
        # pods/<pod>/log answers text/plain without a charset: the bytes are UTF-8 (Go's string(bytes)), not the
        # ISO-8859-1 requests would guess.
        return resp.status_code, resp.content.decode("utf-8", errors="replace")

    def list(self, path, params=None):
        return self.get(path, params=params)

    def watch_lines(self, path, params, timeout):
        resp = self._sess().get(self.host + path, params=params, stream=True, timeout=(10, timeout + 30))
        if resp.status_code >= 400:
            raise ApiError(resp.status_code, resp.text)
        try:
            for line in resp.iter_lines():
                if line:
                    yield json.loads(line)
        finally:
            resp.close()


def obj_key(obj):
    meta = obj.get("metadata", {})
    return (meta.get("namespace") or "", meta["name"])


class Informer:
    """List+watch cache of one collection; `version` bumps on every change, `wake` (one Event or a list of
    them: the main loop's and the controller's) is set on every event.

    Items are returned sorted by (namespace, name): the order of a kube-apiserver list (etcd key order).
    `seen_rv`: every change of this collection up to that resourceVersion is in the cache (list, events and
    bookmarks), so a test can tell that a pass already saw its own write.
    """

    def __init__(self, kube, path, wake=None, label_selector=None, name="informer", index_fn=None):
        self.kube = kube
        self.index_fn = index_fn  # obj -> secondary key (e.g. the Task a Pod CR belongs to), or None
        self.index = {}
        self.path = path
        self.wakes = [] if wake is None else list(wake) if isinstance(wake, (list, tuple)) else [wake]
        self.label_selector = label_selector
        self.name = name
        self.items = {}
        # key -> resourceVersion of its deletion: a write of ours answered after the watch delivered the
        # DELETED event must not bring the object back into the cache (the garbage collector would then wait
        # on a Job that is gone, forever).
        self.tombstones = {}
        self.version = 0
        self.seen_rv = 0
        self.synced = threading.Event()
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()

    def _notify(self):
        self.version += 1
        for wake in self.wakes:
            wake.set()

    def _relist(self):
        params = {"labelSelector": self.label_selector} if self.label_selector else None
        data = self.kube.list(self.path, params=params)
        with self.lock:
            self.items = {}
            self.index = {}
            for obj in data.get("items", []):
                self._set(obj)
            self._notify()
            self._saw(data["metadata"].get("resourceVersion"))
        self.synced.set()
        return data["metadata"].get("resourceVersion")

    def _run(self):
        rv = None
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._relist()
                params = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "240"}
                if self.label_selector:
                    params["labelSelector"] = self.label_selector
                for event in self.kube.watch_lines(self.path, params, 240):
                    etype, obj = event.get("type"), event.get("object", {})
                    if etype == "ERROR":
                        rv = None  # 410 Gone or similar: relist
                        break
                    new_rv = obj.get("metadata", {}).get("resourceVersion")
                    if etype == "BOOKMARK":
                        rv = new_rv or rv
                        with self.lock:
                            self._saw(new_rv)
                        continue
                    with self.lock:
                        if etype == "DELETED":
                            self._drop(obj_key(obj))
                            self.tombstones[obj_key(obj)] = _rv(obj)
                        else:
                            self._set(obj)
                        self._saw(new_rv)
                        self._notify()
                    rv = new_rv or rv
                    if self._stop.is_set():
                        return
            except Exception as exc:  # connection loss, apiserver restart: back off and relist
                log.warning("%s: watch failed (%s); relisting", self.name, exc)
                rv = None
                self._stop.wait(1.0)

    def _saw(self, rv):
        with contextlib.suppress(ValueError):  # resourceVersions are opaque to clients; etcd's are integers
            self.seen_rv = max(self.seen_rv, int(rv or 0))

    def snapshot(self):
        with self.lock:
            return [self.items[k] for k in sorted(self.items)]

    def get(self, namespace, name):
        with self.lock:
            return self.items.get((namespace or "", name))

    def put(self, obj):
        """Record our own write so the next pass does not act on a stale copy."""
        if not obj or "metadata" not in obj:
            return
        with self.lock:
            old = self.items.get(obj_key(obj))
            if old is not None and _rv(old) > _rv(obj):
                return
            if _rv(obj) <= self.tombstones.get(obj_key(obj), -1):
                return  # deleted since this write: the watch's DELETED came first
            self._set(obj)
            self.version += 1

    def forget(self, namespace, name):
        with self.lock:
            self._drop((namespace or "", name))
            self.version += 1

    def _set(self, obj):
        key = obj_key(obj)
        self._drop(key)
        self.items[key] = obj
        if self.index_fn is not None:
            ikey = self.index_fn(obj)
            if ikey is not None:
                self.index.setdefault(ikey, {})[key] = obj

    def _drop(self, key):
        old = self.items.pop(key, None)
        if old is not None and self.index_fn is not None:
            ikey = self.index_fn(old)
            bucket = self.index.get(ikey)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self.index[ikey]

    def by_index(self, ikey):
        with self.lock:
            bucket = self.index.get(ikey) or {}
            return [bucket[k] for k in sorted(bucket)]


def _rv(obj):
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except ValueError:
        return 0


def wait_synced(informers, timeout=60):
    deadline = time.time() + timeout
    for inf in informers:
        if not inf.synced.wait(max(0.1, deadline - time.time())):
            raise RuntimeError("informer %s did not sync" % inf.name)
