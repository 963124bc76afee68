# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rlark.ops filters, directly and through a real ansible-playbook run (data tagging in 2.19)."""

import json
import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.rlark.ops.plugins.filter import migration as filters
from ansible_collections.rlark.ops.plugins.filter import reporting

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
EXAMPLE = os.path.join(ROOT, "examples", "sandbox")


def test_filter_names():
    names = set(filters.FilterModule().filters()) | set(reporting.FilterModule().filters())
    assert {
        "render_job",
        "review_job",
        "redact",
        "findings_table",
        "preflight",
        "validate_manifest",
        "load_manifest",
    } <= names


def test_render_job_refuses_invalid_records_with_the_path():
    manifest = filters.load_manifest(os.path.join(EXAMPLE, "launch_manifest.yml"))
    manifest["roles"][0]["image"] = dict(manifest["roles"][0]["image"], digest=5)
    with pytest.raises(AnsibleFilterError) as info:
        filters.render_job(manifest, os.path.join(EXAMPLE, "deployment_profile.yml"))
    assert "manifest.roles[0].image.digest" in str(info.value)


def test_load_manifest_refusal_names_the_variable_and_the_field(tmp_path):
    bad = tmp_path / "bad.yml"
    with open(os.path.join(EXAMPLE, "launch_manifest.yml")) as fh:
        bad.write_text(fh.read().replace("  config_name:", "  confg_name:", 1))
    with pytest.raises(AnsibleFilterError) as info:
        filters.load_manifest(str(bad))
    message = str(info.value)
    assert message.startswith("invalid launch manifest (rlark_launch_manifest):")
    assert "hydra.confg_name: unknown field" in message and "did you mean 'config_name'?" in message
    with pytest.raises(AnsibleFilterError) as info:
        filters.load_manifest({"kind": "DeploymentProfile"}, "profile")
    assert str(info.value).startswith("invalid deployment profile (rlark_deployment_profile):")


def test_findings_table_and_validate():
    table = reporting.findings_table(
        [{"id": "head-count", "severity": "error", "path": "spec.tasks", "message": "m", "hint": "h"}], "preflight"
    )
    assert table.splitlines()[0] == "1 error(s), 0 warning(s) in preflight:"
    assert "head-count" in table and "Hint: h" in table
    assert reporting.findings_table([]) == "no findings"
    result = filters.validate_manifest({"kind": "DeploymentProfile"}, "profile")
    assert result["ok"] is False and "version" in {e["path"] for e in result["errors"]}
    with pytest.raises(AnsibleFilterError):
        filters.validate_manifest({}, "nonsense")


PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        manifest: "{{ lookup('ansible.builtin.file', example + '/launch_manifest.yml') | from_yaml }}"
        profile: "{{ lookup('ansible.builtin.file', example + '/deployment_profile.yml') | from_yaml }}"
    - ansible.builtin.set_fact:
        result: "{{ manifest | rlark.ops.preflight(profile) }}"
        job: "{{ manifest | rlark.ops.render_job(profile) }}"
    - ansible.builtin.set_fact:
        review: "{{ job | rlark.ops.review_job(manifest, profile) }}"
        table: "{{ result.findings | rlark.ops.findings_table('preflight') }}"
        masked: "{{ {'token': 'abc', 'env': [{'name': 'HF_TOKEN', 'value': 'hf_x'}]} | rlark.ops.redact }}"
        yaml_text: "{{ job | rlark.ops.stable_yaml }}"
    - ansible.builtin.copy:
        dest: "{{ out }}"
        content: "{{ {'ok': result.ok, 'review': review, 'table': table, 'masked': masked,
                      'same': result.job == job, 'yaml': yaml_text} | to_json }}"
        mode: "0600"
"""


def test_filters_inside_ansible_playbook(tmp_path):
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    out = tmp_path / "out.json"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"))
    env["ANSIBLE_LOCALHOST_WARNING"] = "false"
    env["ANSIBLE_INVENTORY_UNPARSED_WARNING"] = "false"
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(playbook),
         "-e", "example=%s" % EXAMPLE, "-e", "out=%s" % out],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert data["ok"] is True and data["review"] == [] and data["same"] is True
    assert data["table"] == "no preflight"
    assert data["masked"] == {"token": "***REDACTED***", "env": [{"name": "HF_TOKEN", "value": "***REDACTED***"}]}
    assert data["yaml"].startswith("apiVersion: rlinf.io/v1alpha1\nkind: Job\n")
