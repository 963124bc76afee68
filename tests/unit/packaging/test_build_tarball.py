# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`ansible-galaxy collection build` ships what users need and no dev-only file (galaxy.yml build_ignore)."""

import os
import shutil
import subprocess
import sys
import tarfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GALAXY = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
# Top-level entries and paths that only make sense in a checkout (tests, benchmarks, the sandbox, tooling).
FORBIDDEN_PREFIXES = (
    "tests/",
    "bench/",
    "hack/",
    "sandbox/",
    "dist/",
    "extensions/molecule/",
    ".venv/",
    ".sandbox/",
    ".build/",
    ".ci/",
    ".git/",
)
FORBIDDEN_FILES = {
    "Makefile",
    "pyproject.toml",
    "requirements-dev.txt",
    ".ansible-lint",
    ".gitignore",
    "execution-environment.yml",
    "examples/sandbox/demo.sh",
    "examples/sandbox/demo_cleanup.yml",
}
REQUIRED = {
    "MANIFEST.json",
    "README.md",
    "COPYING",
    "requirements.txt",
    "meta/runtime.yml",
    "meta/execution-environment.yml",
    "plugins/modules/rlark_job.py",
    "plugins/filter/migration.py",
    "plugins/lookup/job_logs.py",
    "roles/guarded_stop/meta/argument_specs.yml",
    "playbooks/guarded_stop.yml",
    "schemas/launch_manifest.schema.json",
    "extensions/eda/plugins/event_source/rlark_jobs.py",
    "extensions/eda/rulebooks/guarded_stop_at_budget.yml",
}


def build(tmp_path):
    proc = subprocess.run(
        [GALAXY, "collection", "build", "--force", "--output-path", str(tmp_path), ROOT],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(os.path.join(ROOT, "galaxy.yml")) as fh:
        version = yaml.safe_load(fh)["version"]
    with tarfile.open(os.path.join(str(tmp_path), "rlark-ops-%s.tar.gz" % version)) as tar:
        return {m.name.rstrip("/") + ("/" if m.isdir() else "") for m in tar.getmembers()}


def test_tarball_has_no_dev_only_member_and_every_user_file(tmp_path):
    members = build(tmp_path)
    forbidden = sorted(
        m
        for m in members
        if m.rstrip("/") in FORBIDDEN_FILES or (m if m.endswith("/") else m + "/").startswith(FORBIDDEN_PREFIXES)
    )
    assert forbidden == [], "dev-only files in the tarball: %s" % forbidden
    assert sorted(REQUIRED - members) == []
    assert not [m for m in members if "__pycache__" in m or m.endswith(".pyc")]


def test_runtime_yml_declares_the_auth_modules_as_one_action_group():
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as fh:
        runtime = yaml.safe_load(fh)
    assert runtime["requires_ansible"] == ">=2.16.0"
    # Exactly the modules that take the kubernetes.core-style auth options (module_defaults: group/rlark.ops.rlark).
    auth_modules = set()
    for name in os.listdir(os.path.join(ROOT, "plugins", "modules")):
        with open(os.path.join(ROOT, "plugins", "modules", name)) as fh:
            if "rlark.ops.auth" in fh.read():
                auth_modules.add(name[:-3])
    assert set(runtime["action_groups"]["rlark"]) == auth_modules


def test_ansible_builder_accepts_the_ee_file_with_the_built_tarball(tmp_path):
    """What `make ee` does, in a scratch directory: the EE file, its requirements and the tarball it installs."""
    members = build(tmp_path / "dist")
    assert "MANIFEST.json" in members
    for name in ("execution-environment.yml", "requirements.txt"):
        shutil.copy(os.path.join(ROOT, name), str(tmp_path / name))
    proc = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ansible-builder"),
            "create",
            "-f",
            "execution-environment.yml",
            "-c",
            "context",
        ],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (tmp_path / "context" / "Dockerfile").read_text()
    assert "ansible-galaxy collection install" in containerfile
    assert (tmp_path / "context" / "_build" / "collections" / "rlark-ops-0.1.0.tar.gz").is_file()
