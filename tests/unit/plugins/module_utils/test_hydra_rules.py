# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hydra override edge cases a careless change slipped through (issue 26's mutants)."""

from ansible_collections.rlark.ops.plugins.module_utils import hydra


def test_empty_values_bare_and_quoted():
    assert [(i["key"], i["value"]) for i in hydra.parse("python t.py runner.a= runner.b='' runner.c=\"\"")] == [
        ("runner.a", ""),
        ("runner.b", ""),
        ("runner.c", ""),
    ]
    # One character is no quoted value; two quotes are the empty one.
    assert hydra.get("python t.py runner.a=x", "runner.a") == "x"


def test_without_overrides_the_new_one_goes_after_the_first_py_argument():
    assert hydra.set_override("python a.py b.py --flag", "runner.x", "1") == "python a.py ++runner.x=1 b.py --flag"
    assert hydra.set_override("bash run.sh", "runner.x", "1") is None
