"""Restart in place (issue 24 item 6) without binaries: what `up` restarts, refuses to restart, and how it kills."""

import argparse
import os
import subprocess
import sys
import time

import pytest
import sandboxctl
from sandboxlib import procs
from sandboxlib.services import Layout


def args(fresh=False):
    return argparse.Namespace(fresh=fresh)


def test_a_recorded_sandbox_with_etcd_data_is_revived_unless_fresh_is_asked(tmp_path):
    lay = Layout(str(tmp_path))
    os.makedirs(os.path.join(lay.etcd, "member"))
    state = {"data_plane": {}, "procs": {}}
    assert sandboxctl.not_revivable(lay, state, args()) is None
    assert sandboxctl.not_revivable(lay, state, args(fresh=True)) == "fresh sandbox requested"
    assert "data-plane" in sandboxctl.not_revivable(lay, {"procs": {}}, args())  # an older checkout's sandbox


def test_without_etcd_data_up_starts_fresh(tmp_path):
    assert "no etcd data" in sandboxctl.not_revivable(Layout(str(tmp_path)), {"data_plane": {}}, args())


def test_every_control_plane_service_has_a_starter_and_the_sim_comes_later():
    assert sandboxctl.CONTROL_PLANE[:2] == ("etcd", "kube-apiserver")
    assert "rlark-sim" not in sandboxctl.CONTROL_PLANE
    for name in sandboxctl.CONTROL_PLANE:
        assert callable(sandboxctl.starter(name))


def launch_family(tmp_path):
    """A shell leader with a child `sleep`, in its own process group like every sandbox service."""
    script = "sleep 300 & echo $! > %s; wait" % (tmp_path / "child")
    proc = procs.launch("family", ["sh", "-c", script], str(tmp_path / "family.log"))
    deadline = time.monotonic() + 10
    while not (tmp_path / "child").exists() or not (tmp_path / "child").read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return proc, int((tmp_path / "child").read_text())


def test_kill_takes_the_whole_group_down_at_once(tmp_path):
    proc, _child = launch_family(tmp_path)
    assert procs.kill(proc) is True
    assert not procs.alive(proc) and not procs.group_pids(proc["pid"])
    assert procs.kill(proc) is False  # already gone


def test_leftovers_of_a_dead_leader_are_killed_before_a_restart(tmp_path):
    proc, child = launch_family(tmp_path)
    os.kill(proc["pid"], 9)  # the leader alone dies: its child sleeps on in the group
    proc["_popen"].wait()
    assert not procs.alive(proc) and procs.group_pids(proc["pid"]) == [child]
    procs.kill_leftovers(proc)
    deadline = time.monotonic() + 10
    while procs.group_pids(proc["pid"]):
        assert time.monotonic() < deadline
        time.sleep(0.02)


@pytest.mark.parametrize("command", [["kill", "etcd"], ["status"]])
def test_commands_on_a_state_dir_without_sandbox_answer_3(tmp_path, command):
    run = subprocess.run(
        [sys.executable, sandboxctl.__file__, "--dir", str(tmp_path), *command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 3, run.stdout + run.stderr


def launch_waiting_for(tmp_path, name, other):
    """A service whose graceful stop waits (up to 5 s) until `other` has been told to stop as well; it leaves
    ``told-<name>`` when told, and ``saw-both-<name>`` when it saw the other told in time."""
    told, other_told, saw_both = (tmp_path / f for f in ("told-" + name, "told-" + other, "saw-both-" + name))
    on_term = "touch %s; for i in $(seq 50); do [ -e %s ] && touch %s && break; sleep 0.1; done; exit 0" % (
        told,
        other_told,
        saw_both,
    )
    script = "trap '%s' TERM; echo ready > %s; while :; do sleep 0.05; done" % (on_term, tmp_path / ("ready-" + name))
    proc = procs.launch(name, ["sh", "-c", script], str(tmp_path / (name + ".log")))
    deadline = time.monotonic() + 10
    while not (tmp_path / ("ready-" + name)).exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return proc


def test_servers_stopped_together_are_all_told_before_any_is_waited_for(tmp_path):
    first, second = (launch_waiting_for(tmp_path, n, o) for n, o in (("a", "b"), ("b", "a")))
    procs.stop_together([first, second], timeout=10)
    assert not procs.group_pids(first["pid"]) and not procs.group_pids(second["pid"])
    assert (tmp_path / "saw-both-a").exists() and (tmp_path / "saw-both-b").exists()


def test_a_service_that_ignores_sigterm_is_killed_after_the_timeout(tmp_path):
    proc = procs.launch("stubborn", ["sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"], str(tmp_path / "s.log"))
    procs.stop_together([proc], timeout=0.5)
    assert not procs.alive(proc) and not procs.group_pids(proc["pid"])


def test_down_stops_the_clients_then_the_servers_together_and_etcd_last(tmp_path, monkeypatch):
    stages = []
    monkeypatch.setattr(procs, "stop_together", lambda recorded: stages.append(sorted(p["name"] for p in recorded)))
    state = {"procs": {name: {"name": name} for name in sandboxctl.SERVICES}}
    sandboxctl.stop_all(Layout(str(tmp_path)), state)
    servers = sorted(set(sandboxctl.CONTROL_PLANE) - {"etcd"})
    assert stages == [["rlark-controller-manager", "rlark-sim"], servers, ["etcd"]]
    assert "kube-apiserver" in servers and "s3" in servers
