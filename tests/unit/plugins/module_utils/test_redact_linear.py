# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Long text (issue 24, item 5): the linear-time redaction masks exactly what the former regexes masked.

The scans were rewritten so that a long run of name or scheme characters is read once instead of from
every start position, and rules whose literal text is absent are skipped. ``former_redact_text`` below is
the former implementation (its regexes written out again): on any input both must give the same text.
Timings are measured in bench/test_bench_linear_text.py, not here; these tests assert results only.
"""

import os
import re

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import redact as core
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import Export, LineSink
from ansible_collections.rlark.ops.plugins.module_utils.preflight import preflight
from ansible_collections.rlark.ops.plugins.module_utils.redact import MASK, redact_text, secret_reason, value_rule
from hypothesis import given, settings
from hypothesis import strategies as st
from migration_inputs import example, role
from test_secret_rules import SECRETS

MB = 1 << 20
# Plain training output: words, numbers, paths, key=value metrics, long runs of letters and dots.
FILLER_UNIT = "step 12 | actor/loss=0.1234 reward: 0.98 /data/run-3/x.py " + "x" * 200 + " a.b.c.d.e-f " * 8

_WHOLE = [r.value for r in core.SECRET_RULES if r.value][:-3]
FORMER_WHOLE = re.compile("|".join("(?:%s)" % value for value in _WHOLE), re.S)
FORMER_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s'\";&,]+)")
FORMER_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)")


def former_redact_text(text):
    """The former (quadratic on long runs) ``_redact_text``."""

    def assignment(match):
        if core.name_rule(match.group(1), core._unquote(match.group(3))):
            return match.group(1) + match.group(2) + MASK
        return match.group(0)

    out = FORMER_WHOLE.sub(MASK, text)
    out = core._BEARER.sub(lambda m: m.group(1) + " " + MASK, out)
    out = FORMER_URL_PASSWORD.sub(lambda m: m.group(1) + MASK + m.group(3), out)
    out = FORMER_ASSIGNMENT.sub(assignment, out)
    return core._LONG_TOKEN.sub(core._mask_long_token, out)


def filler(size):
    return (FILLER_UNIT * (size // len(FILLER_UNIT) + 1))[:size]


# Fragments that start, half-start or end the shapes the rules look for, so that generated text crosses
# every boundary the rewritten scans reason about (runs, word boundaries, ``://``, separators, quotes).
FRAGMENTS = [
    "a", "Z", "9", "_", ".", "-", "+", "/", ":", "=", "@", " ", "\n", '"', "'", ";", ",", "&",
    "\u00e9", "\u017f", "\u212a", "://", "http", "postgres", "1.x", "user", "pw", "Pa55", "PASSWORD", "token",
    "api_key", "Bearer ", "ba\u017fic ", "eyJ", "hbGciOi", "AKIA", "IOSFODNN7EXAMPLE", "ghp_", "sk-", "sk_live_",
    "xoxb-", "SG.", "AccountKey=", "accountkey", "sig=", "SK", "dapi", "hf_", "npm_", "pypi-", "glpat-", "AIza",
    "-----BEGIN ", "PRIVATE KEY-----", "-----END ", "b3BlbnNzaC1rZXktdjE", '"private_key_id"',
    "https://hooks.slack.com/", ".webhook.office.com/", "/api/webhooks/", MASK, "0123456789abcdef" * 2,
    "Xk29fJq8Lm3Np7Rt5Vw1Yz4Bc6Dh0Gs2", "AbCdEfGhIjKlMnOpQrStUv",
]  # fmt: skip
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)


@settings(max_examples=1500, deadline=None)
@given(texts)
def test_the_linear_scans_mask_and_report_exactly_what_the_former_regexes_did(text):
    assert core._redact_text(text) == former_redact_text(text)
    assert value_rule(text) == former_value_rule(text)


def former_value_rule(text):
    """The former ``value_rule``: its scans in its order."""
    for rule in core.SECRET_RULES[4:-3]:
        if re.search(rule.value, text, re.S):
            return rule.id
    if core._BEARER.search(text):
        return "auth-header"
    if FORMER_URL_PASSWORD.search(text):
        return "url-password"
    for match in FORMER_ASSIGNMENT.finditer(text):
        rule = core.name_rule(match.group(1), core._unquote(match.group(3)))
        if rule:
            return rule
    if any(core._mask_long_token(m) == MASK for m in core._LONG_TOKEN.finditer(text)):
        return "high-entropy"
    return None


@pytest.mark.parametrize("name,value,part", SECRETS, ids=[s[0] for s in SECRETS])
def test_a_secret_at_the_end_of_a_megabyte_is_still_masked(name, value, part):
    long_value = filler(MB) + "\n" + value
    short = redact_text(value)
    assert redact_text(long_value) == filler(MB) + "\n" + short
    if part:
        assert part not in redact_text(long_value)
    # the shape is found at the end of the megabyte as in the value alone
    assert (value_rule(long_value) is None) == (value_rule(value) is None)


def test_a_megabyte_without_a_secret_is_untouched_and_not_reported():
    text = filler(MB)
    assert redact_text(text) == text
    assert value_rule(text) is None
    for name in ("NOTES", "description", "TRAINER_CONFIG_DUMP"):
        assert secret_reason(name, text) is None, name


@pytest.mark.parametrize("seed", ["x", "a.", "1a-", "a=", "http.", "eyJa.", "-eyJhbGci", "-----BEGIN A", " ", "ab:cd "])
def test_megabyte_runs_of_one_pattern_give_the_former_result(seed):
    # 2 kB for the former implementation (quadratic: 64 kB took minutes, a megabyte hours), then a megabyte.
    text = seed * (2048 // len(seed))
    assert core._redact_text(text) == former_redact_text(text)
    big = seed * (MB // len(seed)) + " password=hunter2"
    assert core._redact_text(big) == seed * (MB // len(seed)) + " password=" + MASK


def _preflight(where, value):
    manifest, profile = example("sandbox")
    if where == "env":
        role(manifest, "actor").setdefault("env", []).append({"name": "NOTES", "value": value})
    else:
        manifest["job"]["description"] = value
    return preflight(manifest, profile)


@pytest.mark.parametrize(
    "where,path", [("env", "manifest.roles[0].env[5]"), ("description", "manifest.job.description")]
)
def test_a_megabyte_env_value_or_description_is_reviewed_with_the_same_findings(where, path):
    token = "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    clean = _preflight(where, filler(MB))
    assert clean["ok"] and clean["findings"] == []
    dirty = _preflight(where, filler(MB) + " " + token)
    assert [(f["id"], f["path"]) for f in dirty["findings"]] == [
        ("env-secret" if where == "env" else "inline-secret", path)
    ]
    assert token not in str(dirty["findings"])


@pytest.mark.parametrize("chunk", [1, 7, 4096, 65536, 3 * MB])
def test_megabyte_lines_are_exported_whole_whatever_the_chunks(tmp_path, chunk):
    lines = [b"short line", b"[sim-long] " + b"y" * MB, b"", b"x=1 " * 300000, b"tail without newline " * 5000]
    data = b"\n".join(lines)
    sink = LineSink(Export("p-0", "files", str(tmp_path / "p.log")))
    for start in range(0, len(data), chunk):
        sink.write(data[start : start + chunk])
    export = sink.close()
    with open(export.path, "rb") as fh:
        assert fh.read() == data + b"\n"
    assert export.lines == len(lines) and export.bytes == len(data) + 1


def test_a_secret_at_the_end_of_a_megabyte_log_line_is_masked_in_the_export(tmp_path):
    line = b"2026-12-01T01:00:00Z " + filler(MB).encode() + b" token=ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    sink = LineSink(Export("p-0", "files", str(tmp_path / "p.log")))
    for start in range(0, len(line), 65536):
        sink.write(line[start : start + 65536])
    sink.write(b"\n")
    export = sink.close()
    with open(export.path, "rb") as fh:
        text = fh.read().decode()
    assert text == line.decode().rsplit("=", 1)[0] + "=" + MASK + "\n"
    assert export.first_timestamp == "2026-12-01T01:00:00Z" and os.path.getsize(export.path) == export.bytes
