# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The integration suite's profile (tests/integration/suite_profile.py, hack/suite_profile.py) on a tiny suite
run by a real pytest: waits, children, the children's CPU and the per-program split."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
INTEGRATION = os.path.join(ROOT, "tests", "integration")

SUITE = """
import subprocess, sys, time
import suite_profile
pytest_runtest_call = suite_profile.pytest_runtest_call
pytest_runtest_logreport = suite_profile.pytest_runtest_logreport

def test_waits_and_children():
    time.sleep(0.2)
    burn = "import time; t = time.process_time()\\nwhile time.process_time() - t < 0.3: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)
    subprocess.run([sys.executable, "-c", "import time; time.sleep(0.3)"], check=True)
"""


def test_profile_splits_waits_children_and_their_cpu(tmp_path):
    (tmp_path / "conftest.py").write_text(SUITE.split("def test_", maxsplit=1)[0])
    (tmp_path / "test_tiny.py").write_text("import subprocess, sys, time\n\ndef test_" + SUITE.split("def test_")[1])
    profile = tmp_path / "profile.jsonl"
    env = dict(os.environ, RLARK_SUITE_PROFILE=str(profile), PYTHONPATH=INTEGRATION)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    (line,) = profile.read_text().splitlines()
    test = json.loads(line)
    assert test["waits"] >= 0.2
    assert test["children"] >= 0.6  # both children, waited for
    assert 0.3 <= test["children_cpu"] < test["children"]  # one burned CPU, the other slept
    program = os.path.basename(sys.executable)
    assert list(test["runs"]) == [program] and test["runs"][program][0] == 2

    out = tmp_path / "profile.md"
    render = [sys.executable, os.path.join(ROOT, "hack", "suite_profile.py"), "--out", str(out), str(profile)]
    subprocess.run(render, check=True, capture_output=True)
    text = out.read_text()
    assert "| `%s` | 2 |" % program in text and "CPU seconds" in text


def test_programs_are_named_by_playbook_and_sandboxctl_verb():
    sys.path.insert(0, INTEGRATION)
    try:
        from suite_profile import program_of
    finally:
        sys.path.remove(INTEGRATION)
    assert program_of(["/v/bin/ansible-playbook", "/r/playbooks/guarded_stop.yml", "-i", "x"]) == (
        "ansible-playbook guarded_stop.yml"
    )
    assert program_of(["/v/bin/ansible-playbook", "/tmp/module-x1.yml"]) == "ansible-playbook (a test's own play)"
    assert program_of(["/v/bin/python", "/r/sandbox/sandboxctl.py", "--dir", "d", "up"]) == "sandboxctl.py up"
    assert program_of("ls -l") == "ls"
