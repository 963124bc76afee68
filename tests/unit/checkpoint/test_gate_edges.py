# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate's choice and its messages, pinned value by value (issue 26: mutants of gate.py that survived)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import gate as G
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.step_listing import StepFacts
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.verdict import StepVerdict

ROW = F.ROWS[0]  # FSDP x embodied, W=2, full weights


def gate(path, **opts):
    params = dict(ROW.gate_params(), quiet_seconds=120)
    params.update(opts)
    return G.run_gate(LocalSource(str(path)), params)


def seed(root, *steps):
    for step, case in steps:
        F.write_local(str(root), "global_step_%d" % step, F.tree(ROW, step, case), age=1000.0 / (step + 1))


def err(id, message="m-" + "x"):
    return {"id": id, "severity": "error", "message": message, "path": "", "hint": ""}


def result(missing=(), findings=(), **extra):
    out = {
        "checkpoint": "/ckpt/global_step_10",
        "step": 10,
        "runner": "embodied",
        "backend": "fsdp",
        "missing": list(missing),
        "findings": list(findings),
    }
    out.update(extra)
    return out


# -- incomplete_message -----------------------------------------------------------------------------------

CUT = (
    "The save did not finish (or a stop cut it off): do not resume from this step and do not stop the Job "
    "until the trainer has written a complete checkpoint"
)


def test_incomplete_message_whole_text():
    head = "Checkpoint /ckpt/global_step_10 (step 10, runner embodied, backend fsdp) is incomplete"
    assert G.incomplete_message(result()) == head + ": see findings. " + CUT + "."
    unknown = result(runner=None, backend="", rule="the rule")
    assert G.incomplete_message(unknown) == (
        "Checkpoint /ckpt/global_step_10 (step 10, runner unknown, backend unknown) is incomplete: see findings."
        " The rule is: the rule. " + CUT + "."
    )
    assert G.incomplete_message(result(rule="")) == head + ": see findings. " + CUT + "."


def test_incomplete_message_missing_entries_four_shown():
    one = G.incomplete_message(result(missing=["a"]))
    assert ": 1 required entry is missing (a)." in one
    four = G.incomplete_message(result(missing=list("abcd")))
    assert ": 4 required entries are missing (a, b, c, d)." in four
    five = G.incomplete_message(result(missing=list("abcde")))
    assert ": 5 required entries are missing (a, b, c, d, ...)." in five


def test_incomplete_message_lists_four_errors_but_not_missing_entries_or_warnings():
    findings = [err("missing-entries", "ME"), dict(err("w", "WARN"), severity="warning")]
    findings += [err("e%d" % i, "E%d" % i) for i in range(5)]
    msg = G.incomplete_message(result(missing=["a"], findings=findings))
    assert ": 1 required entry is missing (a); E0; E1; E2; E3. " in msg
    assert "E4" not in msg and "ME" not in msg and "WARN" not in msg


def test_incomplete_message_newest_complete_step_named_when_another():
    assert G.incomplete_message(result(latest_complete_step=10)).endswith(CUT + ".")
    assert G.incomplete_message(result(latest_complete_step=0)).endswith(CUT + "; the newest complete step is 0.")
    assert G.incomplete_message(result(latest_complete_step=None)).endswith(CUT + ".")


@pytest.mark.parametrize(
    "ids,todo",
    [
        (["backup-missing"], "The checkpoint itself is complete"),
        (["backup-missing", "backup-stale"], "The checkpoint itself is complete"),
        (["backup-missing", "other"], "The save did not finish"),
        (["integrity-mismatch"], "The checkpoint no longer matches"),
        (["integrity-manifest-unreadable"], "The checkpoint no longer matches"),
        (["write-too-recent"], "A save may still be running"),
        (["integrity-mismatch", "write-too-recent"], "The checkpoint no longer matches"),
        (["write-too-recent", "no-layout"], "A save may still be running"),
        (["world-size-ambiguous"], "Pass the parameter"),
        (["parallel-layout-ambiguous"], "Pass the parameter"),
        (["runner-ambiguous"], "Pass the parameter"),
        (["no-layout"], "Pass the parameter"),
        (["something-else"], "The save did not finish"),
    ],
)
def test_incomplete_message_what_to_do(ids, todo):
    msg = G.incomplete_message(result(findings=[err(i) for i in ids]))
    assert msg.split(". ", 1)[1].startswith(todo), msg
    backup = todo.startswith("The checkpoint itself")
    assert ("is complete, but its required backup does not hold it" in msg) is backup
    assert ("is incomplete" in msg) is not backup


