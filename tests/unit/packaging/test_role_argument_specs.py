# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Role argument specs as ansible-doc shows them: no input with a default marked required, examples that parse."""

import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLES = sorted(os.listdir(os.path.join(ROOT, "roles")))


def _load(role, *parts):
    with open(os.path.join(ROOT, "roles", role, *parts)) as fh:
        return yaml.safe_load(fh) or {}


@pytest.mark.parametrize("role", ROLES)
def test_inputs_with_defaults_are_not_required(role):
    defaults = _load(role, "defaults", "main.yml")
    for entry, spec in _load(role, "meta", "argument_specs.yml")["argument_specs"].items():
        wrong = sorted(k for k, o in (spec.get("options") or {}).items() if o.get("required") and k in defaults)
        assert wrong == [], "%s/%s: required although defaults/main.yml sets %s" % (role, entry, wrong)


def test_every_role_has_examples_that_pass_syntax_check(tmp_path):
    plays = []
    for role in ROLES:
        examples = _load(role, "meta", "argument_specs.yml")["argument_specs"]["main"].get("examples")
        assert examples, "%s has no examples" % role
        block = yaml.safe_load(examples)
        assert "rlark.ops." + role in examples, "the examples of %s do not use it" % role
        plays.extend(block)
    playbook = tmp_path / "role_examples.yml"
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"))
    proc = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
            "--syntax-check",
            "-i",
            "localhost,",
            str(playbook),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
