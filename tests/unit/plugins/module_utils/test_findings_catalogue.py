# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/findings.md documents exactly the finding ids the collection can emit.

The ids are read from the sources, not from a list: every id literal passed to ``finding()`` (or
to the checkpoint gate's ``problem()``, which builds findings) anywhere in ``plugins/``, and every
finding dict a role builds in YAML. An id argument that is not statically known fails the test, so
a new way of building ids cannot slip past it.
"""

import ast
import os
import re

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.findings import finding

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
# Functions whose first argument (or ``id=``) is a finding id.
ID_HELPERS = ("finding", "problem")
# ``"%s-invalid" % prefix`` in review.py: the prefixes it is called with.
FORMATTED_IDS = {"%s-invalid": ("manifest", "profile"), "%s-missing": ("manifest", "profile")}
YAML_ID = re.compile(r"""['"]id['"]\s*:\s*['"]([a-z0-9-]+)['"]""")


def _python_files(top):
    for base, _dirs, files in os.walk(os.path.join(ROOT, top)):
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(base, name)


def _callee(call):
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _ids_of(node, where):
    """The ids an id argument can take, or raise if they are not statically known."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _ids_of(node.body, where) | _ids_of(node.orelse, where)
    formatted = isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant)
    if formatted and node.left.value in FORMATTED_IDS:
        return {node.left.value % p for p in FORMATTED_IDS[node.left.value]}
    raise AssertionError("%s: finding id %s is not statically known" % (where, ast.unparse(node)))


def emitted_ids():
    """``{id: [where]}`` over plugins/ (Python) and roles/ + playbooks/ (YAML)."""
    found = {}
    for path in _python_files("plugins"):
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        helpers = {  # a helper's own ``id`` parameter passed on is not an id literal
            id(call)
            for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef) and fn.name in ID_HELPERS
            for call in ast.walk(fn)
            if isinstance(call, ast.Call)
        }
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call) or _callee(call) not in ID_HELPERS or id(call) in helpers:
                continue
            arg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "id"), None)
            where = "%s:%d" % (os.path.relpath(path, ROOT), call.lineno)
            assert arg is not None, "%s: finding without id" % where
            for one in _ids_of(arg, where):
                found.setdefault(one, []).append(where)
    for top in ("roles", "playbooks"):
        for base, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".yml", ".yaml")):
                    with open(os.path.join(base, name)) as handle:
                        for one in YAML_ID.findall(handle.read()):
                            found.setdefault(one, []).append(os.path.relpath(os.path.join(base, name), ROOT))
    return found


def documented_ids():
    with open(os.path.join(ROOT, "docs", "findings.md")) as handle:
        headings = re.findall(r"^### `([a-z0-9-]+)`", handle.read(), re.M)
    assert len(headings) == len(set(headings)), "an id is documented twice"
    return set(headings)


def test_docs_list_exactly_the_emitted_ids():
    emitted, documented = emitted_ids(), documented_ids()
    undocumented = {i: emitted[i] for i in set(emitted) - documented}
    assert undocumented == {}, "ids emitted but not documented in docs/findings.md"
    assert documented - set(emitted) == set(), "documented ids nothing can emit"


def test_the_scan_sees_every_source_of_ids():
    """Guards the scan itself: one known id from each source file kind."""
    emitted = emitted_ids()
    for known in ("records-not-linked", "node-insufficient-resources", "job-delete-pvc", "hostpath-missing"):
        assert known in emitted
    assert {"resume-line-missing", "resume-wrong-dir"} <= set(emitted)  # conditional expression
    assert {"manifest-invalid", "profile-missing"} <= set(emitted)  # "%s-invalid" % prefix
    assert {"truncated-payload", "missing-entries"} <= set(emitted)  # the gate's problem()
    assert "resume-override" in emitted  # built in roles/resume


def documented_severities():
    """``{id: {severity, ...}}`` from each section's ``- Severity:`` line (its words error/warning)."""
    with open(os.path.join(ROOT, "docs", "findings.md")) as handle:
        sections = re.split(r"^### ", handle.read(), flags=re.M)[1:]
    out = {}
    for section in sections:
        name = section.split("\n", 1)[0].strip("`")
        line = re.search(r"^- Severity: (.*)$", section, re.M).group(1)
        out[name] = set(re.findall(r"\b(error|warning)\b", line))
    return out


def registries():
    """The rule registries as ``(id, severity, check)`` rows: the review's, the selector proof's and the
    checkpoint gate's (``checkpoint.rules.ALL``)."""
    from ansible_collections.rlark.ops.plugins.module_utils import selectors
    from ansible_collections.rlark.ops.plugins.module_utils.review import rules as review_rules

    proof = selectors.PLACEMENT_RULES + selectors.DRIFT_RULES
    tables = {
        "review": review_rules.RULES,
        "selector-proof": tuple((rule_id, one, check) for rule_id, many, check in proof for one in many),
    }
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import rules as checkpoint_rules

    tables["checkpoint"] = checkpoint_rules.ALL
    return tables


@pytest.mark.parametrize("registry", sorted(registries()))
def test_docs_give_each_registered_rule_its_severity(registry):
    documented = documented_severities()
    for rule_id, severity, check in registries()[registry]:
        assert rule_id in documented, "%s (%s) is not in docs/findings.md" % (rule_id, check.__name__)
        assert severity in documented[rule_id], "%s: docs/findings.md does not say %s" % (rule_id, severity)


def test_every_documented_id_has_severity_rule_and_fix():
    with open(os.path.join(ROOT, "docs", "findings.md")) as handle:
        sections = re.split(r"^### ", handle.read(), flags=re.M)[1:]
    for section in sections:
        name = section.split("\n", 1)[0]
        assert re.search(r"^- Severity: (error|warning)", section, re.M), name
        assert "\n- Rule: " in section and "\n- Fix: " in section, name


def test_an_unknown_id_expression_is_refused():
    tree = ast.parse("finding(kind + '-x', 'm')")
    with pytest.raises(AssertionError, match="not statically known"):
        _ids_of(tree.body[0].value.args[0], "t.py:1")


def test_finding_takes_machine_readable_extra_keys():
    f = finding("node-offline", "m", path="p", node="h100-02", namespace="rlark-h100")
    assert f == {
        "id": "node-offline",
        "severity": "error",
        "path": "p",
        "message": "m",
        "hint": "",
        "node": "h100-02",
        "namespace": "rlark-h100",
    }
    assert set(finding("x", "m")) == {"id", "severity", "path", "message", "hint"}
