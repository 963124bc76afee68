# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The errors of the API client: one readable sentence each, and the parsed API Status."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

try:
    import http.client as http_client
except ImportError:  # pragma: no cover - Python 2 is not supported, keeps sanity's py2 compile quiet
    http_client = None


class KubeError(Exception):
    """Any failure of the client; ``str()`` is one readable sentence."""

    def to_dict(self):
        return {"code": None, "reason": type(self).__name__, "message": str(self), "causes": []}


class ConfigError(KubeError):
    """The auth options or the kubeconfig cannot give a usable connection."""


class ApiError(KubeError):
    """The API server answered with an error status; ``status`` is the parsed Status object."""

    def __init__(self, code, reason, message, causes=None, method="", path=""):
        self.code = code
        self.reason = reason or ""
        self.message = message or ""
        self.causes = causes or []
        self.method = method
        self.path = path
        super().__init__(self.sentence())

    def sentence(self):
        text = (self.message or self.reason or "no message").strip().rstrip(".")
        details = ["%s: %s" % (c.get("field"), c.get("message")) for c in self.causes if c.get("field")]
        extra = [d for d in details if d.split(": ", 1)[0] not in text]
        if extra:
            text += " (" + "; ".join(extra) + ")"
        return "The API server rejected %s %s with %s %s: %s." % (
            self.method,
            self.path.split("?")[0],
            self.code,
            self.reason or "Error",
            text,
        )

    def to_dict(self):
        return {"code": self.code, "reason": self.reason, "message": self.message, "causes": self.causes}

    @property
    def not_found(self):
        return self.code == 404

    @property
    def conflict(self):
        return self.code == 409


class TransportError(KubeError):
    """The connection failed and retries did not help before the deadline."""


def parse_status(code, body, method, path):
    """Turn an error response into ``ApiError``; a non-Status body becomes a short message."""
    reason = http_client.responses.get(code, "Error").replace(" ", "") if http_client else "Error"
    message = ""
    causes = []
    try:
        data = json.loads(body.decode("utf-8")) if body else {}
    except ValueError:
        data = {}
    if isinstance(data, dict) and data.get("kind") == "Status":
        reason = data.get("reason") or reason
        message = data.get("message") or ""
        details = data.get("details") or {}
        causes = [
            {"field": c.get("field", ""), "reason": c.get("reason", ""), "message": c.get("message", "")}
            for c in details.get("causes") or []
        ]
    elif body:
        # Not a Status (a proxy page, for example): keep one line of it, never the whole body.
        text = body.decode("utf-8", "replace").strip().splitlines()
        message = text[0][:200] if text else ""
    return ApiError(code, reason, message, causes, method, path)
