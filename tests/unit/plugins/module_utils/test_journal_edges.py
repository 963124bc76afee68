# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stop record's write-ahead log, value by value (issue 26: mutants of guarded_stop/journal.py)."""

import errno
import os
import stat

import pytest
import yaml
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop import journal

RUN = "20261202T070000Z-guarded-stop-aaaaaa"
MIB = 1 << 20


class Stats:
    def __init__(self, free_bytes, frsize=4096):
        self.f_frsize = frsize
        self.f_bavail = free_bytes // frsize


def test_constants():
    assert journal.ROOM_MARGIN == 8 * MIB and journal.UNKNOWN_LOG_BYTES == 8 * MIB
    assert journal.OPEN == ("pending", "stopped-unconfirmed") and journal.RECORD == "stop.yml"
    assert (journal.STOPPED, journal.FAILED, journal.REFUSED) == ("stopped", "failed", "refused")


def test_existing_walks_up_to_an_existing_directory(tmp_path):
    assert journal._existing(str(tmp_path / "a" / "b" / "c")) == str(tmp_path)
    assert journal._existing(str(tmp_path)) == str(tmp_path)
    assert journal._existing("/") == "/"
    assert journal._mib(3 * MIB // 2) == "1.5 MiB" and journal._mib(1) == "0.0 MiB"


def test_records_problem_room_boundary(tmp_path, monkeypatch):
    need = 5 * MIB + journal.ROOM_MARGIN
    monkeypatch.setattr(journal.os, "statvfs", lambda p: Stats(need))
    assert journal.records_problem(str(tmp_path / "new"), 5 * MIB) is None
    monkeypatch.setattr(journal.os, "statvfs", lambda p: Stats(need - 4096))
    found = journal.records_problem(str(tmp_path / "new"), 5 * MIB)
    assert found == {
        "id": "records-no-room",
        "severity": "error",
        "path": "rlark_records_dir",
        "message": "rlark_records_dir %s has 13.0 MiB free; the stop record and its logs need about 13.0 MiB "
        "(logs 5.0 MiB + 8.0 MiB margin)" % (tmp_path / "new"),
        "hint": journal.HINT + ", or free space there",
    }
    monkeypatch.setattr(journal.os, "statvfs", lambda p: Stats(journal.ROOM_MARGIN))
    assert journal.records_problem(str(tmp_path)) is None
    assert journal.records_problem(str(tmp_path), check_mode=True) is None
    assert os.listdir(str(tmp_path)) == []
    monkeypatch.setattr(journal.os, "statvfs", lambda p: Stats(journal.ROOM_MARGIN - 1, frsize=1))
    assert journal.records_problem(str(tmp_path))["id"] == "records-no-room"  # no logs: the margin alone, to the byte


def test_records_problem_adds_the_margin_to_the_logs(tmp_path, monkeypatch):
    """Logs of exactly the margin's size need twice the margin (a sum, not the bits of both)."""
    monkeypatch.setattr(journal.os, "statvfs", lambda p: Stats(2 * journal.ROOM_MARGIN - 4096))
    found = journal.records_problem(str(tmp_path), journal.ROOM_MARGIN)
    assert found["id"] == "records-no-room"
    assert "need about 16.0 MiB (logs 8.0 MiB + 8.0 MiB margin)" in found["message"]
    monkeypatch.setattr(journal.os, "statvfs", lambda p: Stats(2 * journal.ROOM_MARGIN))
    assert journal.records_problem(str(tmp_path), journal.ROOM_MARGIN) is None


def test_records_problem_not_a_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    found = journal.records_problem(str(blocker / "records"))
    assert found["id"] == "records-unwritable" and found["hint"] == journal.HINT
    assert found["message"] == "rlark_records_dir %s cannot hold records: %s is not a directory" % (
        blocker / "records",
        blocker,
    )


def test_records_problem_not_writable(tmp_path, monkeypatch):
    def denied(*a, **kw):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(journal.tempfile, "mkstemp", denied)
    found = journal.records_problem(str(tmp_path))
    assert found["message"] == "rlark_records_dir %s is not writable (Permission denied)" % tmp_path
    assert found["id"] == "records-unwritable" and found["path"] == "rlark_records_dir"
    monkeypatch.setattr(journal.os, "access", lambda path, mode: mode == (os.W_OK | os.X_OK) and False)
    found = journal.records_problem(str(tmp_path), check_mode=True)
    assert found["message"] == "rlark_records_dir %s is not writable (no write permission on %s)" % (tmp_path, tmp_path)


def test_records_problem_in_check_mode_asks_for_write_and_search(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(journal.os, "access", lambda path, mode: asked.append((path, mode)) or True)
    assert journal.records_problem(str(tmp_path), check_mode=True) is None
    assert asked == [(str(tmp_path), os.W_OK | os.X_OK)]


def test_read_record(tmp_path):
    assert journal.read_record(str(tmp_path / "absent.yml")) == {}
    bad = tmp_path / "bad.yml"
    bad.write_text("a: [")
    assert journal.read_record(str(bad)) == {}
    listed = tmp_path / "list.yml"
    listed.write_text("- a\n")
    assert journal.read_record(str(listed)) == {}
    cut = tmp_path / "cut.yml"
    cut.write_bytes(b"outcome: \xff\xfe\n")  # not UTF-8 (a record cut inside a character): a ValueError
    assert journal.read_record(str(cut)) == {}
    good = tmp_path / "good.yml"
    good.write_text("outcome: pending\n")
    assert journal.read_record(str(good)) == {"outcome": "pending"}


def export(tmp_path, pod, text):
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / ("export-%s.log" % pod)
    path.write_text(text)
    return {"pod": pod, "path": str(path)}


def test_publishing_the_same_export_again_leaves_no_staged_name(tmp_path):
    """After the stop the logs may not be readable any more: finish() publishes the exports begin() published.
    Their staged link and the published log are one file, where rename(2) does nothing."""
    wal = journal.StopJournal(str(tmp_path / "rec"), "demo", RUN)
    same = export(tmp_path, "p-1", "a\n")
    wal.begin({"x": 1}, [same])
    assert wal.finish("stopped", {"x": 2}, [same]) == wal.path
    assert sorted(os.listdir(wal.directory)) == ["log-p-1.log", "stop.yml"]
    assert (tmp_path / "rec" / "demo" / RUN / "log-p-1.log").read_text() == "a\n" and wal.logs == ["log-p-1.log"]


def test_begin_publish_finish(tmp_path):
    wal = journal.StopJournal(str(tmp_path / "rec"), "demo", RUN, mode=0o600, identity={"user": "u"})
    assert wal.path == str(tmp_path / "rec" / "demo" / RUN / "stop.yml") and wal.logs == []
    assert wal.begin({"x": 1}, [export(tmp_path, "p-1", "a\n")]) == wal.path
    with open(wal.path) as handle:
        text = handle.read()
    assert "outcome: pending" in text and stat.S_IMODE(os.stat(wal.path).st_mode) == 0o600
    log = tmp_path / "rec" / "demo" / RUN / "log-p-1.log"
    assert log.read_text() == "a\n" and stat.S_IMODE(os.stat(str(log)).st_mode) == 0o600
    assert wal.logs == ["log-p-1.log"]
    assert (tmp_path / "rec" / "_index" / "demo.yml").exists()
    assert wal.publish([]) == [] and wal.logs == ["log-p-1.log"]
    newer = [export(tmp_path, "p-0", "b\n"), export(tmp_path / "later", "p-1", "c\n")]
    assert wal.publish(newer) == ["log-p-0.log", "log-p-1.log"]
    assert wal.logs == ["log-p-0.log", "log-p-1.log"] and log.read_text() == "c\n"
    assert wal.finish("stopped", {"x": 2}) == wal.path
    assert journal.read_record(wal.path)["outcome"] == "stopped"
    assert sorted(os.listdir(wal.directory)) == ["log-p-0.log", "log-p-1.log", "stop.yml"]
    with pytest.raises(ValueError):
        journal.StopJournal(str(tmp_path / "rec"), "demo", RUN).begin({"x": 3})  # a record is never replaced by begin


def test_a_record_survives_an_index_that_cannot_be_written(tmp_path, monkeypatch):
    def broken(*a, **kw):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(journal, "write_index", broken)
    wal = journal.StopJournal(str(tmp_path), "demo", RUN)
    assert wal.begin({"x": 1}) == wal.path
    assert wal.finish("stopped", {"x": 1}) == wal.path

    def bad(*a, **kw):
        raise ValueError("bad")

    monkeypatch.setattr(journal, "write_index", bad)
    other = journal.StopJournal(str(tmp_path), "demo", RUN + "b")
    assert other.begin({"x": 1}) == other.path and journal.read_record(other.path)["outcome"] == "pending"
    assert wal.finish("failed", {"x": 1}) == wal.path
    with open(wal.path) as handle:
        assert "outcome: failed" in handle.read()


def test_exports_are_copied_when_they_cannot_be_linked(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(journal.os, "link", no_links)
    wal = journal.StopJournal(str(tmp_path / "rec"), "demo", RUN)
    source = export(tmp_path, "p-1", "a\n")
    wal.begin({"x": 1}, [source])
    published = tmp_path / "rec" / "demo" / RUN / "log-p-1.log"
    assert published.read_text() == "a\n" and os.stat(str(published)).st_ino != os.stat(source["path"]).st_ino


def test_a_failed_stage_leaves_nothing(tmp_path):
    wal = journal.StopJournal(str(tmp_path / "rec"), "demo", RUN)
    wal.begin({"x": 1})
    with pytest.raises(FileNotFoundError):
        wal.publish([export(tmp_path, "p-0", "a\n"), {"pod": "p-1", "path": str(tmp_path / "absent")}])
    assert sorted(os.listdir(wal.directory)) == ["stop.yml"] and wal.logs == []
    with pytest.raises(ValueError):
        wal.publish([{"pod": "../x", "path": str(tmp_path / "absent")}])
    assert sorted(os.listdir(wal.directory)) == ["stop.yml"]


def test_finish_drops_its_staged_logs_when_the_record_fails(tmp_path, monkeypatch):
    wal = journal.StopJournal(str(tmp_path / "rec"), "demo", RUN)
    wal.begin({"x": 1})

    def interrupted(path, text, mode=0o640):
        raise KeyboardInterrupt

    monkeypatch.setattr(journal, "replace_record", interrupted)
    with pytest.raises(KeyboardInterrupt):
        wal.finish("stopped", {"x": 2}, [export(tmp_path, "p-0", "a\n")])
    assert sorted(os.listdir(wal.directory)) == ["stop.yml"] and wal.logs == []


def test_drop_ignores_what_is_already_gone(tmp_path):
    kept = tmp_path / "kept"
    kept.write_text("")
    journal.StopJournal._drop([(str(tmp_path / "gone"), "x"), (str(kept), "y")])
    assert not kept.exists()


def test_commit_syncs_the_directory_only_when_something_was_published(tmp_path, monkeypatch):
    wal = journal.StopJournal(str(tmp_path / "rec"), "demo", RUN)
    wal.begin({"x": 1})
    synced = []
    monkeypatch.setattr(journal, "fsync_dir", synced.append)
    assert wal._commit([]) == [] and synced == []
    wal.publish([export(tmp_path, "p-0", "a\n")])
    assert synced == [wal.directory]


def test_record_text_is_a_stop_record(tmp_path):
    wal = journal.StopJournal(str(tmp_path), "demo", RUN)
    wal.begin({"step": 6})
    with open(wal.path) as handle:
        docs = [d for d in yaml.safe_load_all(handle.read()) if d]
    assert any(isinstance(d, dict) and d.get("outcome") == "pending" for d in docs)


def test_a_staged_log_is_hidden_under_its_published_name(tmp_path):
    """A staged log left by a crash before its commit says whose log it is: .log-<pod>.log.XXXXXX."""
    wal = journal.StopJournal(str(tmp_path / "rec"), "demo", RUN)
    wal.begin({"x": 1})
    ((tmp, name),) = wal._stage([export(tmp_path, "p-1", "a\n")])
    assert name == "log-p-1.log" and os.path.dirname(tmp) == wal.directory
    assert os.path.basename(tmp).startswith(".log-p-1.log.") and len(os.path.basename(tmp)) > len(".log-p-1.log.")
    wal._drop([(tmp, name)])
