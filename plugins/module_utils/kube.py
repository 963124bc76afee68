# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one API client of the collection: auth, retries, pagination, dry-run and strict writes.

Plain Python on top of ``http.client`` and ``ssl`` (no kubernetes client import: a module task pays
~0.3 s for that import alone). It talks to fixed ``/apis/rlinf.io/v1alpha1`` paths, so there is no
API discovery round trip. Every HTTP request is counted in ``Client.api_calls``.

Retries: 429 honours ``Retry-After``; 500/502/503/504 and dropped connections use jittered
exponential backoff; all of it is bounded by a monotonic deadline. A create is never blindly
re-sent: after an ambiguous failure the object is read back first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import contextlib
import json
import os
import random
import socket
import ssl
import time

from ansible_collections.rlark.ops.plugins.module_utils.backoff import backoff_delay
from ansible_collections.rlark.ops.plugins.module_utils.jobspec import API_VERSION
from ansible_collections.rlark.ops.plugins.module_utils.kube_auth import (
    AUTH_OPTIONS,
    SERVICE_ACCOUNT_DIR,
    Settings,
    auth_params,
    resolve_auth,
)
from ansible_collections.rlark.ops.plugins.module_utils.kube_errors import (
    ApiError,
    ConfigError,
    KubeError,
    TransportError,
    parse_status,
)

try:
    import http.client as http_client
    from urllib.parse import quote, urlencode, urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported, keeps sanity's py2 compile quiet
    http_client = None

API_PREFIX = "/apis/" + API_VERSION
DEFAULT_PAGE_LIMIT = 500
DEFAULT_TIMEOUT = 120.0
# A server that never answered (refused, unroutable) is given this long before the task fails; once
# it has answered, dropped connections are retried up to the task's whole deadline.
DEFAULT_CONNECT_TIMEOUT = 10.0
CONNECT_TIMEOUT_ENV = "RLARK_CONNECT_TIMEOUT"
RETRYABLE_STATUS = (429, 500, 502, 503, 504)
USER_AGENT = "rlark.ops/0.1.0"


def bypasses_proxy(host, no_proxy):
    """True when ``host`` matches the comma list ``no_proxy`` (exact, domain suffix or ``*``)."""
    for entry in (no_proxy or "").split(","):
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry == "*" or host.lower() == entry.lstrip("."):
            return True
        if host.lower().endswith("." + entry.lstrip(".")):
            return True
    return False


# --- transport ------------------------------------------------------------------------------------


