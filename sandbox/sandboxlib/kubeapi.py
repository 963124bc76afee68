"""A minimal JSON REST client for the sandbox API server (stdlib only: starts in milliseconds)."""

import http.client
import json
import ssl
import time
import urllib.parse


class ApiError(Exception):
    def __init__(self, status, method, path, body):
        super().__init__("%s %s -> %s: %s" % (method, path, status, (body or {}).get("message", body)))
        self.status = status
        self.body = body


class KubeApi:
    def __init__(self, server, token, ca_file, timeout=15.0):
        url = urllib.parse.urlparse(server)
        self.host, self.port = url.hostname, url.port or 443
        self.token = token
        self.timeout = timeout
        self.ctx = ssl.create_default_context(cafile=ca_file)
        self._conn = None

    def _connection(self):
        if self._conn is None:
            self._conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=self.timeout)
        return self._conn

    def request(self, method, path, body=None, content_type="application/json", retry_429_s=20.0):
        """(status, decoded body); retries a dropped keep-alive connection once, and 429 for a while.

        429 "storage is (re)initializing" follows every CRD create/update for a moment.
        """
        deadline = time.monotonic() + retry_429_s
        while True:
            status, data, retry_after = self._request_once(method, path, body, content_type)
            if status != 429 or time.monotonic() + retry_after > deadline:
                return status, data
            time.sleep(retry_after)

    def _request_once(self, method, path, body, content_type):
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            try:
                conn = self._connection()
                conn.request(method, path, body=payload, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (ConnectionError, http.client.HTTPException, OSError):
                self.close()
                if attempt == 2:
                    raise
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:
            data = {"message": raw.decode(errors="replace")}
        try:
            retry_after = min(float(resp.getheader("Retry-After") or 0.5), 2.0)
        except ValueError:
            retry_after = 0.5
        return resp.status, data, max(retry_after, 0.2)

    def call(self, method, path, body=None, ok=(200, 201), **kw):
        status, data = self.request(method, path, body, **kw)
        if status not in ok:
            raise ApiError(status, method, path, data)
        return data

    def get(self, path, missing_ok=False):
        status, data = self.request("GET", path)
        if status == 404 and missing_ok:
            return None
        if status != 200:
            raise ApiError(status, "GET", path, data)
        return data

    def merge_patch(self, path, body):
        return self.call("PATCH", path, body, content_type="application/merge-patch+json")

    def create_or_merge(self, collection, obj):
        """POST `obj`; when it exists, merge-patch metadata.labels/annotations and spec into it."""
        status, data = self.request("POST", collection, obj)
        if status in (200, 201):
            return data
        if status != 409:
            raise ApiError(status, "POST", collection, data)
        patch = {k: obj[k] for k in ("spec",) if k in obj}
        patch["metadata"] = {k: obj["metadata"][k] for k in ("labels", "annotations") if k in obj["metadata"]}
        return self.merge_patch(collection + "/" + obj["metadata"]["name"], patch)

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None
