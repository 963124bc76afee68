# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mutation testing of the safety core with cosmic-ray (issue 26).

  hack/mutation.py run [MODULE ...]        one cosmic-ray session per module (all TARGETS without MODULE)
  hack/mutation.py run --retest MODULE     re-run only that session's survivors (after adding tests)
  hack/mutation.py run --since REV         quick mode: only the safety-core files, and in them only the
                                           lines, changed since REV (committed or not)
  hack/mutation.py report                  bench/results/mutation.md from the sessions, and the survivors
                                           that tests/mutation-equivalent.txt does not explain (exit 1)

Each session works on its own copy of the tree, .build/mutation/sessions/<module>.tree/ansible_collections/
rlark/ops (cosmic-ray mutates the file in place: the checkout, and the plugins/ other engineers edit, are
never touched), with the collection imported from that copy. Before trusting a session the copy's module
is replaced by one that raises on import, and the selected tests must fail (the canary): proof they
import the copy.
"""

import argparse
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build", "mutation")
SESSIONS = os.path.join(WORK, "sessions")
EQUIVALENTS = os.path.join(ROOT, "tests", "mutation-equivalent.txt")
RESULTS = os.path.join(ROOT, "bench", "results", "mutation.md")
BIN = os.path.dirname(sys.executable)

MU = "plugins/module_utils/"
UT = "tests/unit/plugins/module_utils/"
CK = "tests/unit/checkpoint/"
# Fastest first: pytest -x stops at the first failure, so a mutant one of them kills costs a second.
GATE_TESTS = [
    CK + "test_gate_tolerances.py",
    CK + "test_gate_core.py",
    CK + "test_rule_registry.py",
    CK + "test_dcp_metadata.py",
    CK + "test_dcp_prefetch.py",
    CK + "test_integrity.py",
    CK + "test_megatron_integrity_list.py",
    CK + "test_s3_source.py",
    UT + "test_checkpoint_dirs.py",
    "tests/unit/plugins/modules/test_rlark_ckpt_gate.py",
    CK + "test_dcp_written_by_torch.py",
    CK + "test_gate_matrix.py",
]

# The safety core, in the order the session works through it, each with the unit tests that
# exercise it (the module's own tests and those of its direct callers): tight, so a run is minutes.
TARGETS = {
    MU + "selectors.py": [
        UT + "test_selectors_rules.py",
        UT + "test_selectors_proof.py",
        UT + "test_field_selectors.py",
        UT + "test_task_identity.py",
        UT + "test_hostpath_kinds.py",
        UT + "test_nodes.py",
        "tests/unit/plugins/filter/test_node_host_filter.py",
    ],
    MU + "placement.py": [
        UT + "test_placement_rules.py",
        UT + "test_hostpath_kinds.py",
        UT + "test_selectors_proof.py",
        UT + "test_nodes.py",
        "tests/unit/plugins/filter/test_node_host_filter.py",
        "tests/unit/plugins/filter/test_query_filter.py",
        UT + "test_playbook_core.py",
    ],
    MU + "hydra.py": [
        UT + "test_hydra_rules.py",
        UT + "test_hydra.py",
        UT + "test_resume.py",
        UT + "test_playbook_core.py",
    ],
    MU + "access.py": [UT + "test_access_rules.py", UT + "test_guarded_stop_core.py"],
    MU + "resume.py": [
        UT + "test_resume_rules.py",
        UT + "test_resume.py",
        UT + "test_hydra.py",
        UT + "test_playbook_core.py",
        UT + "test_role_verdicts.py",
    ],
    # The gate's rule files: the gate's own tests, the whole matrix last (its 8 s run only for survivors).
    MU + "checkpoint/structure.py": [
        CK + "test_gate_tolerances.py",
        CK + "test_gate_core.py",
        CK + "test_rule_registry.py",
        CK + "test_megatron_integrity_list.py",
        CK + "test_gate_matrix.py",
    ],
    MU + "checkpoint/siblings.py": [
        CK + "test_gate_siblings.py",
        CK + "test_gate_core.py",
        CK + "test_rule_registry.py",
        CK + "test_gate_matrix.py",
    ],
    MU + "checkpoint/payloads.py": [
        CK + "test_payloads_edges.py",
        CK + "test_gate_core.py",
        CK + "test_dcp_metadata.py",
        CK + "test_integrity.py",
        CK + "test_megatron_integrity_list.py",
        CK + "test_dcp_written_by_torch.py",
        CK + "test_gate_matrix.py",
    ],
}
for _name in (
    "gate", "verdict", "rules", "dcp_check", "dcp_metadata", "dcp_prefetch", "integrity", "integrity_schema",
    "layouts", "location", "step_listing", "identify", "parallelism", "local", "s3", "sources", "tree",
    "dir_guard", "waiting", "gate_summary", "options",
):  # fmt: skip
    TARGETS[MU + "checkpoint/%s.py" % _name] = GATE_TESTS
# The backup of a hostPath step (issue 27): its verdict and making the copy, with their unit tests.
TARGETS[MU + "checkpoint/backup_copy.py"] = [CK + "test_backup_copy.py", CK + "test_backup.py"]
TARGETS[MU + "checkpoint/backup.py"] = [CK + "test_backup_edges.py", CK + "test_backup.py", CK + "test_gate_core.py"]
TARGETS[MU + "checkpoint/backup_restore.py"] = [CK + "test_backup_restore_edges.py", CK + "test_backup.py"]
# Narrowed per module (issue 26, third session): the module's own tests and its direct callers', fastest first;
# GATE_TESTS' slowest files only where they reach the module.
TARGETS[MU + "checkpoint/gate.py"] = [
    CK + "test_gate_edges.py",
    CK + "test_gate_core.py",
    CK + "test_rule_registry.py",
    CK + "test_gate_tolerances.py",
    CK + "test_s3_source.py",
    CK + "test_megatron_integrity_list.py",
    "tests/unit/plugins/modules/test_rlark_ckpt_gate.py",
    CK + "test_gate_matrix.py",
]
TARGETS[MU + "checkpoint/verdict.py"] = [
    CK + "test_verdict_edges.py",
    CK + "test_gate_edges.py",
    CK + "test_gate_core.py",
    CK + "test_gate_tolerances.py",
]
# The wait and the gate's flat summary: their tests, and the guarded stop's that call both.
WAIT_TESTS = [CK + "test_gate_wait_edges.py", UT + "test_guarded_stop_core.py", UT + "test_stop_policy.py"]
TARGETS[MU + "checkpoint/waiting.py"] = [*WAIT_TESTS, "tests/unit/plugins/modules/test_rlark_ckpt_gate.py"]
TARGETS[MU + "checkpoint/gate_summary.py"] = [*WAIT_TESTS, UT + "test_role_verdicts.py", UT + "test_playbook_core.py"]
TARGETS[MU + "checkpoint/dir_guard.py"] = [
    UT + "test_dir_guard_edges.py",
    UT + "test_checkpoint_dirs.py",
    "tests/unit/packaging/test_role_expressions.py",
]
# The manifest (schema and hashing): their tests, and those of the gate's Megatron lists and the backup that read it.
INTEGRITY_TESTS = [
    CK + "test_integrity_edges.py",
    CK + "test_integrity.py",
    CK + "test_megatron_integrity_list.py",
    CK + "test_backup.py",
]
TARGETS[MU + "checkpoint/integrity.py"] = [*INTEGRITY_TESTS, "tests/unit/plugins/modules/test_rlark_ckpt_gate.py"]
TARGETS[MU + "checkpoint/integrity_schema.py"] = INTEGRITY_TESTS
TARGETS[MU + "checkpoint/options.py"] = [
    CK + "test_gate_options_edges.py",
    CK + "test_gate_core.py",
    "tests/unit/plugins/modules/test_rlark_ckpt_gate.py",
    UT + "test_stop_policy.py",
]
TARGETS[MU + "checkpoint/sources.py"] = [
    "tests/unit/plugins/modules/test_gate_task_edges.py",
    CK + "test_s3_source.py",
    "tests/unit/plugins/modules/test_rlark_ckpt_gate.py",
]
TARGETS[MU + "checkpoint/rules.py"] = [CK + "test_rule_registry.py", UT + "test_findings_catalogue.py"]
TARGETS[MU + "checkpoint/gate_task.py"] = [
    "tests/unit/plugins/modules/test_gate_task_edges.py",
    "tests/unit/plugins/modules/test_rlark_ckpt_gate.py",
]
TARGETS[MU + "redact.py"] = [
    UT + "test_redact_edges.py",
    UT + "test_secret_rules.py",
    UT + "test_redact_records.py",
    "tests/unit/plugins/modules/test_module_result_masking.py",
]
# records.py's callers: the guarded-stop journal (stop records) and the exported logs' records.
TARGETS[MU + "records.py"] = [
    UT + "test_records_edges.py",
    UT + "test_records_runs.py",
    UT + "test_redact_records.py",
    UT + "test_guarded_stop_transaction.py",
    UT + "test_stop_log_exports.py",
]
# jobs.py's callers: the job modules (present, stopped, absent, running, waiting after a write) and the guarded stop.
TARGETS[MU + "jobs.py"] = [
    UT + "test_jobs_edges.py",
    UT + "test_jobs.py",
    UT + "test_jobs_write_faults.py",
    "tests/unit/plugins/modules/test_rlark_job_modules.py",
    "tests/unit/plugins/modules/test_rlark_job_running.py",
    "tests/unit/plugins/modules/test_rlark_job_wait_after_write.py",
    UT + "test_guarded_stop_core.py",
    UT + "test_guarded_stop_transaction.py",
]

# The guarded-stop core: when a stop may happen (its own tests live with the stop transaction's).
TARGETS[MU + "guarded_stop/policy.py"] = [UT + "test_stop_policy.py", UT + "test_guarded_stop_transaction.py"]
# The stop record's write-ahead log: its own tests, and those of its callers (transaction.py, recovery.py).
TARGETS[MU + "guarded_stop/journal.py"] = [UT + "test_journal_edges.py", UT + "test_guarded_stop_transaction.py"]

# The checkpoint location (issue 26, second half): its own tests and its callers' (filters, resume copy).
TARGETS[MU + "checkpoint/location.py"] = [
    UT + "test_location_edges.py",
    UT + "test_jobspec.py",
    "tests/unit/plugins/filter/test_query_filter.py",
    UT + "test_playbook_core.py",
]

# What one pass over a step keeps: its own tests, then the gate's and the S3 listing's (its callers).
TARGETS[MU + "checkpoint/step_listing.py"] = [
    CK + "test_step_listing.py",
    CK + "test_gate_core.py",
    CK + "test_s3_source.py",
    CK + "test_gate_siblings.py",
]

# The layout table, then what reads a step's names (backend, runner, parts) and its ranks: own tests first.
TARGETS[MU + "checkpoint/layouts.py"] = [CK + "test_layouts_edges.py", CK + "test_gate_core.py"] + [
    CK + name for name in ("test_rule_registry.py", "test_s3_source.py", "test_integrity.py")
]

TARGETS[MU + "checkpoint/identify.py"] = [CK + "test_identify_edges.py", CK + "test_gate_core.py"] + [
    CK + "test_gate_siblings.py",
    CK + "test_gate_tolerances.py",
]

TARGETS[MU + "checkpoint/parallelism.py"] = [CK + "test_parallelism_edges.py", CK + "test_gate_core.py"] + [
    CK + "test_gate_tolerances.py"
]

# The tree proof: its own tests and the resume's original-tree guard (dir_guard reads its diffs).
TARGETS[MU + "checkpoint/tree.py"] = [CK + "test_tree_edges.py", UT + "test_checkpoint_dirs.py"]

# The DCP .metadata reader, its forked prefetch and the check against the shards (issue 26): their own tests,
# then the gate's that reach them (lines traced per test file); the matrix only where it reaches lines no other does.
TARGETS[MU + "checkpoint/dcp_check.py"] = [
    CK + "test_dcp_check_edges.py",
    CK + "test_dcp_metadata.py",
    CK + "test_dcp_prefetch.py",
    CK + "test_dcp_written_by_torch.py",
    CK + "test_gate_core.py",
    CK + "test_gate_matrix.py",
]
TARGETS[MU + "checkpoint/dcp_metadata.py"] = [
    CK + "test_dcp_metadata_edges.py",
    CK + "test_dcp_metadata.py",
    CK + "test_dcp_prefetch.py",
    CK + "test_dcp_written_by_torch.py",
]
TARGETS[MU + "checkpoint/dcp_prefetch.py"] = [
    CK + "test_dcp_prefetch_edges.py",
    CK + "test_dcp_prefetch.py",
    CK + "test_dcp_metadata.py",
    CK + "test_gate_core.py",
]
# The local source (the walk of a hostPath step): its own tests, then those of the gate, head start, manifest and
# Megatron lists that walk real directories (the matrix's 280 gate runs read layouts, not the walk: left out).
TARGETS[MU + "checkpoint/local.py"] = [
    CK + "test_local_edges.py",
    CK + "test_gate_core.py",
    CK + "test_gate_edges.py",
    CK + "test_dcp_prefetch.py",
    CK + "test_integrity.py",
    CK + "test_megatron_integrity_list.py",
]
# The S3 source: its own tests over a scripted client, then the gate's over a paging fake S3.
TARGETS[MU + "checkpoint/s3.py"] = [CK + "test_s3_edges.py", CK + "test_s3_source.py"]
# Where a backup lives (a directory, a listing read on the backup host, an S3 prefix): the backup's tests that use it.
TARGETS[MU + "checkpoint/backup_store.py"] = [
    CK + "test_backup_store_edges.py",
    CK + "test_backup.py",
    CK + "test_backup_copy.py",
]

# Mutants that cannot run at all: cosmic-ray's own name for them is "incompetent".
PYTEST = "-x -q -p no:cacheprovider -p no:hypothesispytest -p no:randomly -p mutation_builtins"


def slug(module):
    return module[len(MU) :].replace("/", "-").rsplit(".", 1)[0]


def session_path(module):
    return os.path.join(SESSIONS, slug(module) + ".sqlite")


def read(path):
    with open(path) as handle:
        return handle.read()


def sha(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def copy_collections(module):
    """Each session's own copy of the tree (so a quick run or another module never pulls it from under one)."""
    return os.path.join(SESSIONS, slug(module) + ".tree")


