# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Roles and playbooks wire Python owners: their Jinja stays short and a refusal never runs a lookup.

A decision written as a long Jinja expression is a second copy of what the Python core decides, and
cannot be unit-tested; a lookup inside a ``fail`` task's vars runs (and may wait) only to word a refusal.
An expression is measured with its whitespace collapsed, braces included.
"""

import os
import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MAX_EXPRESSION = 160
EXPRESSION = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
BARE_KEYS = ("when", "that", "failed_when", "changed_when", "until")


def yaml_files():
    for top in ("roles", "playbooks"):
        for base, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if name.endswith((".yml", ".yaml")):
                    yield os.path.relpath(os.path.join(base, name), ROOT)


def long_expressions(text):
    """``(first line, length)`` of each templated or bare (``when:`` style) expression over the limit."""
    found = []
    for match in EXPRESSION.finditer(text):
        length = len(" ".join(match.group(0).split()))
        if length > MAX_EXPRESSION:
            found.append((text.count("\n", 0, match.start()) + 1, length))
    for node in _mappings(yaml.safe_load(text)):
        for key in BARE_KEYS:
            values = node.get(key)
            for value in values if isinstance(values, list) else [values]:
                if isinstance(value, str) and "{{" not in value and len(" ".join(value.split())) > MAX_EXPRESSION:
                    found.append((_line_of(text, value), len(" ".join(value.split()))))
    return found


def _mappings(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _mappings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _mappings(value)


def _line_of(text, value):
    head = value.strip().splitlines()[0].strip()
    return text.count("\n", 0, max(text.find(head), 0)) + 1


def fail_task_lookups(text):
    """Names of ``fail`` tasks whose message or vars run a lookup."""
    bad = []
    for node in _mappings(yaml.safe_load(text)):
        fail = node.get("ansible.builtin.fail") or node.get("fail")
        if isinstance(fail, dict) and re.search(r"\blookup\(|\bquery\(", yaml.safe_dump([fail, node.get("vars")])):
            bad.append(node.get("name"))
    return bad


def test_no_long_expression_in_roles_and_playbooks():
    too_long = []
    for path in yaml_files():
        with open(os.path.join(ROOT, path)) as handle:
            for line, length in long_expressions(handle.read()):
                too_long.append("%s:%d: %d characters" % (path, line, length))
    assert too_long == [], "move the decision into its Python owner (or a short filter call)"


def test_no_fail_task_runs_a_lookup():
    bad = []
    for path in yaml_files():
        with open(os.path.join(ROOT, path)) as handle:
            bad.extend("%s: %s" % (path, name) for name in fail_task_lookups(handle.read()))
    assert bad == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ('- x: "{{ %s }}"\n' % ("a" * 154), []),
        ('- x: "{{ %s }}"\n' % ("a" * 155), [(1, 161)]),
        ("- when: %s\n" % ("b " * 81), [(1, 161)]),
        ("- when:\n    - short\n    - %s\n" % ("c" * 161), [(3, 161)]),
    ],
)
def test_long_expressions_measures_templated_and_bare(text, expected):
    assert long_expressions(text) == expected


def test_fail_task_lookups_sees_msg_and_vars():
    text = (
        "- name: a\n  ansible.builtin.fail:\n    msg: \"{{ lookup('x') }}\"\n"
        '- name: b\n  ansible.builtin.fail:\n    msg: "{{ y }}"\n  vars:\n    y: "{{ query(\'z\') }}"\n'
        "- name: c\n  ansible.builtin.fail:\n    msg: plain\n"
    )
    assert fail_task_lookups(text) == ["a", "b"]
