# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`pip install -r requirements.txt` into a fresh venv resolves at once (issue 32, item 1).

An open ``kubernetes`` range let pip pick kubernetes 37.0.2 (python-dateutil>=3) beside botocore
(python-dateutil<3) and backtrack through every botocore release for more than 5.5 minutes. The ranges
in requirements.txt must resolve without that: this test installs them the way the README tells a new
user to, from PyPI through pip's own cache, and fails past INSTALL_LIMIT seconds.

It runs in `make unit` (so in `make test` and CI, never skipped); alone: `make requirements-check`, or
`pytest -m install tests/unit`; `-m "not install"` leaves it out of a quick local run.
"""

import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
REQUIREMENTS = os.path.join(ROOT, "requirements.txt")
# The bound: a resolution that backtracks takes minutes, one that does not well under one.
INSTALL_LIMIT = 180
IMPORTS = "import boto3, botocore, dateutil, jmespath, jsonschema, kubernetes, yaml"

pytestmark = pytest.mark.install


def _run(args, timeout):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


def test_requirements_install_into_a_fresh_venv_in_time(tmp_path):
    venv = tmp_path / "venv"
    # No pip of its own (ensurepip costs seconds): this venv's pip installs into it with --python.
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], 60)
    assert made.returncode == 0, made.stderr
    python = str(venv / "bin" / "python")
    started = time.monotonic()
    try:
        proc = _run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                python,
                "install",
                "--disable-pip-version-check",
                "--progress-bar",
                "off",
                # Byte-compiling the installed files (about half of the install's CPU) is not what this checks.
                "--no-compile",
                "-r",
                REQUIREMENTS,
            ],
            INSTALL_LIMIT,
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        pytest.fail(
            "pip install -r requirements.txt into a fresh venv did not finish within %d s (pip backtracks: bound "
            "the range that conflicts in requirements.txt). Last output:\n%s" % (INSTALL_LIMIT, out[-3000:])
        )
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "backtracking" not in proc.stdout + proc.stderr, proc.stdout[-3000:]
    imported = _run([python, "-c", IMPORTS], 60)
    assert imported.returncode == 0, imported.stderr
    checked = _run([sys.executable, "-m", "pip", "--python", python, "check"], 60)
    assert checked.returncode == 0, checked.stdout
    print("requirements.txt installed into a fresh venv in %.1f s (limit %d s)" % (took, INSTALL_LIMIT))
