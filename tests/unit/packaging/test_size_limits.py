# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files in plugins/, sandbox/ and extensions/ stay <= 500 lines and functions <= 80 lines (data tables excepted).

A data table is a module-level assignment of a literal: the DOCUMENTATION/EXAMPLES/RETURN strings of
a module, a dict of messages, a tuple of field names. It is excluded from its file's count; code is not.
"""

import ast
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
# No file or function is exempt: a new entry needs a reason here and in the review.
KNOWN_EXCEPTIONS = {}


def _is_literal(node):
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def measure(source):
    """``(code lines, {function: lines})``: top-level literal assignments do not count as code."""
    tree = ast.parse(source)
    table_lines = sum(
        node.end_lineno - node.lineno + 1
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _is_literal(node.value)
    )
    functions = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[node.name] = max(functions.get(node.name, 0), node.end_lineno - node.lineno + 1)
    return len(source.splitlines()) - table_lines, functions


# The collection, and the code it is tested and run with: the sandbox (rlark-sim, sandboxctl) and the
# EDA and molecule extensions.
MEASURED = ("plugins", "sandbox", "extensions")


def plugin_files():
    for top in MEASURED:
        for base, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(base, name), ROOT)


def test_plugin_files_and_functions_stay_small():
    too_big = []
    for path in plugin_files():
        with open(os.path.join(ROOT, path)) as handle:
            lines, functions = measure(handle.read())
        if lines > MAX_FILE_LINES and path not in KNOWN_EXCEPTIONS:
            too_big.append("%s: %d lines of code" % (path, lines))
        for name, length in sorted(functions.items()):
            if (
                length > MAX_FUNCTION_LINES
                and path not in KNOWN_EXCEPTIONS
                and "%s::%s" % (path, name) not in KNOWN_EXCEPTIONS
            ):
                too_big.append("%s::%s: %d lines" % (path, name, length))
    assert too_big == [], "split these (one concern per file, small functions)"


@pytest.mark.parametrize(
    "source, lines, longest",
    [
        ('DOC = """\n' + "x\n" * 600 + '"""\n\n\ndef f():\n    return 1\n', 4, 2),
        ("X = compute()\n" * 501, 501, None),
        ("def f():\n" + "    a = 1\n" * 81, 82, 82),
    ],
)
def test_measure_excepts_data_tables_only(source, lines, longest):
    code, functions = measure(source)
    assert code == lines
    assert max(functions.values(), default=None) == longest
