# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The antsibull-docs docsite has a page for every module, filter, lookup, role entry point and event source."""

import importlib
import os

import yaml
from conftest import ROOT


def names(folder, suffix=".py"):
    path = os.path.join(ROOT, folder)
    return sorted(n[: -len(suffix)] for n in os.listdir(path) if n.endswith(suffix) and not n.startswith("_"))


def filter_names():
    out = set()
    for module in names("plugins/filter"):
        plugin = importlib.import_module("ansible_collections.rlark.ops.plugins.filter." + module)
        out.update(plugin.FilterModule().filters())
    return sorted(out)


def page(docsite, name):
    path = os.path.join(docsite, name + ".html")
    assert os.path.isfile(path), "no page %s.html in the docsite" % name
    with open(path) as fh:
        return fh.read()


def test_every_module_lookup_and_event_source_has_a_page(docsite):
    index = page(docsite, "index")
    expected = [m + "_module" for m in names("plugins/modules")]
    expected += [m + "_lookup" for m in names("plugins/lookup")]
    expected += [m + "_event_source" for m in names("extensions/eda/plugins/event_source")]
    assert len(expected) >= 13
    for name in expected:
        assert "Synopsis" in page(docsite, name), name
        assert 'href="%s.html' % name in index, "the index does not link %s" % name


def test_every_filter_has_a_page(docsite):
    filters = filter_names()
    assert "render_job" in filters and "redact" in filters
    missing = [f for f in filters if not os.path.isfile(os.path.join(docsite, f + "_filter.html"))]
    assert missing == [], "filters without a docsite page: %s" % missing


def test_every_role_entry_point_has_its_section(docsite):
    roles = sorted(os.listdir(os.path.join(ROOT, "roles")))
    assert len(roles) >= 9
    for role in roles:
        with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as fh:
            entry_points = yaml.safe_load(fh)["argument_specs"]
        html = page(docsite, role + "_role")
        for entry_point, spec in entry_points.items():
            anchor = 'id="ansible-collections-rlark-ops-%s-role-entrypoint-%s"' % (role.replace("_", "-"), entry_point)
            assert anchor in html, "role %s: no section for entry point %s" % (role, entry_point)
            for option in spec.get("options") or {}:
                assert "parameter-%s--%s" % (entry_point, option) in html, "role %s: option %s" % (role, option)


def test_event_source_page_lists_every_option(docsite):
    html = page(docsite, "rlark_jobs_event_source")
    for option in ("kubeconfig", "label_selector", "checkpoints", "object_storage", "gate_options"):
        assert "<code" in html and ">%s<" % option in html, option
