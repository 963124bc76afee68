"""rlark-sim's pod logs as the kubelet serves them: container ranges, tail, since, timestamps, limitBytes."""

import itertools

import pytest
from rlark_sim import kubelet, podlog


@pytest.fixture
def clock(monkeypatch):
    """time.time_ns() of podlog: 1 s, 2 s, 3 s ... (one value per batch of lines or container start)."""
    ticks = itertools.count(1)
    monkeypatch.setattr(podlog.time, "time_ns", lambda: next(ticks) * 1_000_000_000)


def new_log(tmp_path, name="job-actor-0"):
    return podlog.PodLog(str(tmp_path / "logs" / "job" / (name + ".log")))


def body(log, *args, **kw):
    return b"".join(log.stream(*args, **kw))


def test_sidecar_files_sit_beside_the_job_folder_not_in_it(tmp_path):
    log = new_log(tmp_path)
    log.start_container("uid-a")
    log.line("hello")
    assert (tmp_path / "logs" / "job" / "job-actor-0.log").read_bytes() == b"hello\n"
    assert sorted(p.name for p in (tmp_path / "logs" / "job").iterdir()) == ["job-actor-0.log"]
    assert (tmp_path / "logs" / "_kubelet" / "job" / "job-actor-0.idx").stat().st_size == podlog.RECORD.size


def test_a_text_with_newlines_is_several_lines(tmp_path):
    log = new_log(tmp_path)
    log.lines(["a\nb", "c"])
    assert log.line_count() == 3
    assert body(log, 1, None) == b"b\nc\n"


def test_restarts_previous_and_a_new_pod_behind_the_same_name(tmp_path, clock):
    log = new_log(tmp_path)
    log.start_container("uid-a")
    log.lines(["one", "two", "three"])
    log.start_container("uid-a")
    log.lines(["four", "five"])
    assert log.restart_count("uid-a") == 1
    assert log.container_range("uid-a") == (3, None)
    assert body(log, *log.container_range("uid-a", previous=True)) == b"one\ntwo\nthree\n"
    assert body(log, *log.container_range("uid-a")) == b"four\nfive\n"
    log.start_container("uid-b")  # the Job was stopped and started: a new pod, same name, same file
    log.line("six")
    assert log.restart_count("uid-b") == 0 and log.container_range("uid-b", previous=True) is None
    assert log.container_range("uid-a") == (3, 5)  # the old pod's last container ended where uid-b began
    assert body(log, *log.container_range("uid-b")) == b"six\n"
    again = podlog.PodLog(log.path)  # a restarted rlark-sim reads the container starts back from disk
    assert again.restart_count("uid-a") == 1 and again.container_range("uid-b") == (5, None)


def test_tail_since_and_timestamps(tmp_path, clock):
    log = new_log(tmp_path)
    log.start_container("uid")  # t=1
    log.lines(["a", "b"])  # t=2
    log.lines(["c"])  # t=3
    log.lines(["d", "e"])  # t=4
    assert body(log, 0, None, tail=2) == b"d\ne\n"
    assert body(log, 0, None, tail=0) == b""
    assert body(log, 0, None, since_ns=3_000_000_000) == b"c\nd\ne\n"  # at or after
    assert body(log, 0, None, since_ns=3_500_000_000) == b"d\ne\n"
    assert body(log, 0, None, tail=4, since_ns=3_000_000_000) == b"c\nd\ne\n"
    assert body(log, 0, None, since_ns=9_000_000_000) == b""
    stamped = body(log, 0, None, tail=1, timestamps=True)
    assert stamped == b"1970-01-01T00:00:04.000000001Z e\n"  # 1 ns after d: every line's time is its own


def test_line_times_strictly_increase_even_when_the_clock_does_not(tmp_path, monkeypatch):
    monkeypatch.setattr(podlog.time, "time_ns", lambda: 5)
    log = new_log(tmp_path)
    log.lines(["a", "b"])
    podlog.PodLog(log.path).lines(["c"])  # a restarted rlark-sim continues after the last recorded time
    assert body(log, 0, None, timestamps=True) == b"".join(
        podlog.rfc3339nano(n).encode() + b" " + t + b"\n" for n, t in ((5, b"a"), (6, b"b"), (7, b"c"))
    )


def test_rfc3339nano_has_nine_digits_and_utc():
    assert podlog.rfc3339nano(1_700_000_000_123_000_000) == "2023-11-14T22:13:20.123000000Z"


def test_limit_bytes_cuts_the_stream_mid_line():
    assert b"".join(podlog.limit_bytes(iter([b"abc\n", b"def\n"]), 6)) == b"abc\nde"
    assert b"".join(podlog.limit_bytes(iter([b"abc\n"]), 0)) == b""


def test_follow_stops_when_told(tmp_path):
    log = new_log(tmp_path)
    log.start_container("uid")
    log.line("a")
    calls = []

    def follow():
        calls.append(1)
        if len(calls) == 1:
            log.line("b")  # a line arrives while following
            return True
        return False

    assert body(log, 0, None, follow=follow) == b"a\nb\n"


def test_kubelet_options_like_the_kubelet():
    opts = kubelet.options("tailLines=-1&timestamps=1&previous=false&sinceTime=1970-01-01T00:00:03Z&limitBytes=9")
    assert opts["tail"] is None and opts["timestamps"] and not opts["previous"]
    assert opts["since_ns"] == 3_000_000_000 and opts["limit"] == 9
    with pytest.raises(ValueError):
        kubelet.options("tailLines=x")


class Entry:
    def __init__(self, log, uid="uid", containers=("main", "ray")):
        self.log, self.uid, self.containers = log, uid, containers

    def running(self):
        return True


def test_kubelet_errors_and_sidecars(tmp_path):
    log = new_log(tmp_path)
    opts = kubelet.options("")
    with pytest.raises(kubelet.BadRequest, match='container "main" in pod "p" is waiting to start'):
        kubelet.log_stream(Entry(log), "p", "main", opts)
    log.start_container("uid")
    log.line("x")
    with pytest.raises(kubelet.BadRequest, match='previous terminated container "main" in pod "p" not found'):
        kubelet.log_stream(Entry(log), "p", "main", kubelet.options("previous=true"))
    with pytest.raises(kubelet.BadRequest, match='container "other" in pod "p" is not available'):
        kubelet.log_stream(Entry(log), "p", "other", opts)
    assert b"".join(kubelet.log_stream(Entry(log), "p", "ray", opts)) == b""
    assert b"".join(kubelet.log_stream(Entry(log), "p", "main", kubelet.options("limitBytes=1"))) == b"x"
