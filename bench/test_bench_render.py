# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validate + render + review of a 16-role manifest as filters on the controller: median <= 50 ms."""

import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "module_utils"))
if os.path.join(ROOT, ".build", "collections") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, ".build", "collections"))

from ansible_collections.rlark.ops.plugins.filter import migration as filters  # noqa: E402
from figures import save, within_budget  # noqa: E402
from migration_inputs import big_manifest  # noqa: E402

BUDGET_MS = 50.0
REPEATS = 40


def _median_ms(func):
    func(-1)  # warm-up: compiles the schema validators once, as the first call of a play does
    samples = []
    for i in range(REPEATS):
        start = time.perf_counter()
        func(i)
        samples.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(samples), max(samples)


def record(name, median, worst):
    """Save the figures of one 16-role bench; fail over budget unless in quick mode."""
    ok = median <= BUDGET_MS
    save(
        name,
        {
            "roles": 16,
            "median_ms": round(median, 1),
            "max_ms": round(worst, 1),
            "budget_ms": BUDGET_MS,
            "within_budget": ok,
        },
    )
    assert within_budget(ok), median


def test_bench_preflight_16_roles():
    manifest, profile = big_manifest(16)

    def preflight(i):
        # New content every repeat: no memoised validation, the cost of a fresh play.
        manifest["job"]["description"] = "run %d" % i
        result = filters.preflight(manifest, profile)
        assert result["ok"] and len(result["job"]["spec"]["tasks"]) == 16

    median, worst = _median_ms(preflight)
    print(
        "\nbench render: preflight filter (validate + render + review + redact), 16 roles, fresh input: "
        "median %.1f ms, max %.1f ms" % (median, worst)
    )
    record("render_preflight.json", median, worst)


def test_bench_filter_chain_16_roles():
    manifest, profile = big_manifest(16)

    def chain(_i):
        assert filters.validate_manifest(manifest)["ok"] and filters.validate_manifest(profile, "profile")["ok"]
        job = filters.render_job(manifest, profile)
        assert filters.review_job(job, manifest, profile) == []

    median, worst = _median_ms(chain)
    print(
        "\nbench render: validate_manifest x2 + render_job + review_job filters, 16 roles: median %.1f ms, max %.1f ms"
        % (median, worst)
    )
    record("render_filter_chain.json", median, worst)
