"""rlark-sim's pass record with the controller in its own loop, and the agent's hold switch (no API server)."""

import json
import os

from rlark_sim import __main__ as sim_main
from rlark_sim import agent


def read(tmp_path):
    with open(os.path.join(str(tmp_path), sim_main.PASS_RECORD)) as fh:
        return json.load(fh)


def test_a_recorded_pass_is_a_round_of_both_loops_with_the_least_they_had_seen(tmp_path):
    record = sim_main.PassRecord(str(tmp_path), ["main", "controller"])
    main = record.begin()
    ctrl = record.begin()
    record.end("controller", ctrl, {"jobs": 7, "tasks": 9, "nodes": 3})
    assert not os.path.exists(os.path.join(str(tmp_path), sim_main.PASS_RECORD))  # the main loop is still busy
    record.end("main", main, {"jobs": 8, "tasks": 8, "nodes": 3, "pods": 5})
    got = read(tmp_path)
    assert got["pass"] == 1 and got["seen"] == {"jobs": 7, "tasks": 8, "nodes": 3, "pods": 5}
    # The controller ends many passes per main pass: no round until the main loop ends one begun after round 1.
    for seen in (10, 11):
        record.end("controller", record.begin(), {"jobs": seen, "tasks": seen, "nodes": 3})
    assert read(tmp_path)["pass"] == 1
    record.end("main", record.begin(), {"jobs": 12, "tasks": 12, "nodes": 3, "pods": 6})
    got = read(tmp_path)
    assert got["pass"] == 2 and got["seen"]["jobs"] == 11 and got["seen"]["pods"] == 6


def test_held_tasks_by_name_or_pattern(tmp_path):
    hold = tmp_path / "agent-hold"
    sim_agent = agent.Agent(None, None, None, None, None, None, hold_dir=str(hold))
    assert sim_agent.held() == set()  # no folder: nothing held
    hold.mkdir()
    (hold / "job-a-rollout").write_text("")
    (hold / "early*-*-rollout").write_text("")
    assert sim_agent.held() == {"job-a-rollout", "early*-*-rollout"}
