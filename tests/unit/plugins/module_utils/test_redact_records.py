# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Redaction: secrets planted in env, config and overrides never reach a record or a filter result."""

import json
import os

import pytest
import yaml
from ansible_collections.rlark.ops.plugins.filter import migration as filters
from ansible_collections.rlark.ops.plugins.filter import reporting
from ansible_collections.rlark.ops.plugins.module_utils import records
from ansible_collections.rlark.ops.plugins.module_utils.preflight import preflight
from ansible_collections.rlark.ops.plugins.module_utils.redact import MASK, is_secret_name, redact, redact_text
from migration_inputs import example, role

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "-----END RSA PRIVATE KEY-----"
)
SECRETS = {
    "hf": "hf_QmVyeVNlY3JldFRva2VuVmFsdWUxMjM0NTY3",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.dGhpcy1pcy1hLXNpZ25hdHVyZQ",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "wandb": "0123abcdXYZ9876wandbKeyValue55aa",
    "db_password": "Sup3rS3cretPw",
    "git_token": "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
    "bearer": "abcDEF123ghiJKL456mnoPQR",
    "high_entropy": "Xk29fJq8Lm3Np7Rt5Vw1Yz4Bc6Dh0Gs2",
}


def planted():
    manifest, profile = example("sandbox")
    actor = role(manifest, "actor")
    actor["env"] += [
        {"name": "HF_TOKEN", "value": SECRETS["hf"]},
        {"name": "SESSION_BLOB", "value": SECRETS["jwt"]},
        {"name": "AWS_ACCESS_KEY_ID", "value": SECRETS["aws"]},
        {"name": "AWS_SECRET_ACCESS_KEY", "value": SECRETS["aws_secret"]},
        {"name": "TLS_KEY_PEM", "value": PEM},
        {"name": "OPAQUE", "value": SECRETS["high_entropy"]},
    ]
    actor["checks"].append("curl -H 'Authorization: Bearer %s' http://tracker/health" % SECRETS["bearer"])
    manifest["hydra"]["overrides"] += [
        {"override": "wandb.api_key=%s" % SECRETS["wandb"]},
        {"override": "+db.url=postgres://trainer:%s@db:5432/runs" % SECRETS["db_password"]},
    ]
    manifest["code"]["repo"] = "https://x-access-token:%s@github.com/RLinf/RLinf" % SECRETS["git_token"]
    return manifest, profile


def assert_clean(text, where):
    for name, secret in SECRETS.items():
        assert secret not in text, "%s leaked into %s" % (name, where)
    assert "MIIEowIBAAKCAQEA" not in text, "PEM body leaked into %s" % where


def dump(data):
    return json.dumps(data, default=str, sort_keys=True)


def test_no_planted_secret_reaches_records_or_filter_outputs(tmp_path):
    manifest, profile = planted()
    result = preflight(manifest, profile)
    assert result["job"] is None
    ids = {f["id"] for f in result["findings"]}
    assert {"env-secret", "inline-secret"} <= ids
    assert_clean(dump(result), "preflight result")
    paths = records.write_preflight_records(str(tmp_path), result)
    paths.append(records.write_record(str(tmp_path), "demo", "config", {"manifest": manifest, "profile": profile}))
    for path in paths:
        with open(path) as handle:
            assert_clean(handle.read(), path)
    assert_clean(dump(filters.preflight(manifest, profile)), "filter preflight")
    assert_clean(dump(filters.review_job(result["rendered"], manifest, profile)), "filter review_job")
    assert_clean(reporting.findings_table(result["findings"]), "findings_table")
    assert_clean(dump(reporting.redact({"manifest": manifest, "profile": profile})), "filter redact")
    assert_clean(reporting.stable_yaml(manifest), "stable_yaml")
    assert_clean(dump(filters.validate_manifest(manifest)), "validate_manifest")
    assert_clean(dump(filters.load_manifest(manifest)), "load_manifest")
    assert_clean(dump(filters.render_job(manifest, profile)), "render_job")


def test_every_planted_env_secret_is_an_error_finding():
    manifest, profile = planted()
    env_paths = {f["path"] for f in preflight(manifest, profile)["findings"] if f["id"] == "env-secret"}
    assert len(env_paths) == 6