def test_incomplete_message_backup_only_by_errors_and_without_missing_entries():
    warned = [dict(err("backup-missing"), severity="warning"), err("write-too-recent")]
    assert "A save may still be running" in G.incomplete_message(result(findings=warned))
    assert "The save did not finish" in G.incomplete_message(result(missing=["a"], findings=[err("backup-missing")]))
    # missing-entries does not count as an error id here: a backup refusal with it stays a backup refusal
    both = G.incomplete_message(result(findings=[err("missing-entries"), err("backup-missing")]))
    assert "is complete, but its required backup" in both


# -- missing-entries finding ------------------------------------------------------------------------------


def verdict(name="global_step_10", missing=()):
    v = StepVerdict(StepFacts(name))
    v.missing = list(missing)
    return v


def test_missing_finding_shows_six_entries():
    assert G._missing_finding(verdict()) == []
    (one,) = G._missing_finding(verdict(missing=["a"]))
    assert one == {
        "id": "missing-entries",
        "severity": "error",
        "path": "a",
        "message": "1 required entry of global_step_10 missing: a",
        "hint": "the save did not finish; do not resume from this step",
    }
    six = G._missing_finding(verdict(missing=list("abcdef")))[0]["message"]
    assert six == "6 required entries of global_step_10 missing: a, b, c, d, e, f"
    seven = G._missing_finding(verdict(missing=list("gbcdefa")))[0]
    assert seven["message"] == "7 required entries of global_step_10 missing: g, b, c, d, e, f, ..."
    assert seven["path"] == "g"


# -- no step, odd names, a step not found -----------------------------------------------------------------


@pytest.mark.parametrize("full_report", [False, True])
def test_no_steps_lists_ten_other_names_sorted(tmp_path, full_report):
    with pytest.raises(G.L.GateError) as e:
        gate(tmp_path, full_report=full_report)
    assert str(e.value) == (
        "no global_step_* directory under %s: nothing has been saved there (check runner.logger.log_path / "
        "runner.output_dir and the experiment name)" % tmp_path
    )
    for i in range(11, -1, -1):
        (tmp_path / ("n%02d" % i)).write_text("")
    with pytest.raises(G.L.GateError) as e:
        gate(tmp_path, full_report=full_report)
    assert str(e.value).endswith("experiment name); found: " + ", ".join("n%02d" % i for i in range(10)))


@pytest.mark.parametrize("full_report", [False, True])
def test_only_odd_names_sorted(tmp_path, full_report):
    for name in ("global_step_9_bak", "global_step_", "global_step_1x"):
        F.write_local(str(tmp_path), name, F.tree(ROW, 1, "complete"), age=100)
    with pytest.raises(G.L.GateError) as e:
        gate(tmp_path, full_report=full_report)
    assert str(e.value) == (
        "no global_step_N directory under %s, only names RLinf cannot resume from: "
        "global_step_, global_step_1x, global_step_9_bak" % tmp_path
    )


@pytest.mark.parametrize("full_report", [False, True])
def test_step_not_found_lists_twenty_steps_newest_first(tmp_path, full_report):
    seed(tmp_path, *[(s, "complete") for s in range(1, 23)])
    with pytest.raises(G.L.GateError) as e:
        gate(tmp_path, step=99, full_report=full_report, verify_payloads=False)
    assert str(e.value) == "no step 99 under %s (newest 22); steps present: %s" % (
        tmp_path,
        ", ".join(str(s) for s in range(22, 2, -1)),
    )


# -- the choice -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("full_report", [False, True])
def test_newest_incomplete_note_whole(tmp_path, full_report):
    seed(tmp_path, (10, "complete"), (20, "marker-missing"))
    r = gate(tmp_path, full_report=full_report)
    notes = [p for p in r["findings"] if p["id"] == "newest-step-incomplete"]
    assert len(notes) == 1 and notes[0]["path"] == "global_step_20" and notes[0]["severity"] == "warning"
    assert notes[0]["message"].startswith("the newest step global_step_20 is incomplete (missing 1 required entry: ")
    assert notes[0]["message"].endswith("); using the newest complete step global_step_10")
    assert r["findings"][-1] is notes[0] or r["findings"][-1] == notes[0]
    assert r["latest_complete_step"] == 10 and r["newest_step"] == 20 and r["step"] == 10 and r["complete"] is True


