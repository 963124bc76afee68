# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""job_events: transitions exactly once across replays and re-lists; watch errors; checkpoint verdicts once."""

import os

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import job_events as E


def job(name, phase, rv, uid=None, stopped=False):
    return {
        "metadata": {"name": name, "uid": uid or "uid-" + name, "resourceVersion": str(rv), "labels": {"a": "b"}},
        "spec": {"stopped": stopped},
        "status": {"phase": phase, "startTime": "2026-01-01T00:00:00Z"} if phase else {},
    }


def phases(events):
    return [(e["rlark"]["job"], e["rlark"]["previous_phase"], e["rlark"]["phase"]) for e in events]


def test_tracker_reports_each_transition_once_and_skips_empty_phase():
    t = E.PhaseTracker()
    out = []
    for j in (job("a", "", 1), job("a", "Pending", 2), job("a", "Pending", 3), job("a", "Running", 4)):
        out += t.observe(j)
    out += t.observe(job("a", "Running", 4))  # a replayed event
    assert phases(out) == [("a", None, "Pending"), ("a", "Pending", "Running")]
    assert out[0]["rlark"]["type"] == "phase_changed" and out[0]["rlark"]["labels"] == {"a": "b"}


def test_resync_reports_a_change_missed_while_disconnected_and_forgets_deleted():
    t = E.PhaseTracker()
    assert t.resync([job("a", "Running", 1), job("b", "Running", 1)], quiet=True) == []
    out = t.resync([job("a", "Stopped", 5)])
    assert phases(out) == [("a", "Running", "Stopped")]
    assert set(t.known) == {"uid-a"}
    # The same name again is a new Job (new uid): its first phase is a transition from nothing.
    assert phases(t.observe(job("b", "Pending", 6, uid="uid-b2"))) == [("b", None, "Pending")]


class ListClient:
    """Just what JobWatcher.relist needs: list() answers and a clock."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.deadline = 0

    @staticmethod
    def clock():
        return 0.0

    def list(self, path, label_selector=None):
        return self.answers.pop(0)


def test_watch_events_bookmarks_and_410():
    w = E.JobWatcher(ListClient([([job("a", "Pending", 3)], "3"), ([job("a", "Stopped", 9)], "9")]))
    got = []
    w.relist(got.append)
    assert got == [] and w.resource_version == "3"  # the first list is the baseline
    w.handle({"type": "MODIFIED", "object": job("a", "Running", 4)}, got.append)
    w.handle({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}}, got.append)
    assert w.resource_version == "7" and phases(got) == [("a", "Pending", "Running")]
    with pytest.raises(E.Expired):
        w.handle({"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}, got.append)
    w.relist(got.append)
    assert phases(got) == [("a", "Pending", "Running"), ("a", "Running", "Stopped")]
    assert [j["metadata"]["resourceVersion"] for j in w.snapshot] == ["9"]
    with pytest.raises(E.KubeError):
        w.handle({"type": "ERROR", "object": {"kind": "Status", "code": 500, "message": "boom"}}, got.append)


def test_initial_events_reports_existing_jobs():
    w = E.JobWatcher(ListClient([([job("a", "Running", 3)], "3")]), initial_events=True)
    got = []
    w.relist(got.append)
    assert phases(got) == [("a", None, "Running")]


def _write(path, data=b"x", age=0):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    if age:
        t = os.path.getmtime(path) - age
        os.utime(path, (t, t))


def _zip():
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("x", "y")
    return buf.getvalue()


def test_checkpoint_poller_reports_complete_once_and_a_dead_save(tmp_path, monkeypatch):
    root = tmp_path / "ckpt"

    def step(n, complete, age):
        base = root / ("global_step_%d" % n) / "actor"
        for r in range(2):
            _write(str(base / "dcp_checkpoint" / ("__%d_0.distcp" % r)), age=age)
        if complete:
            _write(str(base / "dcp_checkpoint" / ".metadata"), age=age)
            _write(str(base / "model_state_dict" / "full_weights.pt"), _zip(), age=age)

    j = job("a", "Running", 1)
    poller = E.CheckpointPoller(object(), gate_options={"quiet_seconds": 5, "verify_payloads": False})
    location = {"ok": True, "kind": "local"}
    monkeypatch.setattr(E, "read_tree", lambda client, name, job=None: {"job": job, "tasks": [], "pods": []})
    monkeypatch.setattr(E.checkpoint_location, "locate", lambda tree, **kw: location)
    monkeypatch.setattr(poller, "source_for", lambda job, loc: E.LocalSource(str(root)))
    poller.client = type("C", (), {"clock": staticmethod(lambda: 0.0), "deadline": 0})()
    step(2, True, 60)
    first = poller.poll(j)
    assert [(e["rlark"]["type"], e["rlark"]["step"]) for e in first] == [("checkpoint_completed", 2)]
    assert poller.poll(j) == []  # same verdict, no event
    assert not poller.wants("uid-a", "Stopped", "Stopped")  # nothing written lately: a stopped Job is left alone
    step(4, False, 0)  # a save in progress: not reported
    assert poller.poll(j) == []
    assert poller.wants("uid-a", "Stopped", "Stopped")  # ... but polled on after a stop until it settles
    step(4, False, 60)  # nothing written for longer than quiet_seconds: the save died
    dead = poller.poll(j)
    assert [(e["rlark"]["type"], e["rlark"]["step"]) for e in dead] == [("checkpoint_incomplete", 4)]
    assert dead[0]["rlark"]["latest_complete_step"] == 2 and dead[0]["rlark"]["reasons"]
    assert poller.poll(j) == []
