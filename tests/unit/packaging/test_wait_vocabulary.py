# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One wait vocabulary (issue #25, item 3): every module's and action's wait options come from
module_utils/wait_options.py (wait_timeout, wait_sleep, after_step), the older names only as aliases."""

import os
import re

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.rlark.ops.plugins.module_utils import wait_options
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import options as gate_options
from ansible_collections.rlark.ops.plugins.plugin_utils import checkpoint_wait

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HOME = os.path.join("plugins", "module_utils", "wait_options.py")
WAIT_NAMES = set(wait_options.VOCABULARY) | {old for olds in wait_options.OLDER_NAMES.values() for old in olds}
# An option declared as ``name=dict(`` or ``"name": {`` in an argument spec.
DECLARED = re.compile(r"""(?:^|[\s(,{])["']?(%s)["']?\s*(?:=\s*dict\(|:\s*\{)""" % "|".join(sorted(WAIT_NAMES)))
# ``timeout`` here bounds the API calls of one module run, not a wait for a condition.
API_TIMEOUTS = {
    os.path.join("plugins", "module_utils", "module_options.py"),
    os.path.join("plugins", "module_utils", "access.py"),
    os.path.join("plugins", "modules", "rlark_job_info.py"),
}


def plugin_files():
    for base, _dirs, files in os.walk(os.path.join(ROOT, "plugins")):
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.relpath(os.path.join(base, name), ROOT)


def declared_wait_options(text):
    """Wait option names an argument spec in ``text`` declares itself (DOCUMENTATION blocks excluded)."""
    code = re.sub(r'(?s)(DOCUMENTATION|EXAMPLES|RETURN)\s*=\s*r?""".*?"""', "", text)
    return sorted({m.group(1) for m in DECLARED.finditer(code)})


def test_no_module_or_action_declares_its_own_wait_options():
    found = []
    for path in plugin_files():
        if path == HOME:
            continue
        with open(os.path.join(ROOT, path)) as handle:
            names = declared_wait_options(handle.read())
        if path in API_TIMEOUTS:
            names = [n for n in names if n != "timeout"]
        found.extend("%s: %s" % (path, n) for n in names)
    assert found == [], "declare waits with module_utils/wait_options.wait_spec"


@pytest.mark.parametrize(
    "text, expected",
    [
        ('SPEC = dict(\n    timeout=dict(type="float", default=0),\n)', ["timeout"]),
        ('SPEC = {"interval": {"type": "float"}}', ["interval"]),
        ("SPEC = dict(**wait_spec(1, 2), next_checkpoint_timeout=dict(type='float'))", []),
        ('DOCUMENTATION = r"""\n  timeout=dict(\n"""\n', []),
    ],
)
def test_declared_wait_options_sees_both_spec_styles(text, expected):
    assert declared_wait_options(text) == expected


@pytest.mark.parametrize(
    "spec, older",
    [
        (gate_options.WAIT_SPEC, {"wait_sleep": "wait_interval"}),
        (checkpoint_wait.WAIT_SPEC, {"wait_timeout": "timeout", "wait_sleep": "interval", "after_step": "newer_than"}),
    ],
)
def test_the_older_names_still_work_as_aliases(spec, older):
    for name, old in older.items():
        value = 1 if name == "after_step" else 0.5
        checked = ArgumentSpecValidator(spec).validate({old: value})
        assert checked.error_messages == [] and checked.validated_parameters[name] == value


def test_wait_spec_keeps_only_a_modules_own_older_names():
    spec = wait_options.wait_spec(10, 1, after_step=-1, older=("timeout",))
    assert spec == {
        "wait_timeout": {"type": "float", "default": 10, "aliases": ["timeout"]},
        "wait_sleep": {"type": "float", "default": 1},
        "after_step": {"type": "int", "default": -1},
    }
    assert wait_options.all_names(spec) == {"wait_timeout", "timeout", "wait_sleep", "after_step"}
