# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The continuity verdict and the silent-restart judgement over RLinf's per-step metric tables."""

from ansible_collections.rlark.ops.plugins.module_utils import continuity, stop_record, verify

BAR = "█" * 4 + "░" * 36


def table(step, metrics, total=100, step_time=1.0, prefix=""):
    """One step as RLinf's print_metrics_table prints it (120 columns; 3 cells a row)."""
    lines = ["", "╭" + "─" * 118 + "╮", "├" + "─" * 52 + " Metric Table " + "─" * 52 + "┤"]
    lines.append(("│ Global Step: %4d/%d │ Progress: %s │   4.0%%" % (step, total, BAR)).ljust(118) + " │")
    lines.append(("│ Elapsed: 00:05 │ ETA: 01:35 │ Step Time: %.3fs" % step_time).ljust(118) + " │")
    for section in ("Time", "Rollout", "Training/Actor"):
        cells = [
            "%s=%s" % (k[len(section) + 1 :], v) for k, v in sorted(metrics.items()) if k.startswith(section + "/")
        ]
        if not cells:
            continue
        lines += ["├" + "─" * 50 + " %s " % section + "─" * 50 + "┤", "│" + " " * 118 + "│"]
        for i in range(0, len(cells), 3):
            row = (cells[i : i + 3] + ["", ""])[:3]
            lines.append("│%s│%s│%s│" % (row[0].ljust(39), row[1].ljust(39), row[2].ljust(38)))
        lines.append("│" + " " * 118 + "│")
    lines.append("╰" + "─" * 118 + "╯")
    return "\n".join(prefix + line for line in lines) + "\n"


def values(trained, time_step="1.002"):
    return {
        "Time/step": time_step,
        "Rollout/rewards": "%.3f" % (0.1 + trained / 100.0),
        "Rollout/advantages_mean": "%.3f" % (0.5 - trained / 1000.0),
        "Training/Actor/actor/policy_loss": "%.3f" % (0.2 + trained / 500.0),
    }


def run(first, last, offset=0, **kw):
    return "".join(table(s, values(s + offset), **kw) + "Global Step: %d/100\n" % s for s in range(first, last + 1))


def old_run(last=8):
    return continuity.as_list(continuity.parse_metrics(run(1, last)))


def test_parser_reads_every_cell_and_the_padded_step():
    parsed = continuity.parse_metrics("(pid=42) noise\n" + table(7, values(7), prefix="(EmbodiedRunner pid=9) "))
    assert list(parsed) == [7]
    assert parsed[7]["metrics"] == values(7)
    assert parsed[7]["step_time"] == 1.0 and parsed[7]["max_steps"] == 100


def test_a_correct_resume_is_exact_and_timings_do_not_count():
    new = "".join(table(s, values(s, time_step="9.9")) for s in (7, 8))
    report = continuity.compare(old_run(), new, 6)
    assert report["verdict"] == "continuity-exact" and report["compared_steps"] == [7, 8]
    assert report["findings"] == []


def test_within_tolerance_and_per_metric_tolerance():
    moved = dict(values(7), **{"Rollout/rewards": "%.3f" % (float(values(7)["Rollout/rewards"]) + 0.001)})
    report = continuity.compare(old_run(), table(7, moved), 6)
    assert report["verdict"] == "continuity-within-tolerance"
    assert report["within_tolerance"][0]["metric"] == "Rollout/rewards"
    strict = continuity.compare(old_run(), table(7, moved), 6, tolerance={"Rollout/*": 0})
    assert strict["verdict"] == "continuity-broken"


def test_another_checkpoint_breaks_continuity_naming_step_and_metric():
    report = continuity.compare(old_run(), run(7, 8, offset=-3), 6)
    assert report["verdict"] == "continuity-broken"
    assert report["first_difference"]["step"] == 7
    assert report["first_difference"]["metric"] == "Rollout/rewards"
    (found,) = report["findings"]
    assert (found["id"], found["severity"], found["step"], found["metric"]) == (
        "continuity-broken",
        "error",
        7,
        "Rollout/rewards",
    )
    assert "rlark_continuity_tolerance" in found["hint"]


def test_no_step_after_the_checkpoint_is_unverifiable_not_a_pass():
    report = continuity.compare(old_run(last=6), run(7, 8), 6)
    assert report["verdict"] == "continuity-unverifiable"
    assert [(f["id"], f["severity"]) for f in report["findings"]] == [("continuity-unverifiable", "warning")]
    resumed = "Resuming training from checkpoint directory /c/global_step_6.\n" + run(7, 8)
    judged = verify.resume_report(resumed, "/c/global_step_6", 6, old_run(last=6))
    assert judged["ok"] and judged["continuity"]["verdict"] == "continuity-unverifiable"
    broken = verify.resume_report(
        "Resuming training from checkpoint directory /c/global_step_6.\n" + run(7, 8, offset=5),
        "/c/global_step_6",
        6,
        old_run(),
    )
    assert not broken["ok"] and broken["continuity"]["verdict"] == "continuity-broken"


def test_restart_verdicts():
    old = old_run()
    low = continuity.restart_verdict(old, 1, run(1, 1), 6)
    assert low["decided"] and low["finding"]["id"] == "resume-restarted-from-scratch"
    assert low["finding"]["severity"] == "error" and low["finding"]["first_step"] == 1
    fresh = continuity.restart_verdict(old, 7, table(7, values(1)), 6)  # step 1's metrics under the number 7
    assert fresh["finding"]["id"] == "resume-restarted-from-scratch"
    assert continuity.restart_verdict(old, 7, run(7, 7), 6) == {"decided": True, "finding": None}
    assert continuity.restart_verdict(old, 7, run(7, 7, offset=-3), 6)["finding"] is None  # left to continuity
    assert continuity.restart_verdict(old, None, "", 6)["decided"] is False
    assert continuity.restart_verdict(old, 7, "Global Step: 7/100\n", 6)["decided"] is False


def test_padded_step_counter_is_the_first_step():
    assert verify.resume_report(table(7, values(7)), "/c/global_step_6", 6)["first_step"] == 7


def test_lost_work_in_steps_and_seconds():
    log = "Saving checkpoint at step 6.\n" + run(6, 8)
    lost = stop_record.lost_work(log, 6)
    assert lost["steps_after_checkpoint"] == 2 and lost["last_logged_step"] == 8
    assert lost["seconds_after_checkpoint"] == 2.004 and lost["seconds_from"] == "time/step of each step"
    assert lost["continuity_window"] == {"first_step": 7, "last_step": 8}
    bare = stop_record.lost_work("Saving checkpoint at step 6.\nGlobal Step: 6/9\nGlobal Step: 7/9\n", 6)
    assert bare["seconds_after_checkpoint"] is None and bare["continuity_window"] == {"first_step": 7, "last_step": 7}
    exact = stop_record.lost_work("Saving checkpoint at step 6.\n" + run(6, 6), 6)
    assert exact["continuity_window"] is None and exact["seconds_after_checkpoint"] == 0.0


def test_wait_pattern_is_the_window_end():
    assert continuity.wait_pattern(old_run(), 6) == r"│\s*Global Step:\s*8/"
    assert continuity.wait_pattern(old_run(last=6), 6) is None
    assert verify.resume_patterns("/c/global_step_6", old_run(), 6)["wait_for"][-1] == r"│\s*Global Step:\s*8/"