def copy_root(module):
    return os.path.join(copy_collections(module), "ansible_collections", "rlark", "ops")


def sync_copy(module):
    """The tracked and untracked (not ignored) files of the checkout, copied afresh."""
    copy = copy_root(module)
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.decode()
    shutil.rmtree(copy, ignore_errors=True)
    for rel in filter(None, files.split("\0")):
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue
        dst = os.path.join(copy, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)
    # What `make collection` makes in a checkout (tests that run ansible-doc look for it).
    link = os.path.join(copy, ".build", "collections", "ansible_collections", "rlark", "ops")
    os.makedirs(os.path.dirname(link))
    os.symlink(copy, link)


def test_command(module):
    env = "env PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=%s ANSIBLE_COLLECTIONS_PATH=%s" % (
        shlex.quote(os.path.join(ROOT, "hack")),
        shlex.quote(copy_collections(module)),
    )
    return "%s %s -m pytest %s %s" % (env, shlex.quote(sys.executable), PYTEST, " ".join(TARGETS[module]))


def run_tests(module):
    started = time.monotonic()
    proc = subprocess.run(
        shlex.split(test_command(module)), cwd=copy_root(module), capture_output=True, text=True, check=False
    )
    return proc.returncode, time.monotonic() - started, proc.stdout + proc.stderr


