# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""antsibull-changelog: the fragments pass its lint and a release generates CHANGELOG.rst from all of them."""

import os
import shutil
import subprocess
import sys

import yaml
from conftest import ROOT

BIN = os.path.dirname(sys.executable)
# What antsibull-changelog reads: the fragments and config, galaxy.yml and the plugins (for "New Modules").
COPY = ("changelogs", "plugins", "meta", "roles", "galaxy.yml", "README.md")


def changelog(args, cwd, env=None):
    proc = subprocess.run(
        [os.path.join(BIN, "antsibull-changelog"), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def test_fragments_pass_antsibull_changelog_lint():
    out = changelog(["lint"], ROOT)
    assert out.strip() == "", out


def test_release_generates_the_changelog_from_every_fragment(tmp_path):
    tree = tmp_path / "ansible_collections" / "rlark" / "ops"
    for name in COPY:
        src = os.path.join(ROOT, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, str(tree / name))
    fragments = tree / "changelogs" / "fragments"
    entries = []
    for name in sorted(os.listdir(str(fragments))):
        with open(str(fragments / name)) as fh:
            for kind, section in yaml.safe_load(fh).items():
                if kind != "trivial":  # trivial changes are not rendered, by design
                    entries += section if isinstance(section, list) else [section]
    assert len(entries) > 20
    # As a release does: a summary, then `release` folds the fragments into changelog.yaml and CHANGELOG.rst.
    (fragments / "release.yml").write_text("release_summary: Test release of the fragments.\n")
    with open(os.path.join(ROOT, "galaxy.yml")) as fh:
        version = yaml.safe_load(fh)["version"]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path), PATH=BIN + os.pathsep + os.environ["PATH"])
    out = changelog(["release", "--version", version, "--date", "2026-01-01"], str(tree), env)
    assert "WARNING" not in out and "ERROR" not in out, out
    text = (tree / "CHANGELOG.rst").read_text()
    assert "v%s" % version in text
    normalized = " ".join(text.split())
    missing = [e for e in entries if " ".join(e.split())[:60] not in normalized]
    assert missing == [], "fragment entries missing from CHANGELOG.rst: %s" % missing[:3]
