# Copyright: rlark.ops contributors
# Apache License 2.0 (see LICENSE)
"""Findings: the one shape every refusal and review result takes.

A finding is a plain dict ``{id, severity, path, message, hint}`` so that it travels unchanged
through module results, filters, records and JSON. Ids are stable kebab-case strings documented in
``docs/findings.md``; severities are ``error`` (blocks the action) and ``warning`` (reported only).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

ERROR = "error"
WARNING = "warning"
SEVERITIES = (ERROR, WARNING)


def finding(id, message, severity=ERROR, path="", hint=""):
    """Build one finding dict; ``path`` is a dotted/indexed location such as ``spec.tasks[0].name``."""
    if severity not in SEVERITIES:
        raise ValueError("unknown severity %r" % (severity,))
    return {"id": id, "severity": severity, "path": path, "message": message, "hint": hint}


def errors(findings):
    """The findings that block the action."""
    return [f for f in findings if f.get("severity") == ERROR]


def has_errors(findings):
    return any(f.get("severity") == ERROR for f in findings)


def render(findings, title="findings"):
    """One readable paragraph-per-line text of findings, errors first, for ``msg``."""
    if not findings:
        return "no %s" % title
    ordered = sorted(findings, key=lambda f: (f.get("severity") != ERROR, f.get("path", ""), f.get("id", "")))
    lines = []
    for f in ordered:
        where = " at %s" % f["path"] if f.get("path") else ""
        line = "[%s] %s%s: %s" % (f["severity"], f["id"], where, f["message"])
        if f.get("hint"):
            line += " Hint: %s" % f["hint"]
        lines.append(line)
    n_err = len(errors(findings))
    head = "%d error(s), %d warning(s) in %s:" % (n_err, len(findings) - n_err, title)
    return "\n".join([head] + lines)
