"""bench/results/suite-profile.md from the profiles of the integration groups (tests/integration/suite_profile.py).

    python hack/suite_profile.py [--out FILE] PROFILE.jsonl ...   (make integration writes .build/suite-profile/)

Per group: tests, wall time summed over its tests, and where it went: fixture setup (the sandbox start
falls on a session's first test), waits (the main thread in time.sleep: polling the sandbox or the
simulator), child processes (ansible-playbook, ansible-runner, sandboxctl), the rest of the calls (API
and file reads, assertions) and teardown, with the CPU seconds the child processes used; then the child
processes by program (ansible-playbook by playbook: runs, wall seconds, seconds per run; a noop playbook costs
about a second), and the slowest tests of the whole run.
"""

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "results", "suite-profile.md")
COLUMNS = ("setup", "waits", "children", "rest", "teardown")


def load(path):
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def split(test):
    """The test's seconds by column (``rest`` = call - waits - children)."""
    call = test.get("call", 0.0)
    waits, children = test.get("waits", 0.0), test.get("children", 0.0)
    return {
        "setup": test.get("setup", 0.0),
        "waits": waits,
        "children": children,
        "rest": max(0.0, call - waits - children),
        "teardown": test.get("teardown", 0.0),
    }


def render(groups, note):
    lines = ["# Where the integration suite's time goes (issue 29)", "", note, ""]
    lines += [
        "| group | tests | total s | setup s | waits s | children s | rest s | teardown s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    everything = []
    for name, tests in groups:
        sums = {c: sum(split(t)[c] for t in tests) for c in COLUMNS}
        total = sum(sums.values())
        cells = " | ".join("%.0f (%d%%)" % (sums[c], 100 * sums[c] / total if total else 0) for c in COLUMNS)
        lines.append("| %s | %d | %.0f | %s |" % (name, len(tests), total, cells))
        everything += [(sum(split(t).values()), name, t) for t in tests]
    lines += programs(groups)
    lines += [
        "",
        "Slowest tests:",
        "",
        "| s | group | test | setup | waits | children | rest |",
        "|---:|---|---|---:|---:|---:|---:|",
    ]
    for seconds, name, test in sorted(everything, key=lambda row: -row[0])[:25]:
        part = split(test)
        lines.append(
            "| %.1f | %s | `%s` | %.1f | %.1f | %.1f | %.1f |"
            % (seconds, name, test["test"], part["setup"], part["waits"], part["children"], part["rest"])
        )
    return "\n".join(lines) + "\n"


def programs(groups):
    """Child processes by program over all groups (profiles written before the per-program split have none)."""
    runs, cpu = {}, 0.0
    for _name, tests in groups:
        for test in tests:
            cpu += test.get("children_cpu", 0.0)
            for program, (count, seconds) in (test.get("runs") or {}).items():
                total = runs.setdefault(program, [0, 0.0])
                total[0], total[1] = total[0] + count, total[1] + seconds
    if not runs:
        return []
    lines = ["", "Child processes: %.0f CPU seconds (user + system, with their own children)." % cpu, ""]
    lines += ["| program | runs | wall s | s per run |", "|---|---:|---:|---:|"]
    for program, (count, seconds) in sorted(runs.items(), key=lambda item: -item[1][1])[:20]:
        lines.append("| `%s` | %d | %.0f | %.1f |" % (program, count, seconds, seconds / count))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profiles", nargs="+")
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--note", default="Seconds summed over each group's tests (the groups run in parallel).")
    args = parser.parse_args(argv)
    groups = [(os.path.basename(p).rsplit(".", 1)[0], load(p)) for p in args.profiles]
    with open(args.out, "w") as handle:
        handle.write(render(groups, args.note))
    print("suite profile: %s" % os.path.relpath(args.out, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
