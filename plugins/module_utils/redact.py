# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mask secrets in anything rlark.ops writes or returns: records, findings, filter results.

Two detectors: by **name** (a key, env name or ``key=value`` left side whose words include
password, secret, token, api key, private key, credential...) and by **value shape** (JWT, PEM
private keys, AWS access key ids, bearer tokens, ``user:password@`` in URLs, long high-entropy
tokens). Image digests and git commits (hex) are kept: records need them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

try:
    from functools import lru_cache
except ImportError:  # pragma: no cover - Python 2 controllers are not supported anyway
    lru_cache = None

MASK = "***REDACTED***"

# Words that make a name secret on their own, and word pairs that do so together.
_SECRET_WORDS = {
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "credential",
    "credentials",
    "apikey",
    "authorization",
    "cookie",
}
_SECRET_PAIRS = {
    ("api", "key"),
    ("access", "key"),
    ("private", "key"),
    ("secret", "key"),
    ("auth", "token"),
    ("session", "key"),
    ("client", "secret"),
    ("signing", "key"),
}
# A name ending in one of these words refers to a secret instead of holding one.
_REFERENCE_WORDS = {"ref", "name", "file", "path", "dir", "id_file", "env", "mount", "secretkeyref"}

_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")
_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S)
_AWS_ID = re.compile(r"\b(?:AKIA|ASIA|AIDA|AROA)[A-Z0-9]{16}\b")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s'\";&,]+)")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+_=\-]{32,}")
_HEX = re.compile(r"^[0-9a-fA-F]+$")


def name_words(name):
    """``WANDB_API_KEY``/``apiKey``/``wandb.api-key`` -> ``['wandb', 'api', 'key']``."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name))
    return [w for w in re.split(r"[^A-Za-z0-9]+", text.lower()) if w]


def _memo(func):
    """Names and strings repeat a lot across roles; a bounded cache keeps filters fast."""
    return lru_cache(maxsize=8192)(func) if lru_cache else func


@_memo
def is_secret_name(name):
    words = name_words(name)
    if not words or words[-1] in _REFERENCE_WORDS or "".join(words[-2:]) in _REFERENCE_WORDS:
        return False
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:]))


def _entropy(text):
    counts = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    return -sum(c / float(len(text)) * math.log(c / float(len(text)), 2) for c in counts.values())


def is_high_entropy_token(token):
    """Long mixed-case alphanumeric runs such as API keys; hex (digests, commits) is not one."""
    if len(token) < 32 or _HEX.match(token):
        return False
    has_upper = any(c.isupper() for c in token)
    has_lower = any(c.islower() for c in token)
    has_digit = any(c.isdigit() for c in token)
    return has_upper and has_lower and has_digit and _entropy(token) >= 4.0


def _mask_assignment(match):
    if is_secret_name(match.group(1)):
        return match.group(1) + match.group(2) + MASK
    return match.group(0)


def redact_text(text):
    """Mask secret-shaped parts of a string."""
    if not isinstance(text, str) or len(text) < 6:
        return text
    text = str.__str__(text)
    # Only short strings repeat (names, values); long ones (exported logs) are not worth caching.
    return _redact_short(text) if len(text) < 2048 else _redact_text(text)


def _redact_text(text):
    out = _PEM.sub(MASK, text)
    out = _JWT.sub(MASK, out)
    out = _AWS_ID.sub(MASK, out)
    out = _BEARER.sub(lambda m: m.group(1) + " " + MASK, out)
    out = _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + m.group(3), out)
    out = _ASSIGNMENT.sub(_mask_assignment, out)
    return _LONG_TOKEN.sub(lambda m: MASK if is_high_entropy_token(m.group(0)) else m.group(0), out)


_redact_short = _memo(_redact_text)


def looks_secret(text):
    """The string carries something ``redact_text`` would mask."""
    return isinstance(text, str) and redact_text(text) != text


def redact(data):
    """A deep copy of ``data`` with secrets masked by key name, by ``{name, value}`` pairs and by shape."""
    if isinstance(data, dict):
        pair_secret = isinstance(data.get("name"), str) and is_secret_name(data["name"])
        out = {}
        for key, value in data.items():
            if (is_secret_name(key) or (pair_secret and key == "value")) and _is_scalar_value(value):
                out[key] = MASK
            elif is_secret_name(key) and isinstance(value, (dict, list)) and not _is_reference(key):
                out[key] = _mask_leaves(value)
            else:
                out[key] = redact(value)
        return out
    if isinstance(data, (list, tuple)):
        return [redact(v) for v in data]
    if isinstance(data, str):
        return redact_text(data)
    return data


def _is_reference(key):
    return str(key) in ("secret", "secretKeyRef", "secretRef")


def _is_scalar_value(value):
    """A non-empty scalar worth masking (empty values and booleans reveal nothing)."""
    if isinstance(value, bool) or value is None or value == "":
        return False
    return isinstance(value, (str, int, float))


def _mask_leaves(value):
    if isinstance(value, dict):
        return {k: _mask_leaves(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_leaves(v) for v in value]
    return MASK if _is_scalar_value(value) else value