@pytest.mark.parametrize("full_report", [False, True])
def test_a_complete_newest_step_has_no_note(tmp_path, full_report):
    seed(tmp_path, (10, "complete"), (20, "complete"))
    r = gate(tmp_path, full_report=full_report)
    assert r["step"] == 20 and r["latest_complete_step"] == 20 and r["newest_step"] == 20
    assert [p["id"] for p in r["findings"] if p["severity"] == "warning"] == []
    assert r["complete"] is True and r["missing"] == [] and r["integrity_lists"] == []
    assert r["files"] > 0 and r["bytes"] > 0 and r["newest_mtime"] > 0
    assert r["steps_found"] == 2 and r["runner"] == "embodied" and r["backend"] == "fsdp" and r["world_size"] == 2


@pytest.mark.parametrize("full_report", [False, True])
def test_a_named_older_step(tmp_path, full_report):
    seed(tmp_path, (10, "complete"), (20, "complete"), (30, "marker-missing"))
    r = gate(tmp_path, step=20, full_report=full_report)
    assert r["step"] == 20 and r["complete"] is True and r["newest_step"] == 30
    assert not [p for p in r["findings"] if p["id"] == "newest-step-incomplete"]
    if full_report:
        assert r["latest_complete_step"] == 20 and r["steps_found"] == 3
    else:
        assert r["latest_complete_step"] is None and r["steps_found"] == 3
        assert [s["name"] for s in r["steps"]] == ["global_step_20"]


def test_a_named_newest_step_that_is_complete_is_the_latest_complete(tmp_path):
    seed(tmp_path, (10, "complete"), (20, "complete"))
    r = gate(tmp_path, step=20)
    assert r["latest_complete_step"] == 20 and r["newest_step"] == 20 and r["complete"] is True
    seed(tmp_path, (30, "marker-missing"))
    r = gate(tmp_path, step=30)
    assert r["latest_complete_step"] is None and r["complete"] is False and r["newest_step"] == 30


@pytest.mark.parametrize("full_report", [False, True])
def test_without_payload_checks_a_complete_structure_is_complete(tmp_path, full_report):
    seed(tmp_path, (10, "complete"), (20, "complete"))
    r = gate(tmp_path, verify_payloads=False, full_report=full_report)
    assert r["complete"] is True and r["step"] == 20 and r["latest_complete_step"] == 20
    assert {s["verdict"] for s in r["steps"]} == {"complete"}


@pytest.mark.parametrize("full_report", [False, True])
def test_a_truncated_payload_is_found_only_when_payloads_are_verified(tmp_path, full_report):
    seed(tmp_path, (10, "complete"), (20, "truncated"))
    r = gate(tmp_path, full_report=full_report)
    assert r["step"] == 10 and r["complete"] is True and r["newest_step"] == 20
    off = gate(tmp_path, full_report=full_report, verify_payloads=False)
    assert off["step"] == 20 and off["complete"] is True and off["latest_complete_step"] == 20


def test_odd_names_are_counted_and_summarized_unwalked(tmp_path):
    seed(tmp_path, (10, "complete"))
    F.write_local(str(tmp_path), "global_step_10_bak", F.tree(ROW, 10, "complete"), age=100)
    r = gate(tmp_path)
    odd = next(s for s in r["steps"] if s["name"] == "global_step_10_bak")
    assert odd["files"] is None and odd["bytes"] is None and odd["verdict"] == "unrecognized"
    assert [s["name"] for s in r["steps"]] == ["global_step_10", "global_step_10_bak"]
    assert r["steps_found"] == 2
    (note,) = [p for p in r["findings"] if p["id"] == "unrecognized-step-name"]
    assert note == {
        "id": "unrecognized-step-name",
        "severity": "warning",
        "path": "global_step_10_bak",
        "message": "global_step_10_bak is not a global_step_N directory; it is reported but never chosen",
        "hint": "",
    }


