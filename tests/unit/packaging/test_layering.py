# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layering the architecture promises, read from the import statements of plugins/.

- No plugin imports another plugin's file: shared contracts (option tables, defaults) live in
  module_utils/ or plugin_utils/, never in a module that an action or filter imports for them.
- The core does not import the runner: module_runner owns the client and maps failures for modules
  and action plugins; module_utils/ files take a client instead.
"""

import ast
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PKG = "ansible_collections.rlark.ops.plugins."
RUNNER = PKG + "module_utils.module_runner"


def imports_of(path):
    """Every absolute module name ``path`` imports (``from x import y`` gives ``x`` and ``x.y``)."""
    with open(path) as handle:
        tree = ast.parse(handle.read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update("%s.%s" % (node.module, alias.name) for alias in node.names)
    return names


def plugin_files(kind=None):
    base = os.path.join(ROOT, "plugins", kind) if kind else os.path.join(ROOT, "plugins")
    for folder, _dirs, files in os.walk(base):
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.relpath(os.path.join(folder, name), ROOT)


def offenders(files, forbidden):
    return sorted(
        "%s imports %s" % (path, name)
        for path in files
        for name in imports_of(os.path.join(ROOT, path))
        if forbidden(path, name)
    )


def test_no_plugin_imports_a_module_file():
    assert offenders(plugin_files(), lambda path, name: name.startswith(PKG + "modules.")) == []


def test_the_core_does_not_import_the_runner():
    core = [p for p in plugin_files("module_utils") if not p.endswith("module_runner.py")]
    assert offenders(core, lambda path, name: name == RUNNER or name.startswith(RUNNER + ".")) == []


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from ansible_collections.rlark.ops.plugins.modules.rlark_ckpt_gate import X\n", True),
        ("import ansible_collections.rlark.ops.plugins.modules.rlark_job\n", True),
        ("from ansible_collections.rlark.ops.plugins.modules import rlark_job\n", True),
        ("from ansible_collections.rlark.ops.plugins.module_utils import jobs\n", False),
    ],
)
def test_imports_of_sees_every_form(tmp_path, source, expected):
    path = tmp_path / "x.py"
    path.write_text(source)
    assert any(n.startswith(PKG + "modules.") for n in imports_of(str(path))) is expected
