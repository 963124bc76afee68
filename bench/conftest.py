"""Benchmarks: RLARK_BENCH_QUICK=1 keeps the quick ones (no sandbox, seconds); figures.md is written at the end."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import figures

# Files whose benches need no sandbox and finish in seconds: what `make test` and CI run (make bench-quick).
QUICK_FILES = ("test_bench_render.py", "test_bench_linear_text.py")


def pytest_collection_modifyitems(config, items):
    if not figures.QUICK:
        return
    kept = [item for item in items if os.path.basename(str(item.fspath)) in QUICK_FILES]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept


def pytest_sessionfinish(session, exitstatus):
    path = figures.write_figures("quick" if figures.QUICK else "full")
    print("\nbench figures: %s" % os.path.relpath(path, figures.ROOT))
