# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every filter a role or playbook uses serves more than one call site or is in the documented public filter set.

A filter with one call site in a role is that role's decision written as a filter: it belongs to the role's
Python owner (an action that returns the decision), not to the public filter namespace. The public set is the
README's "filters ..." row of the contents table.
"""

import importlib
import os
import re
from collections import Counter

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CALL = re.compile(r"\brlark\.ops\.([a-z_][a-z0-9_]*)\b")
# Single-use filters that predate the rule, each a decision still to move into its Python owner (issue #25): all
# moved; the set stays empty.
KNOWN_SINGLE_USE = set()


def public_filters(readme):
    """The filters the README's contents table lists as the public set."""
    row = next(line for line in readme.splitlines() if line.startswith("| filters `"))
    return set(re.findall(r"`([a-z_]+)`", row.split("|")[1]))


def collection_filters():
    """Every filter name the collection's filter plugins register."""
    names = set()
    for name in os.listdir(os.path.join(ROOT, "plugins", "filter")):
        if name.endswith(".py"):
            module = importlib.import_module("ansible_collections.rlark.ops.plugins.filter." + name[:-3])
            names.update(module.FilterModule().filters())
    return names


def filter_calls(filters):
    """How often roles and playbooks call each filter of ``filters``."""
    calls = Counter()
    for top in ("roles", "playbooks"):
        for base, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".yml", ".yaml")):
                    with open(os.path.join(base, name)) as handle:
                        calls.update(n for n in CALL.findall(handle.read()) if n in filters)
    return calls


def test_the_public_filter_set_is_documented_and_exists():
    with open(os.path.join(ROOT, "README.md")) as handle:
        public = public_filters(handle.read())
    assert {"render_job", "review_job", "findings_table", "query"} <= public
    assert public - collection_filters() == set()


def test_every_filter_a_role_uses_has_two_call_sites_or_is_public():
    with open(os.path.join(ROOT, "README.md")) as handle:
        public = public_filters(handle.read())
    calls = filter_calls(collection_filters())
    single = {name for name, count in calls.items() if count == 1 and name not in public}
    assert sorted(single - KNOWN_SINGLE_USE) == [], "move the decision into the role's Python owner"
    assert sorted(KNOWN_SINGLE_USE - single) == [], "moved or used again: remove these from KNOWN_SINGLE_USE"


def test_public_filters_reads_the_readme_row():
    text = "| x | y |\n| filters `a_b`, `c` | what they do with `not_this` |\n"
    assert public_filters(text) == {"a_b", "c"}