def canary(module):
    """The selected tests must fail when the copy's module cannot be imported."""
    path = os.path.join(copy_root(module), module)
    with open(path) as handle:
        original = handle.read()
    with open(path, "w") as handle:
        handle.write('raise ImportError("mutation canary")\n' + original)
    try:
        code = run_tests(module)[0]
    finally:
        with open(path, "w") as handle:
            handle.write(original)
    if code == 0:
        sys.exit("canary: the tests for %s pass with it unimportable: they do not import the copy" % module)


def write_config(module, timeout):
    config = os.path.join(SESSIONS, slug(module) + ".toml")
    with open(config, "w") as handle:
        handle.write(
            "[cosmic-ray]\nmodule-path = %s\ntimeout = %.1f\nexcluded-modules = []\ntest-command = %s\n\n"
            '[cosmic-ray.distributor]\nname = "local"\n' % (_toml(module), timeout, _toml(test_command(module)))
        )
    return config


def _toml(text):
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def changed_lines(module, since):
    out = subprocess.run(
        ["git", "diff", "-U0", since, "--", module], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    lines = set()
    for match in re.finditer(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", out, re.M):
        start, count = int(match.group(1)), int(match.group(2) or 1)
        lines.update(range(start, start + count))
    return lines


def skip_unchanged(session, lines):
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with use_db(session, WorkDB.Mode.open) as db:
        skip = [
            item.job_id
            for item in db.pending_work_items
            if not any(set(range(m.start_pos[0], m.end_pos[0] + 1)) & lines for m in item.mutations)
        ]
        db.set_multiple_results(skip, WorkResult(output="line unchanged", worker_outcome=WorkerOutcome.SKIPPED))
    return len(skip)


def reset_survivors(session, operator=None):
    """Forget the survivors' results (and, with ``operator``, those of every mutant it made)."""
    import sqlite3

    with sqlite3.connect(session) as db:
        count = db.execute("DELETE FROM work_results WHERE lower(test_outcome) = 'survived'").rowcount
        if operator:
            count += db.execute(
                "DELETE FROM work_results WHERE job_id IN (SELECT job_id FROM mutation_specs WHERE operator_name = ?)",
                (operator,),
            ).rowcount
        return count


def cosmic(module, *args):
    subprocess.run([os.path.join(BIN, "cosmic-ray"), *args], cwd=copy_root(module), check=True)


def run_module(module, retest=False, since=None, operator=None):
    os.makedirs(SESSIONS, exist_ok=True)
    session = session_path(module)
    stamp = session + ".sha256"
    sync_copy(module)
    code, took, output = run_tests(module)
    if code != 0:
        sys.exit("baseline: the tests for %s fail unmutated:\n%s" % (module, output[-3000:]))
    canary(module)
    config = write_config(module, timeout=max(10.0, 5 * took))
    if retest:
        if not os.path.exists(session) or read(stamp) != sha(os.path.join(ROOT, module)):
            sys.exit("--retest: no session for %s, or the module changed since it: run it whole" % module)
        print(">> %s: re-running %d survivors" % (module, reset_survivors(session, operator)))
    else:
        for stale in (session, stamp):
            if os.path.exists(stale):
                os.remove(stale)
        cosmic(module, "init", config, session)
        with open(stamp, "w") as handle:
            handle.write(sha(os.path.join(ROOT, module)))
        if since is not None:
            print(">> %s: %d mutants on unchanged lines skipped" % (module, skip_unchanged(session, since)))
    print(">> %s: baseline %.1fs, timeout %.0fs" % (module, took, max(10.0, 5 * took)))
    cosmic(module, "exec", config, session)


def merge_base(since):
    """The merge base of HEAD with ``since`` (or ``origin/<since>``, as in a CI clone without the branch)."""
    for rev in (since, "origin/" + since):
        command = ["git", "merge-base", rev, "HEAD"]
        found = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        if found.returncode == 0:
            return found.stdout.strip()
    return None


def cmd_run(args):
    global SESSIONS
    modules = args.modules or list(TARGETS)
    unknown = [m for m in modules if m not in TARGETS]
    if unknown:
        sys.exit("not in the safety core's TARGETS: %s" % ", ".join(unknown))
    if args.since:
        # Quick sessions of their own: the full ones (and bench/results/mutation.md) stay as they are.
        SESSIONS = os.path.join(WORK, "quick")
        shutil.rmtree(SESSIONS, ignore_errors=True)
        base = merge_base(args.since)
        if base is None:
            print(
                ">> quick mode: neither %s nor origin/%s is a commit here: nothing to compare (set BASE=)"
                % (args.since, args.since)
            )
            return 0
        for module in modules:
            lines = changed_lines(module, base)
            if lines:
                run_module(module, since=lines)
            else:
                print(">> %s: unchanged since %s" % (module, args.since))
    else:
        for module in modules:
            run_module(module, retest=args.retest, operator=args.operator)
    return cmd_report(args, write=not args.since)


# -- report -----------------------------------------------------------------------------------------------


def mutant_id(mutation):
    """path:line:col operator, with the offset for NumberReplacer (it makes two mutants per number)."""
    name = mutation.operator_name
    if name == "core/NumberReplacer":
        name += "(+1)" if mutation.occurrence % 2 == 0 else "(-1)"
    return "%s:%d:%d %s" % (mutation.module_path, mutation.start_pos[0], mutation.start_pos[1], name)


def load_equivalents():
    entries = {}
    with open(EQUIVALENTS) as handle:
        for number, line in enumerate(handle, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _sep, reason = (part.strip() for part in line.partition("|"))
            if not reason:
                sys.exit("%s:%d: an equivalent mutant without its reason" % (EQUIVALENTS, number))
            entries[key] = reason
    return entries


def session_figures(module, equivalents):
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    figures = {"mutants": 0, "killed": 0, "equivalent": 0, "incompetent": 0, "skipped": 0, "pending": 0}
    survivors = []
    with use_db(session_path(module), WorkDB.Mode.open) as db:
        results = dict(db.results)
        for item in db.work_items:
            result = results.get(item.job_id)
            if result is None:
                figures["pending"] += 1
                continue
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                figures["skipped"] += 1
                equivalents.pop(mutant_id(item.mutations[0]), None)  # not run (quick mode): neither used nor stale
                continue
            figures["mutants"] += 1
            key = mutant_id(item.mutations[0])
            if result.test_outcome == TestOutcome.KILLED:
                figures["killed"] += 1
            elif result.test_outcome == TestOutcome.INCOMPETENT:
                figures["incompetent"] += 1
            elif key in equivalents:
                figures["equivalent"] += 1
                equivalents[key] = None  # used
            else:
                survivors.append((key, result.diff))
    return figures, survivors


TABLE_START = "<!-- mutation-table:start -->"
TABLE_END = "<!-- mutation-table:end -->"


def previous_rows():
    """The table's rows as bench/results/mutation.md has them, by module (sessions live in one checkout's
    .build: a module run in another checkout keeps the figures its run wrote)."""
    if not os.path.exists(RESULTS):
        return {}
    table = re.search(re.escape(TABLE_START) + "(.*?)" + re.escape(TABLE_END), read(RESULTS), re.S)
    return {m.group(1): m.group(0) for m in re.finditer(r"^\| `([^`]+)` \|.*$", table.group(1) if table else "", re.M)}


def cmd_report(_args=None, write=True):
    equivalents = load_equivalents()
    rows, unexplained = [], []
    previous = previous_rows()
    for module in TARGETS:
        if not os.path.exists(session_path(module)):
            if write:
                rows.append(previous.get(module, "| `%s` | not yet run | | | | | |" % module))
            continue
        fig, survivors = session_figures(module, equivalents)
        unexplained += survivors
        counted = fig["mutants"] - fig["incompetent"]
        rate = 100.0 * (fig["killed"] + fig["equivalent"]) / counted if counted else 100.0
        note = []
        if fig["skipped"]:
            note.append("%d skipped (quick mode)" % fig["skipped"])
        if fig["pending"]:
            note.append("%d not run" % fig["pending"])
        if fig["incompetent"]:
            note.append("%d incompetent (not counted)" % fig["incompetent"])
        rows.append(
            "| `%s` | %d | %d | %d | %d | %.1f%% | %s |"
            % (module, counted, fig["killed"], fig["equivalent"], len(survivors), rate, ", ".join(note))
        )
    table = "\n".join(
        [
            TABLE_START,
            "| module | mutants | killed | equivalent | survivors | kill rate | note |",
            "|---|---:|---:|---:|---:|---:|---|",
            *rows,
            TABLE_END,
        ]
    )
    if write:
        os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
        empty = "# Mutation testing\n\n%s\n%s\n" % (TABLE_START, TABLE_END)
        text = read(RESULTS) if os.path.exists(RESULTS) else empty
        text = re.sub(re.escape(TABLE_START) + ".*?" + re.escape(TABLE_END), lambda _: table, text, flags=re.S)
        with open(RESULTS, "w") as handle:
            handle.write(text)
    print(table)
    stale = [key for key, reason in equivalents.items() if reason is not None and _ran(key)]
    for key in stale:
        print("stale equivalent (no such survivor now): %s" % key)
    for key, diff in unexplained:
        print(
            "\nSURVIVED %s | \n%s"
            % (key, "\n".join(x for x in (diff or "").splitlines() if x[:1] in "+-@" and x[:3] not in ("---", "+++")))
        )
    if unexplained:
        print("\n%d survivors neither killed nor listed in %s" % (len(unexplained), EQUIVALENTS))
    return 1 if unexplained or stale else 0


def _ran(key):
    module = key.split(":", 1)[0]
    return module in TARGETS and os.path.exists(session_path(module))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("modules", nargs="*")
    run.add_argument("--retest", action="store_true")
    run.add_argument("--since")
    run.add_argument("--operator", help="with --retest: also re-run every mutant of this operator")
    run.set_defaults(func=cmd_run)
    sub.add_parser("report").set_defaults(func=cmd_report)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
