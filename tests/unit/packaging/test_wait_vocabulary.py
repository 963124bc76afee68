# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One wait vocabulary (issue #25, item 3): every module's and action's wait options come from
module_utils/wait_options.py (wait_timeout, wait_sleep, after_step), the older names only as aliases; the lookup
and the roles use the same words."""

import glob
import os
import re

import pytest
import yaml
from ansible import constants
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible_collections.rlark.ops.plugins.doc_fragments import log_source
from ansible_collections.rlark.ops.plugins.lookup import job_logs as job_logs_lookup
from ansible_collections.rlark.ops.plugins.module_utils import wait_options
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import options as gate_options
from ansible_collections.rlark.ops.plugins.plugin_utils import checkpoint_wait

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HOME = os.path.join("plugins", "module_utils", "wait_options.py")
WAIT_NAMES = set(wait_options.VOCABULARY) | {old for olds in wait_options.OLDER_NAMES.values() for old in olds}
# An option declared as ``name=dict(`` or ``"name": {`` in an argument spec, a second wait's prefix included
# (``next_checkpoint_timeout``).
DECLARED = re.compile(
    r"""(?:^|[\s(,{])["']?([a-z_]*?(?:%s))["']?\s*(?:=\s*dict\(|:\s*\{)""" % "|".join(sorted(WAIT_NAMES))
)
# Not waits: ``timeout`` bounds the API calls of one module run; ``connect_timeout`` one connection;
# rlark_verify_decision's ``verify_timeout`` is only quoted in its message.
NOT_WAITS = {
    os.path.join("plugins", "module_utils", "module_options.py"): {"timeout"},
    os.path.join("plugins", "module_utils", "access.py"): {"timeout"},
    os.path.join("plugins", "module_utils", "job_info.py"): {"timeout"},
    os.path.join("plugins", "module_utils", "kube_auth.py"): {"connect_timeout"},
    os.path.join("plugins", "action", "rlark_verify_decision.py"): {"verify_timeout"},
}
# A role variable that waits ends with one of these; its older name is declared "Deprecated older name of".
ROLE_WAIT = re.compile(r"(?:timeout|sleep|interval|poll)$")
ROLE_NOT_WAITS = {"rlark_connect_timeout"}


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
        names = [n for n in names if n not in NOT_WAITS.get(path, ())]
        found.extend("%s: %s" % (path, n) for n in names)
    assert found == [], "declare waits with module_utils/wait_options.wait_spec"


@pytest.mark.parametrize(
    "text, expected",
    [
        ('SPEC = dict(\n    timeout=dict(type="float", default=0),\n)', ["timeout"]),
        ('SPEC = {"interval": {"type": "float"}}', ["interval"]),
        ("SPEC = dict(**wait_spec(1, 2), next_checkpoint_timeout=dict(type='float'))", ["next_checkpoint_timeout"]),
        ("SPEC = dict(**wait_spec(1, 2, prefix='next_checkpoint_'))", []),
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


def test_a_second_wait_takes_a_prefix_and_keeps_its_older_names():
    spec = wait_options.wait_spec(
        3600, 0.25, older=("next_checkpoint_timeout", "next_checkpoint_poll"), prefix="next_checkpoint_"
    )
    assert spec == {
        "next_checkpoint_wait_timeout": {"type": "float", "default": 3600, "aliases": ["next_checkpoint_timeout"]},
        "next_checkpoint_wait_sleep": {"type": "float", "default": 0.25, "aliases": ["next_checkpoint_poll"]},
    }


def test_the_guarded_stop_still_reads_the_next_checkpoint_older_names():
    from ansible_collections.rlark.ops.plugins.action.rlark_guarded_stop import SPEC

    checked = ArgumentSpecValidator(SPEC).validate(
        {"name": "demo", "records_dir": "/r", "next_checkpoint_timeout": 7, "next_checkpoint_poll": 0.5}
    )
    assert checked.error_messages == []
    got = checked.validated_parameters
    assert (got["next_checkpoint_wait_timeout"], got["next_checkpoint_wait_sleep"]) == (7, 0.5)


def role_options():
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml"))):
        with open(path) as handle:
            specs = yaml.safe_load(handle)["argument_specs"]
        for entry in specs.values():
            for name, option in (entry.get("options") or {}).items():
                yield os.path.relpath(path, ROOT), name, option


def test_every_role_wait_variable_uses_the_vocabulary():
    found = []
    for path, name, option in role_options():
        if not ROLE_WAIT.search(name) or name.endswith(("wait_timeout", "wait_sleep")) or name in ROLE_NOT_WAITS:
            continue
        description = option.get("description") or ""
        if isinstance(description, list):
            description = " ".join(description)
        if not description.startswith("Deprecated older name of O("):
            found.append("%s: %s" % (path, name))
    assert found == [], "name a role's wait <prefix>_wait_timeout / <prefix>_wait_sleep (older names deprecated)"


@pytest.fixture
def job_logs(monkeypatch, tmp_path):
    """The job_logs lookup over a files log that already holds its signal; ``waits`` collects each wait's
    (timeout, sleep) as the lookup passed them on."""
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "demo-actor-0.log").write_text("Executing run script\n")
    # What the plugin loader does when it loads the lookup: its documented options become its configuration.
    name = "rlark.ops.job_logs"
    options = yaml.safe_load(job_logs_lookup.DOCUMENTATION)["options"]
    options.update(yaml.safe_load(log_source.ModuleDocFragment.LOOKUP)["options"])
    constants.config.initialize_plugin_configuration_definitions("lookup", name, options)
    lookup = job_logs_lookup.LookupModule(loader=DataLoader())
    lookup._load_name = name
    module = job_logs_lookup
    waits = []
    real = module.wait_for_logs

    def recording(read, head, done, timeout, sleep):
        waits.append((timeout, sleep))
        return real(read, head, done, timeout, sleep)

    monkeypatch.setattr(module, "wait_for_logs", recording)

    def run(**options):
        got = lookup.run(
            ["demo"], variables={}, logs_dir=str(tmp_path), head_task="actor", wait_for=["Executing run script"],
            **options,
        )  # fmt: skip
        return got[0], waits[-1]

    return run


@pytest.mark.parametrize(
    "options, wait",
    [
        ({"wait_timeout": 5, "wait_sleep": 0.5}, (5, 0.5)),
        ({"timeout": 6, "interval": 0.25}, (6, 0.25)),
        ({}, (0, 1)),
    ],
)
def test_the_job_logs_lookup_waits_with_the_vocabulary_and_its_older_names(job_logs, options, wait):
    result, got = job_logs(**options)
    assert got == wait and result["timed_out"] is False
