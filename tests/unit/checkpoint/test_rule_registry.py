# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checkpoint gate's rule registry: every id its rules emit is registered once, with the severity
docs/findings.md gives it, and every registered rule really runs."""

import ast
import os
import re

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import payloads, rules, structure

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PACKAGE = os.path.join(ROOT, "plugins", "module_utils", "checkpoint")
# checkpoint code that is not the gate: where a Job writes, and its directory-reuse guard (review findings)
NOT_THE_GATE = ("dir_guard.py", "location.py")


def documented_severity():
    with open(os.path.join(ROOT, "docs", "findings.md")) as handle:
        sections = re.split(r"^### ", handle.read(), flags=re.M)[1:]
    out = {}
    for section in sections:
        name = re.match(r"`([a-z0-9-]+)`", section).group(1)
        out[name] = re.search(r"^- Severity: (error|warning)", section, re.M).group(1)
    return out


def emitted_in_package():
    """Id literals passed to ``problem()``/``finding()`` in the checkpoint package."""
    found = set()
    for name in os.listdir(PACKAGE):
        if not name.endswith(".py") or name in NOT_THE_GATE:
            continue
        with open(os.path.join(PACKAGE, name)) as handle:
            tree = ast.parse(handle.read())
        for call in ast.walk(tree):
            func = getattr(call, "func", None)
            callee = getattr(func, "attr", None) or getattr(func, "id", None)
            named = isinstance(call, ast.Call) and callee in ("problem", "finding") and call.args
            if named and isinstance(call.args[0], ast.Constant):
                found.add(call.args[0].value)
    return found


def test_every_registered_id_is_documented_with_its_severity():
    docs = documented_severity()
    for rule_id, severity, _rule in rules.ALL:
        assert docs.get(rule_id) == severity, (rule_id, severity, docs.get(rule_id))


def test_the_registry_holds_exactly_the_ids_the_package_emits():
    assert {row[0] for row in rules.ALL} == emitted_in_package()


def test_each_id_has_one_severity():
    severities = {}
    for rule_id, severity, _rule in rules.ALL:
        assert severities.setdefault(rule_id, severity) == severity, rule_id


def test_every_registered_rule_runs():
    """A row whose function is not called by the gate would document a rule that never fires."""
    structure_rules = set(structure.PIPELINE) | {structure.quiet_period}
    for _id, _severity, rule in structure.RULES:
        assert rule in structure_rules, rule.__name__
    payload_checks = set(payloads.CHECKS.values()) | {payloads.check_integrity_list, payloads.guarded}
    for _id, _severity, rule in payloads.RULES:
        assert rule in payload_checks, rule.__name__
