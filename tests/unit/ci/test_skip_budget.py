# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CI skip budget (.ci/skip_budget.py) on a real pytest JUnit report of a tiny suite."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUDGET = os.path.join(ROOT, ".ci", "skip_budget.py")

SUITE = """
import pytest

def test_runs():
    pass

def test_skips():
    pytest.skip("no kubectl")

@pytest.mark.parametrize("n", [1])
def test_param_skips(n):
    pytest.skip("later")
"""


def junit_of_tiny_suite(tmp_path):
    (tmp_path / "test_tiny.py").write_text(SUITE)
    report = tmp_path / "report.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", str(report), "test_tiny.py"],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return str(report)


def budget(tmp_path, allow_text, report):
    allow = tmp_path / "allowed.txt"
    allow.write_text(allow_text)
    return subprocess.run([sys.executable, BUDGET, str(allow), report], capture_output=True, text=True, check=False)


def test_unlisted_skips_fail_the_run_naming_each_test(tmp_path):
    report = junit_of_tiny_suite(tmp_path)
    proc = budget(tmp_path, "# nothing allowed\n", report)
    assert proc.returncode == 1
    assert "test_tiny.py::test_skips (no kubectl)" in proc.stderr
    assert "test_tiny.py::test_param_skips[1] (later)" in proc.stderr
    assert "2 skipped, 0 allowed, 2 not allowed" in proc.stdout


def test_listed_skips_pass_and_patterns_match_parameters(tmp_path):
    report = junit_of_tiny_suite(tmp_path)
    proc = budget(
        tmp_path,
        "test_tiny.py::test_skips  # kubectl is optional\ntest_tiny.py::test_param_skips[*]  # later\n",
        report,
    )
    assert proc.returncode == 0, proc.stderr
    assert "2 skipped, 2 allowed, 0 not allowed" in proc.stdout


def test_an_entry_without_a_reason_is_an_error(tmp_path):
    report = junit_of_tiny_suite(tmp_path)
    proc = budget(tmp_path, "test_tiny.py::test_skips\ntest_tiny.py::test_param_skips[*]  # later\n", report)
    assert proc.returncode == 1 and "has no reason" in proc.stderr


def test_the_shipped_allow_list_parses():
    sys.path.insert(0, os.path.dirname(BUDGET))
    import skip_budget

    assert isinstance(skip_budget.load_allow_list(os.path.join(ROOT, ".ci", "allowed-skips.txt")), list)
