# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""After the stop patch each pod's log is followed to its container's end (kubeconfig source), not polled.

A log read again on every poll loses what the trainer wrote after a read began when its pod goes before the next
read (seen in CI: the last 2500 lines of a step). The data plane is a small local HTTP server that streams like the
kubelet (``follow``, ``sinceTime``); the Job API is the in-memory fake; the sandbox test is test_log_sources.py.
"""

import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import joblogs, log_follow, stop_logs
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import Export
from rlark_fake_api import FakeClock, make_client
from test_joblogs import FakeDataPlane, write_kubeconfig
from test_jobs import seeded
from test_stop_log_exports import pods_gone

HEAD = "demo-actor-0"


@pytest.fixture
def plane(tmp_path):
    fake = FakeDataPlane()
    server = joblogs_server(fake)
    fake.kubeconfig = write_kubeconfig(tmp_path / "a100.kubeconfig", fake.url, "tok-a100")
    yield fake
    for ended in fake.running.values():
        ended.set()
    server.shutdown()
    server.server_close()


def joblogs_server(fake):
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    fake.url = "http://127.0.0.1:%d" % server.server_address[1]
    return server


def reader(plane, export_dir):
    return log_follow.log_reader("kubeconfig", "demo", str(export_dir), [HEAD], follow_timeout=60,
                                 kubeconfig=plane.kubeconfig)  # fmt: skip


def follow_requests(plane):
    return [path for path, _auth in plane.requests if "follow=true" in path]


def test_the_lines_written_after_the_stop_are_followed_to_the_containers_end_and_merged(plane, tmp_path):
    plane.logs[HEAD] = ["step 1 line %d" % i for i in range(50)]
    plane.running[HEAD] = threading.Event()
    api = seeded()
    clock = FakeClock()
    client = make_client(api, clock=clock)
    last_burst = ["step 2 line %d" % i for i in range(2500)]
    written = plane.logs[HEAD] + last_burst  # the pod's log is gone when the test reads the export

    def trainer_ends_then_pods_go(method, path, query):
        # The trainer's last burst comes after the stop, then its container ends and its pod goes with its log, at
        # once: no poll after the burst could read it. A follow opened right after the patch (before the pod goes,
        # as on RLark, where the pod outlives the patch by its grace period) carries it.
        stopped = api.get("jobs", "demo")["spec"]["stopped"]
        if method == "GET" and "/tasks" in path and stopped and not plane.running[HEAD].is_set():
            deadline = time.monotonic() + 10
            while not follow_requests(plane) and time.monotonic() < deadline:
                time.sleep(0.01)
            plane.logs[HEAD].extend(last_burst)
            if follow_requests(plane):
                plane.gone_when_streamed.add(HEAD)
            else:
                del plane.logs[HEAD]
            plane.running[HEAD].set()

    api.hooks.append(trainer_ends_then_pods_go)
    api.hooks.append(pods_gone(api))
    out = stop_logs.stop_with_logs(
        client, "demo", reader(plane, tmp_path), HEAD, export_dir=str(tmp_path), timeout=60, interval=1,
        follow=True, clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    assert out["action"] == "stopped" and "pods_gone_at" in out and not out.get("failed"), out.get("msg")
    (export,) = out["log_exports"]
    with open(export["path"]) as fh:
        assert fh.read().splitlines() == written, "every line, once, in order"
    assert export["followed"] == log_follow.TO_END and export["timestamps_from"] == "kubelet"
    assert export["lines"] == 2550 and out["logs_complete"] and not out["log_errors"]
    (followed,) = follow_requests(plane)
    assert "sinceTime=2026-12-01T01%3A00%3A49Z" in followed, "from the second of the last line read"
    reads = [path for path, _auth in plane.requests if "follow=true" not in path]
    assert len(reads) == 1, "while the pods are followed no poll reads the whole log again: %s" % reads


def test_a_stream_still_open_when_the_wait_ends_is_cut_at_once_and_keeps_its_lines(plane, tmp_path):
    plane.logs[HEAD] = ["line %d" % i for i in range(10)]
    plane.running[HEAD] = threading.Event()  # never set: the container outlives the wait
    following = log_follow.follow_logs("kubeconfig", [HEAD], str(tmp_path), default=plane.kubeconfig, timeout=60)
    (follow,) = following.follows
    while follow.lines() < 10:
        follow.join(0.05)
    ended = following.end(0.0)  # the wait timed out: no drain
    # The cut woke the blocked read: a thread still stuck after it would be missing here.
    assert list(ended) == [HEAD] and not follow.is_alive()
    assert (follow.ended, follow.was_cut, follow.error) == (False, True, None)
    assert follow.export.text().splitlines() == plane.logs[HEAD]


class CutFollow:
    def __init__(self, export):
        self.export, self.ended, self.error, self.last_line_at = export, False, None, 5.0

    def end(self, grace):
        return {HEAD: self}

    def lines(self, pod):
        return 0


def test_a_cut_stream_makes_the_stop_say_its_logs_are_incomplete(tmp_path):
    kept = Export(HEAD, "kubeconfig", str(tmp_path / "kept.log"))
    kept.lines = 0
    open(kept.path, "w").close()
    cut = Export(HEAD, "kubeconfig", str(tmp_path / "cut.log"), window=True)
    with open(cut.path, "w") as fh:
        fh.write("a\n")
    cut.lines, cut.bytes = 1, 2

    def read(since=None, follow=False):
        return CutFollow(cut) if follow else {HEAD: kept}

    tail = stop_logs.LogTail(read, str(tmp_path), follow=True)
    tail.poll()
    tail.start_follow()
    tail.end_follow(0.0)
    summary = stop_logs.export_summary({}, tail, HEAD)
    (export,) = summary["log_exports"]
    assert export["followed"] == log_follow.CUT and export["lines"] == 1
    assert not summary["logs_complete"] and not tail.complete


def test_a_source_that_cannot_follow_is_polled_as_before(tmp_path):
    reads = []

    def read(since=None, follow=False):
        reads.append(follow)
        return None if follow else {HEAD: "a\n"}

    tail = stop_logs.LogTail(read, str(tmp_path), follow=True)
    tail.poll()
    tail.start_follow()
    assert tail.following is None
    tail.poll()
    assert reads == [False, True, False]


def test_follow_starts_at_the_whole_second_of_the_last_kubelet_time():
    export = Export(HEAD, "kubeconfig", "unused")
    export.kubelet_stamps = True
    export.last_timestamp = "2026-12-01T01:00:49.123456789Z"
    assert log_follow.since_time(export) == "2026-12-01T01:00:49Z"
    export.last_timestamp = "2026-12-01T09:00:49.5+08:00"
    assert log_follow.since_time(export) == "2026-12-01T09:00:49+08:00"
    export.kubelet_stamps = False  # a time printed by the workload says nothing about the kubelet's clock
    assert log_follow.since_time(export) is None
    assert log_follow.since_time(None) is None


def test_an_attempt_broken_off_is_kept_when_the_retry_gets_less(tmp_path):
    follow = log_follow.PodFollow(None, HEAD, "rlark-system", str(tmp_path))
    attempts = follow.attempts
    attempts.reset()
    attempts.write(b"2026-12-01T01:00:00.1Z a\n2026-12-01T01:00:01.1Z b\n")
    attempts.reset()  # the retry after the connection dropped: the pod is gone, nothing comes
    export = attempts.close()
    assert export.text() == "a\nb\n" and os.listdir(str(tmp_path)) == [os.path.basename(export.path)]


def test_only_the_kubeconfig_source_follows():
    assert log_follow.follow_logs("files", [HEAD], "unused") is None
    assert log_follow.follow_logs("gateway", [HEAD], "unused") is None
    assert joblogs.SOURCES == ("files", "kubeconfig", "gateway")
