# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench/figures.py: bench/results/figures.md shows records (runs keyed by their start-end time) as a table."""

import importlib.util
import json
import os
import pathlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def figures_writing_into(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_figures", os.path.join(ROOT, "bench", "figures.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "RESULTS", str(tmp_path))
    monkeypatch.setattr(module, "FIGURES", str(tmp_path / "figures.md"))
    return module


def test_runs_are_one_row_each_with_their_start_end_and_minutes(tmp_path, monkeypatch):
    figures = figures_writing_into(tmp_path, monkeypatch)
    suite_time = {
        "targets_minutes": {"warm_make_test": 12},
        "runs": {
            "2026-12-05 18:16:30-18:25:32 warm 8ffac06": {"kind": "warm", "minutes": 9.03, "rc": 0, "note": "a|b"},
            "2026-12-05 18:52:18-19:05:27 under load 8ffac06": {"kind": "under load", "minutes": 13.15, "rc": 0},
        },
    }
    (tmp_path / "suite_time.json").write_text(json.dumps(suite_time))
    text = pathlib.Path(figures.write_figures("quick")).read_text()

    assert "| targets_minutes.warm_make_test | 12 |" in text
    table = text.split("### runs\n\n", 1)[1].splitlines()
    assert table[0] == "| | kind | minutes | rc | more |"
    assert table[2] == "| 2026-12-05 18:16:30-18:25:32 warm 8ffac06 | warm | 9.03 | 0 | note a\\|b |"
    assert table[3] == "| 2026-12-05 18:52:18-19:05:27 under load 8ffac06 | under load | 13.15 | 0 |  |"


def test_a_figure_that_is_not_a_set_of_records_stays_a_row(tmp_path, monkeypatch):
    figures = figures_writing_into(tmp_path, monkeypatch)
    (tmp_path / "task_cost.json").write_text(json.dumps({"seconds": {"find": 0.3}, "goal_met": True}))
    text = pathlib.Path(figures.write_figures("quick")).read_text()

    assert "| seconds.find | 0.3 |" in text
    assert "| goal_met | true |" in text
    assert "###" not in text
