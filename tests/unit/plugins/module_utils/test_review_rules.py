# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""review/rules.py: the registry says exactly which check emits which id with which severity.

Read from the sources of the registered checks' modules, so a new ``finding(...)`` in a check that
is not in the table (or a row whose check no longer emits its id) fails here.
"""

import ast
import inspect

from ansible_collections.rlark.ops.plugins.module_utils import findings, naming, review, selectors
from ansible_collections.rlark.ops.plugins.module_utils.review import (
    consistency,
    job_rules,
    legacy,
    mount_rules,
    pod_rules,
    record_rules,
    rules,
    secret_rules,
)

CHECK_MODULES = (review, consistency, job_rules, legacy, mount_rules, pod_rules, record_rules, secret_rules)

SEVERITIES = {"ERROR": findings.ERROR, "WARNING": findings.WARNING}
PREFIXES = ("manifest", "profile")  # input_findings' "%s-invalid" % prefix


def _severities(node):
    if node is None:
        return {findings.ERROR}
    if isinstance(node, ast.IfExp):
        return _severities(node.body) | _severities(node.orelse)
    return {SEVERITIES[node.id]}


def _ids(node):
    if isinstance(node, ast.Constant):
        return {node.value}
    return {node.left.value % prefix for prefix in PREFIXES}


def emitted(module, only=None):
    """``{(id, severity, "module.function")}`` of every ``finding(...)`` in ``module``'s top-level functions."""
    out = set()
    for fn in ast.parse(inspect.getsource(module)).body:
        if not isinstance(fn, ast.FunctionDef) or (only and fn.name != only):
            continue
        for call in ast.walk(fn):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "finding":
                severity = call.args[2] if len(call.args) > 2 else None
                severity = next((k.value for k in call.keywords if k.arg == "severity"), severity)
                for rule_id in _ids(call.args[0]):
                    for one in _severities(severity):
                        out.add((rule_id, one, "%s.%s" % (module.__name__.rsplit(".", 1)[1], fn.name)))
    return out


def test_the_registry_is_what_the_checks_emit():
    sources = set()
    for module in CHECK_MODULES:
        sources |= emitted(module)
    sources |= emitted(naming, only="name_findings") | emitted(selectors, only="static_selector_findings")
    registered = {
        (rule_id, severity, "%s.%s" % (check.__module__.rsplit(".", 1)[1], check.__name__))
        for rule_id, severity, check in rules.RULES
    }
    assert registered == sources
    assert len(rules.RULES) == len(registered), "a row is listed twice"


def test_the_registry_covers_every_check_module():
    modules = {check.__module__ for _id, _severity, check in rules.RULES}
    assert {m.__name__ for m in CHECK_MODULES + (naming, selectors)} == modules


def test_a_conditional_severity_has_a_row_each():
    assert rules.severities()["mount-shadows-image"] == {"error", "warning"}
    assert rules.severities()["signals-failure-missing"] == {"warning"}
