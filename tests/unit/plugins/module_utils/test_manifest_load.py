# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Loading and schema validation: bad input gives one readable error with the path, never a traceback."""

import json

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import manifest as manifest_io
from ansible_collections.rlark.ops.plugins.module_utils.preflight import preflight
from migration_inputs import EXAMPLES, example


def _errors(source, kind="manifest"):
    result = manifest_io.load_and_validate(source, kind)
    assert result["ok"] is False and result["data"] is None
    return result["errors"]


def test_examples_validate():
    for name in ("sandbox", "multi-role"):
        manifest, profile = example(name)
        assert manifest_io.validate(manifest, "manifest")["ok"]
        assert manifest_io.validate(profile, "profile")["ok"]


def test_malformed_yaml_names_line(tmp_path):
    path = tmp_path / "m.yml"
    path.write_text("kind: LaunchManifest\nroles: [a, b\nversion: 1\n")
    errors = _errors(str(path))
    assert len(errors) == 1 and "not valid YAML" in errors[0]["message"] and "line" in errors[0]["message"]


def test_missing_file_and_not_a_mapping(tmp_path):
    assert "cannot read" in _errors(str(tmp_path / "absent.yml"))[0]["message"]
    path = tmp_path / "list.yml"
    path.write_text("- a\n- b\n")
    assert "mapping at the top level" in _errors(str(path))[0]["message"]
    assert "mapping" in _errors(42)[0]["message"]
    assert "mapping" in manifest_io.validate(None, "profile")["errors"][0]["message"]


def test_json_file_and_text_are_accepted(tmp_path):
    manifest, _profile = example("sandbox")
    path = tmp_path / "m.json"
    path.write_text(json.dumps(manifest))
    assert manifest_io.load_and_validate(str(path), "manifest")["ok"]
    assert manifest_io.load_and_validate(json.dumps(manifest), "manifest")["ok"]


def test_paths_for_required_unknown_and_types():
    manifest, profile = example("sandbox")
    del manifest["roles"][1]["workdir"]
    manifest["roles"][0]["image"]["bogus"] = 1
    manifest["roles"][0]["mounts"][0]["mode"] = "write"
    profile["roles"][1]["replicas"] = "2"
    paths = {e["path"] for e in manifest_io.validate(manifest, "manifest")["errors"]}
    assert paths == {"roles[1].workdir", "roles[0].image.bogus", "roles[0].mounts[0].mode"}
    assert [e["path"] for e in manifest_io.validate(profile, "profile")["errors"]] == ["roles[1].replicas"]


def test_preflight_of_unreadable_inputs_is_findings_not_exceptions(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("{{{")
    result = preflight(str(bad), str(tmp_path / "absent.yml"))
    assert result["job"] is None and result["rendered"] is None
    assert {f["id"] for f in result["findings"]} == {"manifest-invalid", "profile-invalid"}
    assert "Traceback" not in result["summary"]


def test_preflight_hands_on_the_validated_records_only_when_ok():
    manifest, profile = example("sandbox")
    result = preflight(manifest, profile)
    assert result["ok"] is True
    assert result["manifest"] == manifest_io.load_and_validate(manifest, "manifest")["data"] == manifest
    assert result["profile"] == manifest_io.load_and_validate(profile, "profile")["data"] == profile
    refused = preflight(profile, manifest)
    assert refused["ok"] is False and refused["manifest"] is None and refused["profile"] is None


def test_wrong_kind_is_rejected():
    manifest, profile = example("sandbox")
    result = preflight(profile, manifest)
    assert {f["id"] for f in result["findings"]} == {"manifest-invalid", "profile-invalid"}


@pytest.mark.parametrize("name", ["launch_manifest.schema.json", "deployment_profile.schema.json"])
def test_schemas_are_valid_2020_12_with_descriptions(name):
    from jsonschema import Draft202012Validator

    with open("%s/../schemas/%s" % (EXAMPLES, name)) as handle:
        schema = json.load(handle)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"].endswith("2020-12/schema") and schema["additionalProperties"] is False
    undocumented = [k for k, v in schema["properties"].items() if "description" not in v and "$ref" not in v]
    assert undocumented == []
