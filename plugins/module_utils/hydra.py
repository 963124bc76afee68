# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hydra command-line overrides in a run script (and, re-exported, RLinf's ``global_step_N`` names).

The one parser every reader and writer of overrides uses (checkpoint location, resume copy, review
of the copy, records), so a form one of them understands is never missed by another. An override is
a whitespace-separated shell word ``[+|++|~]dotted.key=value``, optionally quoted as a whole
(``'++runner.resume_dir=/x'``) or in its value (``runner.resume_dir="/x"``): the shell hands Hydra
the same word either way. Hydra lets the last override of a key win.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from shlex import quote as shell_quote

from ansible_collections.rlark.ops.plugins.module_utils.step_names import (  # re-exported: see __all__
    is_step_like,
    step_dir,
    step_name,
    step_number,
)

KEY = r"[A-Za-z_][\w-]*(?:\.[\w-]+)+"
PREFIX = r"\+\+|\+|~"
# One shell word: '[+]key=value' or "[+]key=value" quoted as a whole, or [+]key=value with a quoted or bare value.
TOKEN = re.compile(
    r"(?:^|(?<=\s))(?:"
    r"'(?P<sp>%(p)s)?(?P<sk>%(k)s)=(?P<sv>[^']*)'"
    r'|"(?P<dp>%(p)s)?(?P<dk>%(k)s)=(?P<dv>[^"]*)"'
    r"""|(?P<p>%(p)s)?(?P<k>%(k)s)=(?P<v>"[^"]*"|'[^']*'|[^\s'";|&)]*)"""
    r")(?=$|[\s;|&)])" % {"p": PREFIX, "k": KEY}
)
# Where a new override may go when the script has none: after the first ``*.py`` argument.
PY_SCRIPT = re.compile(r"""(?:^|(?<=\s))\S+\.py(?=\s|$)""")


def _unquote(value):
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def parse(script):
    """Every override in ``script``, in order: ``[{key, value, prefix, start, end}]``."""
    out = []
    for match in TOKEN.finditer(script or ""):
        form = "s" if match.group("sk") else "d" if match.group("dk") else ""
        value = match.group(form + "v")
        out.append(
            {
                "key": match.group(form + "k"),
                "value": value if form else _unquote(value),
                "prefix": match.group(form + "p") or "",
                "start": match.start(),
                "end": match.end(),
            }
        )
    return out


def overrides(script, prefix=""):
    """``{key: value}`` of the overrides whose key starts with ``prefix``; the last one wins, a ``~`` deletes."""
    out = {}
    for item in parse(script):
        if not item["key"].startswith(prefix):
            continue
        if item["prefix"] == "~":
            out.pop(item["key"], None)
        else:
            out[item["key"]] = item["value"]
    return out


def get(script, key):
    """The value Hydra ends up with for ``key`` from the script's overrides, or None."""
    return overrides(script, key).get(key)


def _drop(script, spans):
    """``script`` without the given spans, each together with the blanks in front of it."""
    out, pos = "", 0
    for start, end in spans:
        cut = start
        while cut > pos and script[cut - 1] in " \t":
            cut -= 1
        out += script[pos:cut]
        pos = end
    return out + script[pos:]


def set_override(script, key, value):
    """``script`` with exactly one ``++key=value`` (add or override), or None when no place fits.

    The first earlier override of ``key`` (any form) is replaced in place and later ones are dropped;
    otherwise the override goes after the script's last override, else after its first ``*.py``.
    """
    token = shell_quote("++%s=%s" % (key, value))
    script = script or ""
    found = [item for item in parse(script) if item["key"] == key]
    if found:
        first = found[0]
        rest = _drop(script[first["end"] :], [(i["start"] - first["end"], i["end"] - first["end"]) for i in found[1:]])
        return script[: first["start"]] + token + rest
    anchors = parse(script) or [{"end": m.end()} for m in PY_SCRIPT.finditer(script)][:1]
    if not anchors:
        return None
    end = anchors[-1]["end"]
    return script[:end] + " " + token + script[end:]


def strip_override(script, key):
    """``(script without any override of key, [the values removed])``."""
    script = script or ""
    found = [item for item in parse(script) if item["key"] == key]
    return _drop(script, [(i["start"], i["end"]) for i in found]), [i["value"] for i in found]


__all__ = [
    "get",
    "is_step_like",
    "overrides",
    "parse",
    "set_override",
    "step_dir",
    "step_name",
    "step_number",
    "strip_override",
]
