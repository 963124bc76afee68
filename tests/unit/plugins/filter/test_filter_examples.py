# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every rlark.ops filter is documented, and every filter's EXAMPLES block runs (ansible-playbook, fixtures).

The examples are read back through ``ansible-doc --json`` (what users see), then run as one play with
``files/example_vars.yml`` and ``files/example_inventory.yml``. They may use only debug, set_fact and
assert, so running them changes nothing; an assert in an example must hold on the fixtures.
"""

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
BIN = os.path.dirname(sys.executable)
SAFE_MODULES = {"ansible.builtin.debug", "ansible.builtin.set_fact", "ansible.builtin.assert"}
TASK_KEYS = {"name", "vars", "when", "register"}
RECAP = r"^localhost\s+: ok=(\d+)\s+changed=\d+\s+unreachable=0\s+failed=0\s+skipped=0"


def _env():
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        PATH=BIN + os.pathsep + env.get("PATH", ""),
    )
    return env


def _doc(*args):
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-doc"), "-t", "filter", "--json", *args],
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def docs():
    listing = _doc("-l", "rlark.ops")
    return listing, _doc(*sorted(listing))


def test_no_filter_is_undocumented(docs):
    listing, full = docs
    assert len(listing) >= 20
    assert sorted(name for name, desc in listing.items() if desc == "UNDOCUMENTED") == []
    for name, entry in full.items():
        assert entry.get("examples"), "%s has no EXAMPLES" % name
        assert (entry.get("return") or {}).get("_value"), "%s has no RETURN _value" % name
        # Semantic markup that ansible-doc prints raw ([[...]]) has no place in the docs.
        assert "#filter)" not in json.dumps(entry["doc"]), name


def test_every_filter_example_runs_against_the_fixtures(docs, tmp_path):
    _listing, full = docs
    tasks = []
    for name in sorted(full):
        text = full[name]["examples"]
        assert re.search(r"\b%s\b" % re.escape(name), text), "the EXAMPLES of %s do not use it" % name
        for task in yaml.safe_load(text):
            modules = set(task) - TASK_KEYS
            assert modules <= SAFE_MODULES and len(modules) == 1, "%s: %r uses %s" % (name, task["name"], modules)
            task["name"] = "%s | %s" % (name, task["name"])
            tasks.append(task)
    play = [
        {
            "name": "filter examples",
            "hosts": "localhost",
            "gather_facts": False,
            "vars_files": [os.path.join(HERE, "files", "example_vars.yml")],
            "tasks": tasks,
        }
    ]
    playbook = tmp_path / "examples.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    proc = subprocess.run(
        [
            os.path.join(BIN, "ansible-playbook"),
            "-i",
            os.path.join(HERE, "files", "example_inventory.yml"),
            str(playbook),
        ],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    recap = re.search(RECAP, proc.stdout, re.M)
    assert recap and int(recap.group(1)) == len(tasks), proc.stdout[-3000:]