def test_the_gc_is_restored_as_it_was(tmp_path):
    import gc

    seed(tmp_path, (10, "complete"))
    assert gc.isenabled()
    gate(tmp_path)
    assert gc.isenabled()
    gc.disable()
    try:
        gate(tmp_path)
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(G.L.GateError):
        gate(tmp_path / "absent")
    assert gc.isenabled()


def test_rules_table():
    assert [(r[0], r[1]) for r in G.RULES] == [
        ("missing-entries", "error"),
        ("newest-step-incomplete", "warning"),
        ("unrecognized-step-name", "warning"),
    ]
    assert G.__all__ == ["incomplete_message", "normalize_options", "run_gate"]


@pytest.mark.parametrize("full_report", [False, True])
def test_no_complete_step_chooses_the_newest(tmp_path, full_report):
    seed(tmp_path, (10, "marker-missing"), (20, "metadata-tmp"), (15, "marker-missing"))
    r = gate(tmp_path, full_report=full_report)
    assert r["complete"] is False and r["step"] == 20 and r["newest_step"] == 20 and r["latest_complete_step"] is None
    assert not [p for p in r["findings"] if p["id"] == "newest-step-incomplete"]


def test_a_named_newest_step_above_256_is_the_latest_complete(tmp_path):
    """Step numbers are compared by value (CPython shares int objects only up to 256)."""
    seed(tmp_path, (290, "complete"), (300, "complete"))
    r = gate(tmp_path, step=300)
    assert r["latest_complete_step"] == 300 and r["newest_step"] == 300 and r["complete"] is True


class Spying(LocalSource):
    def __init__(self, path):
        super().__init__(path)
        self.calls = []

    def head_start(self, name):
        self.calls.append(("head_start", name))
        return super().head_start(name)

    def end_head_start(self):
        self.calls.append(("end",))
        return super().end_head_start()


@pytest.mark.parametrize("verify", [True, False])
def test_the_head_start_runs_only_when_payloads_are_read(tmp_path, verify):
    """The child that unpickles DCP markers ahead is started for each walked step only when payloads are verified."""
    seed(tmp_path, (10, "complete"), (20, "marker-missing"))
    src = Spying(str(tmp_path))
    r = G.run_gate(src, dict(ROW.gate_params(), quiet_seconds=120, verify_payloads=verify))
    assert r["step"] == 10
    if verify:
        assert src.calls == [("head_start", "global_step_20"), ("head_start", "global_step_10"), ("end",)]
    else:
        assert src.calls == [("end",)]


def test_the_newest_incomplete_note_gives_three_reasons():
    class Where:
        def location(self, name):
            return "/ckpt/" + name

    newest, chosen = verdict("global_step_20", missing=["a"]), verdict("global_step_10")
    for i in range(3):
        newest.problem("p%d" % i, "m%d" % i)
    opts = {"step": "latest", "verify_payloads": False}
    r = G._result(Where(), opts, chosen, chosen, newest, [chosen, newest], 2)
    (note,) = [p for p in r["findings"] if p["id"] == "newest-step-incomplete"]
    assert note["message"] == (
        "the newest step global_step_20 is incomplete (missing 1 required entry: a; p0: m0; p1: m1); "
        "using the newest complete step global_step_10"
    )


def test_incomplete_message_names_a_newer_complete_step_too():
    """A named older step that is incomplete while a newer one is complete (full_report)."""
    msg = G.incomplete_message(result(step=10, latest_complete_step=20))
    assert msg.endswith(CUT + "; the newest complete step is 20.")


def test_incomplete_message_of_a_result_read_back_from_json():
    """Severities compared by value: a result that went through JSON holds its own strings."""
    import json

    back = json.loads(json.dumps(result(findings=[err("write-too-recent", "W")])))
    assert back["findings"][0]["severity"] is not G.ERROR and back["findings"][0]["severity"] == G.ERROR
    msg = G.incomplete_message(back)
    assert ": W. A save may still be running" in msg


def test_a_named_step_above_256_in_a_full_report(tmp_path):
    seed(tmp_path, (300, "complete"), (310, "marker-missing"))
    r = gate(tmp_path, step=300, full_report=True)
    assert r["step"] == 300 and r["complete"] is True and r["latest_complete_step"] == 300


def test_incomplete_message_of_a_json_result_does_not_name_its_own_step_again():
    import json

    back = json.loads(json.dumps(result(step=300, latest_complete_step=300)))
    assert G.incomplete_message(back).endswith(CUT + ".")
