# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The log sources have one home (joblogs.SOURCES); what documents or takes them follows it."""

import yaml
from ansible_collections.rlark.ops.plugins.doc_fragments.log_source import ModuleDocFragment
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import LOG_SOURCE_SPEC, SOURCES


def test_the_documented_choices_are_the_sources():
    modules = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    lookup = yaml.safe_load(ModuleDocFragment.LOOKUP)["options"]
    assert modules["log_source"]["choices"] == lookup["source"]["choices"] == list(SOURCES)
    assert LOG_SOURCE_SPEC["log_source"]["choices"] == list(SOURCES)


def test_the_fragment_documents_every_log_source_option():
    documented = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert sorted(documented) == sorted(LOG_SOURCE_SPEC)
    for name, spec in LOG_SOURCE_SPEC.items():
        assert documented[name]["type"] == spec["type"]
        assert documented[name].get("default") == spec.get("default"), name
