# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Findings: the one shape every refusal and review result takes.

A finding is a plain dict ``{id, severity, path, message, hint}`` (plus optional machine-readable
keys such as ``node``/``namespace``) so that it travels unchanged through module results, filters,
records and JSON. Ids are stable kebab-case strings documented in
``docs/findings.md``; severities are ``error`` (blocks the action) and ``warning`` (reported only).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

ERROR = "error"
WARNING = "warning"
SEVERITIES = (ERROR, WARNING)


class Refused(Exception):
    """The action is unsafe or pointless; ``findings`` says why (the runner renders them)."""

    def __init__(self, message, findings):
        super().__init__(message)
        self.findings = findings


def finding(id, message, severity=ERROR, path="", hint="", **extra):
    """Build one finding dict; ``path`` is a dotted/indexed location such as ``spec.tasks[0].name``.

    ``extra`` adds machine-readable keys (e.g. ``node``, ``namespace``) so callers never parse ``message``.
    """
    if severity not in SEVERITIES:
        raise ValueError("unknown severity %r" % (severity,))
    built = {"id": id, "severity": severity, "path": path, "message": message, "hint": hint}
    built.update(extra)
    return built


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


def table(findings, title="findings"):
    """A fixed-width text table (severity, id, path, message, hint) for terminals and records."""
    if not findings:
        return "no %s" % title
    ordered = sorted(findings, key=lambda f: (f.get("severity") != ERROR, f.get("path", ""), f.get("id", "")))
    rows = [("SEVERITY", "ID", "PATH", "MESSAGE")]
    for f in ordered:
        message = f.get("message", "")
        if f.get("hint"):
            message += " Hint: " + f["hint"]
        rows.append((f.get("severity", ""), f.get("id", ""), f.get("path", "") or "-", message))
    widths = [max(len(str(r[i])) for r in rows) for i in range(3)]
    lines = ["  ".join(str(r[i]).ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows]
    n_err = len(errors(findings))
    return "%d error(s), %d warning(s) in %s:\n%s" % (n_err, len(findings) - n_err, title, "\n".join(lines))
