"""Every module's DOCUMENTATION, EXAMPLES and RETURN are YAML that parses
(ansible-doc and ansible-lint read them; a parse error hides the module)."""

import ast
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODULES = os.path.join(ROOT, "plugins", "modules")


def doc_strings(path):
    with open(path) as fh:
        tree = ast.parse(fh.read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in ("DOCUMENTATION", "EXAMPLES", "RETURN"):
                    out[target.id] = node.value.value
    return out


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(MODULES) if n.endswith(".py")))
def test_module_docs_parse(name):
    docs = doc_strings(os.path.join(MODULES, name))
    assert set(docs) == {"DOCUMENTATION", "EXAMPLES", "RETURN"}, name
    parsed = {key: yaml.safe_load(text) for key, text in docs.items()}
    assert parsed["DOCUMENTATION"]["module"] == name[:-3]
    assert isinstance(parsed["EXAMPLES"], list) and parsed["EXAMPLES"]
