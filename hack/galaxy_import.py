"""Galaxy's own importer (galaxy-importer) on the built collection tarball: no error, no unlisted warning.

    python hack/galaxy_import.py [--allowed .ci/galaxy-importer-allowed.txt]

1. `ansible-galaxy collection build` into .build/galaxy-import/.
2. `python -m galaxy_importer.main <tarball>` (its ansible-doc, README, role, changelog and plugin checks).
3. The importer's ansible-lint call (the same command line, in the extracted tarball) without the
   importer's fixed 180 s timeout: on a loaded 2-core machine that call can take longer and the
   importer then logs "Timeout on call to ansible-lint", a verdict about the machine, not the collection.
   The importer runs with run_ansible_lint off and this script runs that exact call itself; it fails
   when the installed galaxy-importer's call no longer matches (so the two cannot drift apart).

Every WARNING/ERROR/CRITICAL line the importer logs (and every line ansible-lint reports) is named by
the content it was loading ("role guarded_stop: ...") and must match a line of the allow-list
(``<regex>  # <reason>``); an allow-list line that matches nothing fails too (it would hide nothing).
The importer exits 0 even after an ERROR, so its output is the verdict, not its exit code.
"""

import argparse
import inspect
import os
import re
import shutil
import subprocess
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(os.path.abspath(sys.executable))
WORK = os.path.join(ROOT, ".build", "galaxy-import")
# galaxy_importer.loaders.collection.CollectionLoader._lint_collection, as of galaxy-importer 0.4.x.
LINT_ARGS = [
    "--profile",
    "production",
    "--exclude",
    "tests/integration/",
    "--exclude",
    "tests/unit/",
    "--format=pep8",
    "--nocolor",
    "-x",
    "yaml,var-naming,avoid-dot-notation,import-task-no-when,single-entry-point,use-loop",
    "--offline",
]
CONTEXT = re.compile(r"^Loading (role|playbook|module|filter|lookup|\w+) (\S+)")
LEVEL = re.compile(r"^(WARNING|ERROR|CRITICAL): (.*)")


def load_allowed(path):
    """[(regex, reason)]; a line without a reason is an error."""
    out = []
    with open(path) as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            pattern, sep, reason = line.partition("  # ")
            if not sep or not reason.strip():
                raise SystemExit("%s:%d: an allowed warning needs '  # <reason>': %s" % (path, number, line))
            out.append((re.compile(pattern.strip()), reason.strip()))
    return out


def importer_findings(text):
    """'<context>: LEVEL: message' for each warning/error line of the importer's log."""
    context, out = "collection", []
    for line in text.splitlines():
        found = CONTEXT.match(line)
        if found:
            context = "%s %s" % found.groups()
            continue
        level = LEVEL.match(line)
        if level:
            out.append("%s: %s: %s" % (context, level.group(1), level.group(2).strip()))
    return out


def check_lint_call_matches():
    from galaxy_importer.loaders.collection import CollectionLoader

    source = inspect.getsource(CollectionLoader._lint_collection)
    missing = [arg for arg in LINT_ARGS if arg != "--offline" and '"%s"' % arg not in source]
    if missing:
        raise SystemExit(
            "galaxy-importer changed its ansible-lint call (%s no longer in it): update LINT_ARGS in %s"
            % (", ".join(missing), os.path.relpath(__file__, ROOT))
        )


def build():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    cmd = [os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", WORK, ROOT]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    (tarball,) = [os.path.join(WORK, n) for n in os.listdir(WORK) if n.endswith(".tar.gz")]
    return tarball


def run_importer(tarball, env):
    cfg = os.path.join(WORK, "galaxy-importer.cfg")
    with open(cfg, "w") as fh:
        fh.write("[galaxy-importer]\nrun_ansible_lint = False\nrun_ansible_doc = True\ncheck_changelog = True\n")
    proc = subprocess.run(
        [sys.executable, "-m", "galaxy_importer.main", tarball],
        env=dict(env, GALAXY_IMPORTER_CONFIG=cfg),
        cwd=WORK,
        capture_output=True,
        text=True,
        check=False,
    )
    text = proc.stdout + proc.stderr
    with open(os.path.join(WORK, "importer.log"), "w") as fh:
        fh.write(text)
    findings = importer_findings(text)
    if proc.returncode != 0:
        findings.append("collection: ERROR: galaxy-importer exited %d" % proc.returncode)
    return findings


def run_lint(tarball, env):
    tree = os.path.join(WORK, "collections", "ansible_collections", "rlark", "ops")
    os.makedirs(tree)
    with tarfile.open(tarball) as tar:
        tar.extractall(tree, filter="data")
    cmd = [os.path.join(BIN, "ansible-lint"), *LINT_ARGS]
    lint_env = dict(env, ANSIBLE_COLLECTIONS_PATH=os.path.join(WORK, "collections"))
    proc = subprocess.run(cmd, cwd=tree, env=lint_env, capture_output=True, text=True, check=False)
    findings = ["ansible-lint: WARNING: %s" % line.strip() for line in proc.stdout.splitlines() if line.strip()]
    errors = [line.rstrip() for line in proc.stderr.splitlines() if line.startswith(("CRITICAL", "ERROR"))]
    findings += ["ansible-lint: ERROR: %s" % line for line in errors]
    if proc.returncode != 0 and not findings:
        findings.append("ansible-lint: ERROR: exited %d\n%s" % (proc.returncode, proc.stderr[-2000:]))
    return findings


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allowed", default=os.path.join(ROOT, ".ci", "galaxy-importer-allowed.txt"))
    args = parser.parse_args(argv)
    allowed = load_allowed(args.allowed)
    check_lint_call_matches()
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    tarball = build()
    findings = run_importer(tarball, env) + run_lint(tarball, env)
    used = set()
    unexpected = []
    for finding in findings:
        hits = [i for i, (pattern, _reason) in enumerate(allowed) if pattern.search(finding)]
        used.update(hits)
        if not hits:
            unexpected.append(finding)
    stale = [allowed[i][0].pattern for i in range(len(allowed)) if i not in used]
    for finding in findings:
        print("  " + ("kept    " if finding not in unexpected else "UNLISTED") + " " + finding)
    if unexpected or stale:
        for pattern in stale:
            print("galaxy-import: allow-list line matched nothing (remove it): %s" % pattern)
        print("galaxy-import: %d unlisted warning(s)/error(s); log: %s" % (len(unexpected), WORK))
        return 1
    print(
        "galaxy-import: %s passed (%d kept warning(s), listed in %s)"
        % (os.path.basename(tarball), len(findings), os.path.relpath(args.allowed, ROOT))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
