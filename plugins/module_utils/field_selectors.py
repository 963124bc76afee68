# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes field selectors for Jobs: the server filters what it can, the rest is matched here.

RLark's CRDs declare no ``selectableFields``, so the API server accepts only ``metadata.name`` and
``metadata.namespace`` in a Job list's ``fieldSelector``; anything else (``status.phase=Running``,
``spec.stopped=true``) would be a 400. Those terms are matched on the listed Jobs with the same
semantics: exact string comparison, ``=``/``==``/``!=``, a missing field compares as the empty string.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

SERVER_FIELDS = ("metadata.name", "metadata.namespace")
TERM = re.compile(r"^\s*([A-Za-z0-9_.\-/]+)\s*(==|!=|=)\s*(.*?)\s*$")


class SelectorError(ValueError):
    """A selector that cannot be parsed; the message names it."""


def parse(selectors):
    """``[(field, negated, value)]`` from a list of selector strings (each may hold comma-separated terms)."""
    terms = []
    for selector in selectors or []:
        for raw in str(selector).split(","):
            if not raw.strip():
                continue
            match = TERM.match(raw)
            if not match:
                raise SelectorError(
                    "field_selectors: %r is not <field>=<value>, <field>==<value> or <field>!=<value> "
                    "(for example status.phase=Running)" % raw.strip()
                )
            field, op, value = match.groups()
            terms.append((field, op == "!=", value))
    return terms


def split(terms):
    """(server ``fieldSelector`` string or None, terms to match locally)."""
    server = [t for t in terms if t[0] in SERVER_FIELDS]
    local = [t for t in terms if t[0] not in SERVER_FIELDS]
    text = ",".join("%s%s%s" % (f, "!=" if neg else "=", v) for f, neg, v in server)
    return text or None, local


def field_value(obj, field):
    """The field as the API server would compare it: a string, ``true``/``false``, "" when missing."""
    value = obj
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def matches(obj, terms):
    return all((field_value(obj, f) != v) if neg else (field_value(obj, f) == v) for f, neg, v in terms)