def test_unknown_key_errors_do_not_echo_secret_values():
    manifest, _profile = example("sandbox")
    manifest["api_token"] = SECRETS["hf"]
    with pytest.raises(Exception) as info:
        filters.load_manifest(manifest)
    assert "api_token" in str(info.value) and SECRETS["hf"] not in str(info.value)


@pytest.mark.parametrize(
    "name,secret",
    [("HF_TOKEN", True), ("WANDB_API_KEY", True), ("db_password", True), ("clientSecret", True),
     ("AWS_SECRET_ACCESS_KEY", True), ("TOKENIZERS_PARALLELISM", False), ("sshPublicKey", False),
     ("secretKeyRef", False), ("password_file", False), ("RLARK_TASK_ROLE", False), ("PWD", False)],
)  # fmt: skip
def test_secret_names(name, secret):
    assert is_secret_name(name) is secret


def test_shapes_kept_and_masked():
    digest = "sha256:" + "ab" * 32
    commit = "0f3c2a9d41b7e6c58a2d9e0b1c4f7a6d3e2b1c0a"
    keep = "runner.logger.log_path=/data/rlinf/logs %s %s tokenizer=/models/tok" % (digest, commit)
    assert redact_text(keep) == keep
    assert redact_text("password=hunter2 next") == "password=%s next" % MASK
    assert redact_text("https://u:p4ss@h/x") == "https://u:%s@h/x" % MASK
    assert redact({"env": [{"name": "X_TOKEN", "value": "v"}, {"name": "X", "value": "v"}]}) == {
        "env": [{"name": "X_TOKEN", "value": MASK}, {"name": "X", "value": "v"}]
    }
    assert redact({"secret": {"name": "wandb", "key": "api-key"}}) == {"secret": {"name": "wandb", "key": "api-key"}}
    assert redact({"credentials": {"user": "a", "pw": "b"}}) == {"credentials": {"user": MASK, "pw": MASK}}


def test_records_layout_and_no_overwrite(tmp_path):
    stamp = records.utc_stamp()
    path = records.write_record(str(tmp_path), "demo", "stop", {"step": 3, "token": "abc"}, stamp)
    assert path == os.path.join(str(tmp_path), "demo", stamp, "stop.yml")
    with open(path) as handle:
        doc = yaml.safe_load(handle)
    assert {k: doc[k] for k in ("record", "job", "timestamp", "run_id", "data")} == {
        "record": "stop", "job": "demo", "timestamp": stamp, "run_id": stamp, "data": {"step": 3, "token": MASK}
    }  # fmt: skip
    with pytest.raises(ValueError):
        records.write_record(str(tmp_path), "demo", "stop", {}, stamp)
    with pytest.raises(ValueError):
        records.write_record(str(tmp_path), "../escape", "stop", {}, stamp)
    with pytest.raises(ValueError):
        records.write_record(str(tmp_path), "demo", "../x", {}, stamp)
    assert [p.name for p in (tmp_path / "demo" / stamp).iterdir()] == ["stop.yml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_index", "demo"]


def test_preflight_records_hold_the_reviewed_job(tmp_path):
    manifest, profile = example("sandbox")
    result = preflight(manifest, profile)
    paths = records.write_preflight_records(str(tmp_path), result, "20260101T000000Z")
    assert [os.path.basename(p) for p in paths] == ["preflight.yml", "job.yml"]
    # Both in the Job's own run directory (only refused inputs go to invalid-inputs/).
    assert {os.path.dirname(p) for p in paths} == {str(tmp_path / result["job_name"] / "20260101T000000Z")}
    with open(paths[1]) as handle:
        assert yaml.safe_load(handle) == result["job"]
    with open(paths[0]) as handle:
        report = yaml.safe_load(handle)["data"]
    assert report["manifest_version"] == manifest["version"] and report["profile_version"] == profile["version"]
    assert report["ok"] is True and report["findings"] == []


def test_secret_reference_is_the_clean_way():
    manifest, profile = example("sandbox")
    role(manifest, "actor")["env"].append({"name": "WANDB_API_KEY", "secret": {"name": "wandb", "key": "api-key"}})
    result = preflight(manifest, profile)
    assert result["ok"] and result["findings"] == []
    env = result["job"]["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}} in env
