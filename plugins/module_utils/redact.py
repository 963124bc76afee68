# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mask secrets in anything rlark.ops writes or returns: records, findings, filter results, diffs, logs.

One rule table, ``SECRET_RULES``, says what a secret is, both **by name** (a key, env name or
``key=value`` left side: passwords, tokens, PATs, API keys, credentials...) and **by value shape**
(PEM private keys, JWTs, vendor tokens, cloud keys, webhook URLs, ``user:password@`` in URLs, long
high-entropy strings). The review flags exactly what this module masks, so a clean record is never
altered by redaction. Image digests and git commits (hex) are kept: records need them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re
from collections import Counter, namedtuple

try:
    from functools import lru_cache
except ImportError:  # pragma: no cover - Python 2 controllers are not supported anyway
    lru_cache = None

MASK = "***REDACTED***"

# ``name`` is a test on the name's words and value (or None); ``value`` a regex on the text (or None).
Rule = namedtuple("Rule", "id what name value")

# A name whose last word is one of these refers to a secret (or measures one) instead of holding it.
_NOT_HOLDING = {
    "ref", "name", "file", "path", "dir", "env", "mount", "secretkeyref", "secretref", "url", "endpoint", "host",
    "type", "kind", "mode", "header", "field", "id_file", "enabled", "expiry", "ttl", "timeout", "format", "store",
}  # fmt: skip
# Words that make the name a count or a limit (MAX_TOKENS, TOKEN_LIMIT), never a secret.
_MEASURES = {"max", "min", "num", "count", "limit", "length", "len", "size", "budget", "per", "total", "tokens"}
_PASSWORD_WORDS = {"password", "passwd", "passphrase", "pass", "pwd", "pw"}
_TOKEN_WORDS = {"token", "pat", "jwt", "bearer"}
_SECRET_WORDS = {"secret", "credential", "credentials", "apikey", "authorization", "cookie", "privatekey", "dsn"}
_SECRET_PAIRS = {
    ("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("session", "key"), ("signing", "key"),
    ("account", "key"), ("master", "key"), ("encryption", "key"), ("client", "secret"), ("auth", "key"),
    ("license", "key"), ("webhook", "url"), ("hook", "url"),
}  # fmt: skip
# Values that never hold a secret whatever the name: switches, small numbers, paths, variable references.
_HARMLESS_VALUE = re.compile(
    r"^(?:true|false|yes|no|on|off|none|null|[0-9]{1,5}|[~/][^\s]*|\$\{[^}]*\}|\$\([^)]*\))$", re.I
)
_TOKENISH = re.compile(r"^[A-Za-z0-9_\-+/=.:]{20,}$")


def name_words(name):
    """``WANDB_API_KEY``/``apiKey``/``wandb.api-key`` -> ``['wandb', 'api', 'key']``."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name))
    return [w for w in re.split(r"[^A-Za-z0-9]+", text.lower()) if w]


def _holds(words):
    """A name that can hold a value: not a reference (``..._FILE``) nor a measure (``MAX_TOKENS``)."""
    if words[-1:] == ["url"] and ("webhook" in words or "hook" in words):
        return True  # a webhook URL is itself the credential
    if not words or words[-1] in _NOT_HOLDING or "".join(words[-2:]) in _NOT_HOLDING:
        return False
    return not any(w in _MEASURES for w in words)


def _password_name(words, value):
    # PGPASSWORD, DB_PASS, MYSQL_PWD (a lone PWD is the working directory)
    if words == ["pwd"] or words == ["oldpwd"]:
        return False
    return any(w in _PASSWORD_WORDS or w.endswith(("password", "passwd")) for w in words)


def _token_name(words, value):
    # GITHUB_TOKEN, GH_PAT, AUTHTOKEN, x-auth-token
    return any(w in _TOKEN_WORDS or (w.endswith("token") and len(w) > 5) for w in words)


def _secret_word_name(words, value):
    return any(w in _SECRET_WORDS for w in words) or any(p in _SECRET_PAIRS for p in zip(words, words[1:]))


def _keyed_token(words, value):
    # OPENAI_KEY / WANDB_KEY holding a long token (40 hex included); sshPublicKey holds no secret.
    return words[-1] == "key" and "public" not in words and isinstance(value, str) and bool(_TOKENISH.match(value))


SECRET_RULES = (
    # by name (the value only decides when the rule says so)
    Rule("password-name", "its name says it holds a password", _password_name, None),
    Rule("token-name", "its name says it holds a token or PAT", _token_name, None),
    Rule("secret-name", "its name says it holds a secret, API key or credential", _secret_word_name, None),
    Rule("key-name-token", "its name ends in KEY and its value is a long token", _keyed_token, None),
    # by value shape
    Rule(
        "pem-private-key",
        "a PEM private key",
        None,
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    ),
    Rule("openssh-private-key", "an OpenSSH private key", None, r"\bb3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=]{20,}"),
    Rule("jwt", "a JSON Web Token", None, r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
    Rule("aws-access-key-id", "an AWS access key id", None, r"\b(?:AKIA|ASIA|AIDA|AROA|AGPA|ANPA)[A-Z0-9]{16}\b"),
    Rule("github-token", "a GitHub token", None, r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    Rule("gitlab-token", "a GitLab token", None, r"\bgl(?:pat|dt|rt|cbt|ptt)-[A-Za-z0-9_-]{20,}"),
    Rule(
        "openai-key",
        "an OpenAI/Anthropic-style API key",
        None,
        r"\bsk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
    ),
    Rule("stripe-key", "a Stripe secret key", None, r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    Rule("slack-token", "a Slack token", None, r"\bxox[abposre]-[A-Za-z0-9-]{10,}"),
    Rule(
        "slack-webhook",
        "a Slack webhook URL",
        None,
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
    ),
    Rule(
        "discord-webhook",
        "a Discord webhook URL",
        None,
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]+",
    ),
    Rule(
        "teams-webhook",
        "a Microsoft Teams webhook URL",
        None,
        r"https://[A-Za-z0-9.-]+\.webhook\.office\.com/[^\s'\"]+",
    ),
    Rule("google-api-key", "a Google API key", None, r"\bAIza[0-9A-Za-z_-]{35}"),
    Rule(
        "gcp-service-account-key",
        "a Google service account private key id",
        None,
        r"\"private_key_id\"\s*:\s*\"[0-9a-f]{40}\"",
    ),
    Rule("huggingface-token", "a Hugging Face token", None, r"\bhf_[A-Za-z0-9]{30,}"),
    Rule("npm-token", "an npm token", None, r"\bnpm_[A-Za-z0-9]{36}\b"),
    Rule("pypi-token", "a PyPI token", None, r"\bpypi-[A-Za-z0-9_-]{50,}"),
    Rule("sendgrid-key", "a SendGrid key", None, r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    Rule("azure-account-key", "an Azure storage account key", None, r"\b(?i:AccountKey)=[A-Za-z0-9+/=]{20,}"),
    Rule("azure-sas", "an Azure SAS signature", None, r"\bsig=[A-Za-z0-9%+/=]{20,}"),
    Rule("twilio-key", "a Twilio API key", None, r"\bSK[0-9a-f]{32}\b"),
    Rule("databricks-token", "a Databricks token", None, r"\bdapi[0-9a-f]{32}\b"),
    # a value masked in a module result (rlark_job copy_from): reviewing it must still refuse
    Rule("masked-value", "a value rlark.ops masked as a secret", None, re.escape(MASK)),
    # shapes with their own masking (see _redact_text)
    Rule("auth-header", "an Authorization header value", None, r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"),
    Rule("url-password", "a URL with user:password", None, r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)"),
    Rule("high-entropy", "a long high-entropy string", None, r"[A-Za-z0-9+_\-]{32,}={0,2}"),
)
_BY_ID = {rule.id: rule for rule in SECRET_RULES}
_NAME_RULES = tuple(rule for rule in SECRET_RULES if rule.name)
# Shapes masked as a whole; the last three keep their surroundings (scheme, user, "Bearer").
_WHOLE_RULES = [(r, re.compile(r.value, re.S)) for r in SECRET_RULES if r.value][:-3]
# Text each value-shape rule cannot match without (one of them). A plain ``in`` test finds them in a
# megabyte in microseconds, where each regex costs a pass at every position: the rules whose text is
# absent are not run (they cannot match), which keeps long values and log lines fast.
_NEEDS = {
    "pem-private-key": ("-----BEGIN ",),
    "openssh-private-key": ("b3BlbnNzaC1rZXktdjE",),
    "jwt": ("eyJ",),
    "aws-access-key-id": ("AKIA", "ASIA", "AIDA", "AROA", "AGPA", "ANPA"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": ("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-"),
    "openai-key": ("sk-",),
    "stripe-key": ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
    "slack-token": ("xox",),
    "slack-webhook": ("https://hooks.slack.com/",),
    "discord-webhook": ("/api/webhooks/",),
    "teams-webhook": (".webhook.office.com/",),
    "google-api-key": ("AIza",),
    "gcp-service-account-key": ('"private_key_id"',),
    "huggingface-token": ("hf_",),
    "npm-token": ("npm_",),
    "pypi-token": ("pypi-",),
    "sendgrid-key": ("SG.",),
    "azure-account-key": ("y=", "Y="),  # AccountKey= in any case: only y and Y fold to y
    "azure-sas": ("sig=",),
    "twilio-key": ("SK",),
    "databricks-token": ("dapi",),
    "masked-value": (MASK,),
}


def _has(text, rule_id):
    return any(part in text for part in _NEEDS[rule_id])


def _whole_finders(text):
    """``(rule, search(text, pos))`` for the rules of ``_WHOLE_RULES`` that can match ``text`` (the others cannot)."""
    return [
        (rule, _find_jwt if rule.id == "jwt" else regex.search) for rule, regex in _WHOLE_RULES if _has(text, rule.id)
    ]


def _whole_matches(text):
    """What the alternation of ``_WHOLE_RULES`` finds (``finditer``): from each position the leftmost match of
    any rule, the first rule in the table on a tie, each rule searched on its own and again only once passed."""
    finders = _whole_finders(text)
    found = [None] * len(finders)
    pos = 0
    while True:
        best = None
        for index, (_rule, search) in enumerate(finders):
            if found[index] is None or (found[index] and found[index].start() < pos):
                found[index] = search(text, pos) or False
            if found[index] and (best is None or found[index].start() < best.start()):
                best = found[index]
        if best is None:
            return
        yield best
        pos = best.end()


_JWT = re.compile(_BY_ID["jwt"].value)
_JWT_START = re.compile(r"\beyJ")
_JWT_RUN = re.compile(r"[A-Za-z0-9_-]+")


def _find_jwt(text, pos):
    """The jwt rule's leftmost match from ``pos``. A start that fails fails for every later ``eyJ`` of the same
    run of token characters (they all end where the run ends): the run is skipped, not tried from each one."""
    while True:
        start = _JWT_START.search(text, pos)
        match = _JWT.match(text, start.start()) if start else None
        if match or not start:
            return match
        pos = _JWT_RUN.match(text, start.start()).end()


_BEARER = re.compile(_BY_ID["auth-header"].value)
_URL_PASSWORD = re.compile(_BY_ID["url-password"].value)
# Where a URL-password match can begin: a whole run of scheme characters right before ``://``, then the
# first letter in it at a word boundary (every later start ends at the same ``://`` and fails or succeeds
# the same way; trying each one made a long dotted or dashed run quadratic).
_SCHEME_RUN = re.compile(r"(?i)(?<![a-z0-9+.-])[a-z0-9+.-]+(?=://)")
_SCHEME_START = re.compile(r"(?i)\b[a-z]")
_LONG_TOKEN = re.compile(_BY_ID["high-entropy"].value)
# ``name = value``. A name only starts a run of name characters (after its leading digits, dots or dashes):
# every later start in the run ends where the run ends and fails the same way, and trying each one made
# a long run quadratic.
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<lead>[0-9.\-]*)(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)(?P<sep>\s*[=:]\s*)"
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s'\";&,]+)"
)
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_DIGIT = re.compile(r"[0-9]")
# rlark.ops run ids (20250102T030405Z-guarded-stop-3fa9c1) name record directories, they hide nothing.
_RUN_ID = re.compile(r"^[0-9]{8}T[0-9]{6}Z(?:-[a-z0-9]+)*$")
# The base64 body of an SSH public key is high-entropy but public (Job spec.sshPublicKey).
_PUBLIC_KEY_TYPE = re.compile(r"(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp[0-9]+|sk-ssh-ed25519@openssh\.com)\s+$")


def _memo(func, size=8192):
    """Names and strings repeat a lot across roles; a bounded cache keeps filters fast."""
    return lru_cache(maxsize=size)(func) if lru_cache else func


def name_rule(name, value=None):
    """The id of the name rule that makes ``name`` (holding ``value``) a secret, or None."""
    # A long value is not kept in the cache (a few megabyte env values would stay in memory).
    return _name_rule(name, value) if isinstance(value, str) and len(value) >= 2048 else _name_rule_memo(name, value)


def _name_rule(name, value):
    words = name_words(name)
    if not _holds(words):
        return None
    if value is not None and (isinstance(value, bool) or _HARMLESS_VALUE.match(str(value).strip())):
        return None
    for rule in _NAME_RULES:
        if rule.name(words, value):
            return rule.id
    return None


_name_rule_memo = _memo(_name_rule)


def is_secret_name(name):
    """The name alone says it holds a secret (values aside)."""
    return name_rule(name) not in (None, "key-name-token")


def is_secret_assignment(name, value):
    """``name`` holding ``value`` is a secret by name."""
    return _is_scalar_value(value) and name_rule(name, value if isinstance(value, str) else str(value)) is not None


def _entropy(text):
    counts = Counter(text)
    return -sum(c / float(len(text)) * math.log(c / float(len(text)), 2) for c in counts.values())


def is_high_entropy_token(token):
    """Long mixed-case alphanumeric runs such as API keys; hex (digests, commits) is not one."""
    if len(token) < 32 or _HEX.match(token):
        return False
    if token.isascii():  # the same tests as below, in C (a long run is read a few times, not char by char)
        has_upper, has_lower = token != token.lower(), token != token.upper()
        has_digit = has_upper and has_lower and _DIGIT.search(token) is not None
    else:
        has_upper = any(c.isupper() for c in token)
        has_lower = any(c.islower() for c in token)
        has_digit = any(c.isdigit() for c in token)
    return has_upper and has_lower and has_digit and _entropy(token) >= 4.0


def value_rule(text):
    """The id of the first value-shape rule that ``text`` matches, or None."""
    if not isinstance(text, str):
        return None
    for rule, search in _whole_finders(text):
        if search(text, 0):
            return rule.id
    if _may_hold_bearer(text) and _BEARER.search(text):
        return "auth-header"
    if next(_url_passwords(text), None):
        return "url-password"
    for match in _assignments(text):
        rule = name_rule(match.group("name"), _unquote(match.group("value")))
        if rule:
            return rule
    if any(_mask_long_token(m) == MASK for m in _LONG_TOKEN.finditer(text)):
        return "high-entropy"
    return None


def secret_reason(name, value):
    """Why ``name=value`` is a secret (a sentence naming the rule, never the value), or None."""
    rule = name_rule(name, str(value)) if name and _is_scalar_value(value) else None
    rule = rule or value_rule(value)
    return "%s (rule %s)" % (_BY_ID[rule].what, rule) if rule else None


def _unquote(text):
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


def _mask_assignment(match):
    if name_rule(match.group("name"), _unquote(match.group("value"))):
        return match.group("lead") + match.group("name") + match.group("sep") + MASK
    return match.group(0)


def _url_passwords(text):
    """``_URL_PASSWORD.finditer(text)`` in linear time: one match attempt per ``://``."""
    end = 0
    for run in _SCHEME_RUN.finditer(text) if "://" in text else ():
        start = _SCHEME_START.search(text, run.start(), run.end()) if run.start() >= end else None
        match = _URL_PASSWORD.match(text, start.start()) if start else None
        if match:
            end = match.end()
            yield match


def _sub_matches(text, matches, replace):
    """``text`` with each of ``matches`` (in order, not overlapping) replaced by ``replace(match)``."""
    parts, last = [], 0
    for match in matches:
        parts += [text[last : match.start()], replace(match)]
        last = match.end()
    return "".join(parts + [text[last:]]) if parts else text


def redact_text(text):
    """Mask secret-shaped parts of a string."""
    if not isinstance(text, str) or len(text) < 6:
        return text
    text = str.__str__(text)
    # Short strings repeat (names, values). A long value is redacted a few times in one review (the manifest,
    # the Job, the result): the last few are kept, up to 4 MB each; longer text (exported logs) is not.
    if len(text) < 2048:
        return _redact_short(text)
    return _redact_long(text) if len(text) <= 1 << 22 else _redact_text(text)


def _redact_text(text):
    out = _sub_matches(text, _whole_matches(text), lambda _match: MASK)
    out = _BEARER.sub(lambda m: m.group(1) + " " + MASK, out) if _may_hold_bearer(out) else out
    out = _sub_matches(out, _url_passwords(out), lambda m: m.group(1) + MASK + m.group(3))
    out = _sub_matches(out, _assignments(out), _mask_assignment)
    return _LONG_TOKEN.sub(_mask_long_token, out)


def _may_hold_bearer(text):
    """Bearer/Basic in any case (re folds more than str.lower does outside ASCII, so other text is scanned)."""
    if not text.isascii():
        return True
    low = text.lower()
    return "bearer" in low or "basic" in low


def _assignments(text):
    return _ASSIGNMENT.finditer(text) if "=" in text or ":" in text else iter(())


def _mask_long_token(match):
    before = match.string[max(0, match.start() - 40) : match.start()]
    if not is_high_entropy_token(match.group(0)) or _PUBLIC_KEY_TYPE.search(before) or _RUN_ID.match(match.group(0)):
        return match.group(0)
    return MASK


_redact_short = _memo(_redact_text)
_redact_long = _memo(_redact_text, size=4)


def looks_secret(text):
    """The string carries something ``redact_text`` would mask."""
    return isinstance(text, str) and redact_text(text) != text


def redact(data):
    """A deep copy of ``data`` with secrets masked by key name, by ``{name, value}`` pairs and by shape."""
    if isinstance(data, dict):
        pair_name = data.get("name") if isinstance(data.get("name"), str) else None
        out = {}
        for key, value in data.items():
            by_pair = pair_name and key == "value" and is_secret_assignment(pair_name, value)
            if by_pair or is_secret_assignment(key, value):
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


# Module result keys that carry Job, Task, Pod or Node objects, their diff or their logs.
RESULT_KEYS = ("job", "tasks", "pods", "nodes", "resources", "diff", "logs", "head_log")


def redact_result(result, keys=RESULT_KEYS):
    """A module result with secret values masked under ``keys``: names, labels and states stay readable."""
    return {key: redact(value) if key in keys else value for key, value in result.items()}


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