class HttpTransport:
    """One keep-alive connection to the API server; ``send`` returns (status, headers, body)."""

    def __init__(self, settings):
        parts = urlsplit(settings.server)
        if parts.scheme not in ("http", "https"):
            raise ConfigError("API server URL %r must start with https:// or http://." % settings.server)
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if self.scheme == "https" else 80)
        self.base_path = parts.path.rstrip("/")
        self.settings = settings
        self.context = self._ssl_context() if self.scheme == "https" else None
        self.conn = None
        self.sock = None  # the socket of the call in progress

    def _ssl_context(self):
        s = self.settings
        try:
            if s.verify:
                context = ssl.create_default_context(cafile=s.ca_file, cadata=s.ca_data)
            else:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            if s.client_cert:
                context.load_cert_chain(s.client_cert, s.client_key)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError("Cannot load the TLS certificates: %s." % exc) from None
        return context

    def _connect(self, timeout):
        proxy = self.settings.proxy
        if proxy and not bypasses_proxy(self.host, self.settings.no_proxy):
            p = urlsplit(proxy if "://" in proxy else "http://" + proxy)
            target = (p.hostname, p.port or 3128)
        else:
            p, target = None, (self.host, self.port)
        if self.scheme == "https":
            conn = http_client.HTTPSConnection(target[0], target[1], timeout=timeout, context=self.context)
        else:
            conn = http_client.HTTPConnection(target[0], target[1], timeout=timeout)
        if p is not None:
            headers = {}
            if p.username:
                auth = "%s:%s" % (p.username, p.password or "")
                headers["Proxy-Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
            conn.set_tunnel(self.host, self.port, headers=headers)
        return conn

    def send(self, method, path, headers, body, timeout, sink=None):
        """``sink.write(chunk)`` takes a successful body in pieces (a long log), never held whole."""
        if self.conn is None:
            self.conn = self._connect(timeout)
        else:
            self.conn.timeout = timeout
            if self.conn.sock is not None:
                self.conn.sock.settimeout(timeout)
        try:
            self.conn.request(method, self.base_path + path, body=body, headers=headers)
            self.sock = self.conn.sock  # the response may take it over (no keep-alive): kept for interrupt()
            response = self.conn.getresponse()
            if sink is not None and response.status < 300:
                for chunk in iter(lambda: response.read1(1 << 16), b""):  # what has come: a followed log trickles
                    sink.write(chunk)
                if response.length:  # read(amt) ends quietly when the connection drops before Content-Length
                    raise http_client.IncompleteRead(b"", response.length)
                data = b""
            else:
                data = response.read()
        except Exception:
            self.close()
            raise
        finally:
            self.sock = None
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data

    def interrupt(self):
        """Wake a read blocked in another thread (a followed log that must end): it sees the stream end."""
        sock = self.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's: SSLSocket's drops its state

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


CONNECTION_ERRORS = (socket.error, socket.timeout, ssl.SSLError)
if http_client is not None:
    CONNECTION_ERRORS += (http_client.HTTPException,)


def retry_after_seconds(value):
    """Seconds from a Retry-After header (integer form; an HTTP date counts as 1 s)."""
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return 1.0


# --- client ---------------------------------------------------------------------------------------


def resource_path(plural, name=None, namespace=None, subresource=None):
    """``/apis/rlinf.io/v1alpha1/[namespaces/<ns>/]<plural>[/<name>[/<sub>]]``."""
    path = API_PREFIX
    if namespace:
        path += "/namespaces/" + quote(namespace, safe="")
    path += "/" + plural
    if name:
        path += "/" + quote(name, safe="")
        if subresource:
            path += "/" + subresource
    return path


class Client:
    """API calls with retries and a deadline. ``transport`` and ``clock``/``sleep`` are injectable."""

    def __init__(
        self,
        settings=None,
        transport=None,
        timeout=DEFAULT_TIMEOUT,
        clock=time.monotonic,
        sleep=time.sleep,
        rand=random.random,
        backoff_base=0.25,
        backoff_cap=8.0,
        request_timeout=30.0,
        log=None,
        connect_timeout=DEFAULT_CONNECT_TIMEOUT,
    ):
        self.settings = settings
        self.transport = transport or HttpTransport(settings)
        self.clock = clock
        self.sleep = sleep
        self.rand = rand
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.request_timeout = request_timeout
        self.deadline = clock() + float(timeout)
        self.connect_timeout = float(connect_timeout)
        self.answered = False  # the server has answered at least once
        self.api_calls = 0
        self.retries = 0
        self.log = log or (lambda message: None)

    def fork(self):
        """A client on its own connection with the same auth and deadline (for parallel reads).

        Fold its counters back with ``absorb`` when done.
        """
        twin = Client(
            self.settings,
            transport=HttpTransport(self.settings) if isinstance(self.transport, HttpTransport) else self.transport,
            clock=self.clock,
            sleep=self.sleep,
            rand=self.rand,
            backoff_base=self.backoff_base,
            backoff_cap=self.backoff_cap,
            request_timeout=self.request_timeout,
            log=self.log,
        )
        twin.deadline = self.deadline
        twin.connect_timeout = self.connect_timeout
        twin.answered = self.answered
        return twin

    def absorb(self, twin):
        self.api_calls += twin.api_calls
        self.retries += twin.retries
        if twin.transport is not self.transport:
            twin.transport.close()

    @property
    def server(self):
        return self.settings.server if self.settings else None

    def remaining(self):
        return self.deadline - self.clock()

    def interrupt(self):
        """End the call running in another thread now: no retry follows (the deadline is now)."""
        self.deadline = self.clock()
        interrupt = getattr(self.transport, "interrupt", None)
        if interrupt is not None:
            interrupt()

    def close(self):
        self.transport.close()
        if self.settings is not None:
            self.settings.cleanup()

    def _headers(self, content_type=None):
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        s = self.settings
        if s is not None and s.token:
            headers["Authorization"] = "Bearer " + s.token
        elif s is not None and s.username:
            raw = ("%s:%s" % (s.username, s.password or "")).encode("utf-8")
            headers["Authorization"] = "Basic " + base64.b64encode(raw).decode("ascii")
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def _backoff(self, attempt):
        return backoff_delay(attempt, self.backoff_base, self.backoff_cap, self.rand, floor=0.5)

    def request(self, method, path, query=None, body=None, content_type=None, on_ambiguous=None, sink=None):
        """One API call with retries; returns the decoded JSON body (``{}`` when ``sink`` took it).

        ``sink`` (``write(chunk)``, ``reset()``) receives a successful body as it streams; every
        attempt starts it over.

        ``on_ambiguous`` is called (instead of a blind resend) when a request that is not
        idempotent may or may not have been applied; it returns a result to use, or None to resend.
        """
        if query:
            path = path + "?" + urlencode([(k, v) for k, v in query if v is not None])
        payload = None if body is None else json.dumps(body).encode("utf-8")
        headers = self._headers(content_type if payload is not None else None)
        if sink is not None:
            headers["Accept"] = "*/*"  # a log is text/plain
        attempt = 0
        first_failure = None
        while True:
            timeout = max(0.5, min(self.request_timeout, self.remaining()))
            if not self.answered:
                timeout = min(timeout, max(0.5, self.connect_timeout))
            ambiguous = False
            try:
                self.api_calls += 1
                if sink is None:
                    code, resp_headers, data = self.transport.send(method, path, headers, payload, timeout)
                else:
                    sink.reset()
                    code, resp_headers, data = self.transport.send(method, path, headers, payload, timeout, sink=sink)
            except CONNECTION_ERRORS as exc:
                now = self.clock()
                first_failure = now if first_failure is None else first_failure
                detail = exc.__class__.__name__ + (": %s" % exc if str(exc) else "")
                last_error = TransportError(
                    "Cannot reach the API server %s: %s %s failed after %d attempt(s) in %.0f s: %s. Check that "
                    "the server of rlark_kubeconfig/rlark_context is up and reachable from this machine (waiting "
                    "for a server that never answered is limited by rlark_connect_timeout, %s s)."
                    % (self.server or "(unknown)", method, path.split("?")[0], attempt + 1, now - first_failure,
                       detail, _seconds(self.connect_timeout))
                )  # fmt: skip
                why = "connection failed (%s)" % detail
                delay = self._backoff(attempt)
                ambiguous = True
                if not self.answered:
                    window = self.connect_timeout - (now - first_failure)
                    if window <= 0.05:
                        raise last_error from None
                    delay = min(delay, window)
            else:
                self.answered = True
                if code < 400:
                    return self._decode(data, method, path)
                last_error = parse_status(code, data, method, path)
                if code not in RETRYABLE_STATUS:
                    raise last_error
                why = "%s %s" % (code, last_error.reason)
                if code == 429 or "retry-after" in resp_headers:
                    delay = retry_after_seconds(resp_headers.get("retry-after", "1"))
                else:
                    delay = self._backoff(attempt)
                # 429 means "not processed"; a 5xx may come after the write was applied.
                ambiguous = code != 429
            if delay >= self.remaining():
                raise last_error
            self.retries += 1
            self.log("retrying %s %s in %.2fs: %s" % (method, path.split("?")[0], delay, why))
            self.sleep(delay)
            attempt += 1
            if ambiguous and on_ambiguous is not None:
                recovered = on_ambiguous()
                if recovered is not None:
                    return recovered

    @staticmethod
    def _decode(data, method, path):
        if not data:
            return {}
        try:
            return json.loads(data.decode("utf-8"))
        except ValueError:
            raise TransportError(
                "The API server sent a response that is not JSON for %s %s." % (method, path)
            ) from None

    # --- verbs ---

    def get(self, path, query=None):
        return self.request("GET", path, query=query)

    def get_or_none(self, path):
        try:
            return self.get(path)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    def iter_pages(self, path, label_selector=None, field_selector=None, limit=DEFAULT_PAGE_LIMIT, max_restarts=3):
        """Yield list pages (dicts); restart from the first page when the continue token expires (410).

        A restart is reported by yielding ``None`` so that callers drop what they have collected.
        """
        restarts = 0
        token = None
        while True:
            query = [("limit", str(limit)), ("labelSelector", label_selector), ("fieldSelector", field_selector)]
            if token:
                query.append(("continue", token))
            try:
                page = self.get(path, query)
            except ApiError as exc:
                if exc.code == 410 and token and restarts < max_restarts:
                    restarts += 1
                    token = None
                    self.log("list %s expired (410 Gone); restarting from the first page" % path)
                    yield None
                    continue
                raise
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def list(self, path, label_selector=None, field_selector=None, limit=DEFAULT_PAGE_LIMIT):
        """All items of a list plus the list resourceVersion, paging with limit/continue."""
        items = []
        resource_version = None
        for page in self.iter_pages(path, label_selector, field_selector, limit):
            if page is None:
                items, resource_version = [], None
                continue
            items.extend(page.get("items") or [])
            if resource_version is None:
                resource_version = (page.get("metadata") or {}).get("resourceVersion")
        return items, resource_version

    def create(self, collection_path, body, dry_run=False):
        """POST with strict field validation; after an ambiguous failure read the object back first."""
        name = (body.get("metadata") or {}).get("name")
        query = [("fieldValidation", "Strict")] + ([("dryRun", "All")] if dry_run else [])

        def read_back():
            if dry_run or not name:
                return None
            existing = self.get_or_none(collection_path + "/" + quote(name, safe=""))
            if existing is not None:
                self.log("create of %s was applied before the connection failed; not resending" % name)
            return existing

        return self.request("POST", collection_path, query, body, "application/json", on_ambiguous=read_back)

    def merge_patch(self, path, patch, dry_run=False, on_ambiguous=None):
        """PATCH; ``on_ambiguous`` (see ``request``) tells whether a 5xx/reset answer hid an applied patch."""
        query = [("fieldValidation", "Strict")] + ([("dryRun", "All")] if dry_run else [])
        return self.request("PATCH", path, query, patch, "application/merge-patch+json", on_ambiguous=on_ambiguous)

    def delete(self, path, propagation="Background", dry_run=False, resource_version=None, on_ambiguous=None):
        # Background, never Foreground: RLark's controller re-creates the Tasks of a Job that is being
        # deleted, so a foreground deletion of a Job never finishes (rlark-platform.md section 2a).
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if resource_version:
            body["preconditions"] = {"resourceVersion": resource_version}
        if dry_run:
            body["dryRun"] = ["All"]
        return self.request("DELETE", path, None, body, "application/json", on_ambiguous=on_ambiguous)


def _seconds(value):
    return ("%.1f" % value).rstrip("0").rstrip(".")


def connect_timeout_of(params):
    """Seconds to wait for a server that never answered: option, then RLARK_CONNECT_TIMEOUT, then 10."""
    value = params.get("connect_timeout")
    if value in (None, ""):
        value = os.environ.get(CONNECT_TIMEOUT_ENV) or DEFAULT_CONNECT_TIMEOUT
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ConfigError(
            "connect_timeout (rlark_connect_timeout) must be a number of seconds, not %r" % (value,)
        ) from None
    if value <= 0:
        raise ConfigError("connect_timeout (rlark_connect_timeout) must be more than 0 seconds, not %r" % (value,))
    return value


def client_from_params(params, timeout=DEFAULT_TIMEOUT, log=None):
    """Build a Client from module parameters (the auth options; other keys are ignored)."""
    params = auth_params(params)
    connect_timeout = connect_timeout_of(params)
    return Client(resolve_auth(params), timeout=timeout, log=log, connect_timeout=connect_timeout)


# The client's public names, the auth and error names it re-exports included.
__all__ = [
    "API_PREFIX",
    "AUTH_OPTIONS",
    "CONNECT_TIMEOUT_ENV",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "SERVICE_ACCOUNT_DIR",
    "ApiError",
    "Client",
    "ConfigError",
    "HttpTransport",
    "KubeError",
    "Settings",
    "TransportError",
    "auth_params",
    "bypasses_proxy",
    "client_from_params",
    "connect_timeout_of",
    "parse_status",
    "resolve_auth",
    "resource_path",
    "retry_after_seconds",
]
