"""Benchmark figures: each bench saves JSON under bench/results/; figures.md gathers them for reading.

``make bench`` (all benches) and ``make bench-quick`` (run by ``make test`` and CI: the benches that need no
sandbox and finish in seconds) both end by rewriting bench/results/figures.md, which the README links.
"""

import datetime
import json
import os
import platform

# Quick mode runs inside `make test`, possibly beside CPU burners: it records figures (and whether each met
# its budget) but enforces no budget; `make bench` on a quiet machine does.
QUICK = os.environ.get("RLARK_BENCH_QUICK") == "1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
FIGURES = os.path.join(RESULTS, "figures.md")


def within_budget(ok):
    """True when the budget was met or is not enforced (quick mode); the figure records ``ok`` either way."""
    return ok or QUICK


def save(name, data):
    """Write one bench's figures to bench/results/<name> (JSON) and print them."""
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, name), "w") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
    print("\n%s: %s" % (name, json.dumps(data, sort_keys=True)))


def write_figures(mode):
    """bench/results/figures.md: every bench/results/*.json as a table, newest run first in the header."""
    os.makedirs(RESULTS, exist_ok=True)
    lines = [
        "# rlark.ops benchmark figures",
        "",
        "Written by `make bench` / `make bench-quick` (%s mode) on %s, %s, %d CPU(s). Each section is one "
        "`bench/results/*.json`; its mtime says when it was measured."
        % (
            mode,
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            platform.platform(terse=True),
            os.cpu_count() or 0,
        ),
    ]
    for name in sorted(os.listdir(RESULTS)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(RESULTS, name)
        with open(path) as fh:
            try:
                data = json.load(fh)
            except ValueError:
                continue
        stamp = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
        lines += ["", "## %s (measured %s)" % (name, stamp.strftime("%Y-%m-%d %H:%M UTC"))]
        records = {}
        if isinstance(data, dict):
            records = {key: value for key, value in data.items() if _is_records(value)}
            data = {key: value for key, value in data.items() if key not in records}
        lines += ["", "| figure | value |", "|---|---|"]
        lines += ["| %s | %s |" % (key, _text(value)) for key, value in _flatten(data)]
        for key, value in records.items():
            lines += ["", "### %s" % key, ""] + _record_table(value)
    with open(FIGURES, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return FIGURES


def _is_records(value):
    """A dict of two or more dicts (runs keyed by their start-end time, say): one table row each."""
    return isinstance(value, dict) and len(value) > 1 and all(isinstance(v, dict) for v in value.values())


def _record_table(records):
    """Columns for the scalar fields every record has; the other fields of a row in its last column."""
    rows = list(records.values())
    common = [k for k in rows[0] if all(k in row and not isinstance(row[k], (dict, list)) for row in rows)]
    lines = ["| | %s | more |" % " | ".join(common), "|---|%s---|" % ("---|" * len(common))]
    for key, row in records.items():
        others = {k: v for k, v in row.items() if k not in common}
        more = "; ".join("%s %s" % (k, _text(v)) for k, v in _flatten(others))
        lines.append("| %s | %s | %s |" % (key, " | ".join(_text(row[k]) for k in common), more))
    return lines


def _text(value):
    return (value if isinstance(value, str) else json.dumps(value)).replace("|", "\\|")


def _flatten(data, prefix=""):
    if isinstance(data, dict):
        for key in sorted(data):
            yield from _flatten(data[key], "%s%s%s" % (prefix, "." if prefix else "", key))
    else:
        yield prefix or "value", data
