"""Combine a `make coverage` run's data files and report line and branch coverage of plugins/.

    python hack/coverage_summary.py .build/coverage

Writes <dir>/summary.json ({"lines": {...}, "branches": {...}, "files": {path: {...}}}) and <dir>/coverage.json
(coverage.py's own JSON report), and prints one line per total. Fails when no data file was written: a coverage
run that measured nothing must not read as 0 %.
"""

import glob
import json
import os
import sys

import coverage

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def figure(covered, total):
    return {"covered": covered, "total": total, "percent": round(100.0 * covered / total, 2) if total else 100.0}


def summarize(report):
    """The totals and a per-file table from coverage.py's JSON report."""
    totals = report["totals"]
    files = {
        path: {
            "lines": [data["summary"]["covered_lines"], data["summary"]["num_statements"]],
            "branches": [data["summary"]["covered_branches"], data["summary"]["num_branches"]],
        }
        for path, data in sorted(report["files"].items())
    }
    return {
        "lines": figure(totals["covered_lines"], totals["num_statements"]),
        "branches": figure(totals["covered_branches"], totals["num_branches"]),
        "files": files,
    }


def record_every_file(out):
    """A data file that names every .py file under plugins/ with nothing run: a file no test imports reads 0 %."""
    empty = coverage.Coverage(
        config_file=False,
        data_file=os.path.join(out, "data"),
        data_suffix="all-files",
        branch=True,
        source=[os.path.join(ROOT, "plugins")],
    )
    empty.set_option("report:include_namespace_packages", True)  # plugins/ has no __init__.py
    empty.set_option("run:disable_warnings", ["no-data-collected"])
    empty.start()
    empty.stop()
    empty.save()


def main(argv):
    out = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(ROOT, ".build", "coverage"))
    data_file = os.path.join(out, "data")
    if not glob.glob(data_file + ".*"):
        print("coverage: no data files in %s (run make coverage)" % out, file=sys.stderr)
        return 1
    os.chdir(ROOT)  # [tool.coverage.paths] maps every copy of the collection onto ./plugins
    record_every_file(out)
    cov = coverage.Coverage(config_file=os.path.join(ROOT, "pyproject.toml"), data_file=data_file)
    cov.combine(data_paths=[out])
    cov.save()
    cov.json_report(outfile=os.path.join(out, "coverage.json"))
    with open(os.path.join(out, "coverage.json")) as fh:
        summary = summarize(json.load(fh))
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1, sort_keys=True)
    for kind in ("lines", "branches"):
        figures = summary[kind]
        print(
            "coverage of plugins/ (%s): %d of %d, %.2f %%"
            % (kind, figures["covered"], figures["total"], figures["percent"])
        )
    print("coverage: %d files; per file in %s" % (len(summary["files"]), os.path.join(out, "summary.json")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
