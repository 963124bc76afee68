# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Records at their edges (issue 26's surviving mutants of records.py): run ids, file modes, a failed write
that leaves nothing behind, file systems without hard links, and what the run index counts as a record."""

import datetime
import errno
import json
import os
import random
import re
import stat

import pytest
import yaml
from ansible_collections.rlark.ops.plugins.module_utils import records

RUN = "20260101T000000Z-stop-abcdef"


def read(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def everything_under(root):
    return sorted(
        os.path.relpath(os.path.join(d, n), str(root)) for d, dirs, files in os.walk(str(root)) for n in dirs + files
    )


def test_a_run_id_names_its_time_and_kind_with_a_six_character_suffix():
    now = datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    run_id = records.new_run_id("Guarded Stop", now=now, rand=random.Random(3))
    assert re.match(r"^20250102T030405Z-guarded-stop-[a-z0-9]{6}$", run_id), run_id


def test_a_bad_run_id_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^run id 'nope' is not like 20250102T030405Z"):
        records.record_dir("/tmp/records", "demo", "nope")


@pytest.mark.parametrize(
    "value, mode",
    [(None, 0o640), ("", 0o640), ("0600", 0o600), ("640", 0o640), (0o600, 0o600), (416, 0o640), ("0777", 0o777)]
    + [(0o777, 0o777), (0, 0), ("0", 0)],
)
def test_file_mode_reads_octal_text_and_keeps_an_int(value, mode):
    assert records.file_mode(value) == mode


@pytest.mark.parametrize("value", [0o1000, "1000", -1, 512])
def test_file_mode_out_of_range_is_refused_by_name(value):
    # 0o777 and 0 are the last modes in range (above); 0o1000 (512) and -1 the first ones outside it.
    with pytest.raises(ValueError, match=r"^%s is not a file mode such as '0640'$" % re.escape(repr(value))):
        records.file_mode(value)


def test_the_header_timestamp_is_the_run_id_s_utc_stamp(tmp_path):
    path = records.write_record(str(tmp_path), "demo", "stop", {}, RUN, identity={"user": "ops"})
    assert read(path)["timestamp"] == "20260101T000000Z"


@pytest.mark.parametrize("mode, dir_mode", [(0o640, 0o750), (0o644, 0o755), (0o750, 0o750), (0o600, 0o700)])
def test_record_directories_are_traversable_where_the_mode_gives_read(tmp_path, mode, dir_mode):
    old = os.umask(0o077)
    try:
        path = records.write_record(str(tmp_path), "demo", "stop", {}, RUN, mode=mode, identity={"user": "ops"})
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == dir_mode


def test_a_record_that_cannot_reach_the_disk_leaves_no_temp_file(tmp_path, monkeypatch):
    def no_room(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(records.os, "fsync", no_room)
    with pytest.raises(OSError, match="No space left"):
        records.write_record(str(tmp_path), "demo", "stop", {}, RUN, identity={"user": "ops"})
    assert os.listdir(str(tmp_path / "demo" / RUN)) == []


def test_a_replace_that_fails_keeps_the_old_record_and_leaves_no_temp_file(tmp_path, monkeypatch):
    path = str(tmp_path / "stop.yml")
    with open(path, "w") as handle:
        handle.write("outcome: pending\n")

    def refused(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(records.os, "replace", refused)
    with pytest.raises(OSError, match="cross-device"):
        records.replace_record(path, "outcome: stopped\n")
    assert os.listdir(str(tmp_path)) == ["stop.yml"] and read(path) == {"outcome": "pending"}


def no_hard_links(monkeypatch):
    def link(src, dst):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(records.os, "link", link)


def test_without_hard_links_a_record_is_created_exclusively_and_never_replaced(tmp_path, monkeypatch):
    no_hard_links(monkeypatch)
    path = records.write_record(str(tmp_path), "demo", "stop", {"writer": "first"}, RUN, identity={"user": "ops"})
    assert read(path)["data"] == {"writer": "first"} and stat.S_IMODE(os.stat(path).st_mode) == 0o640
    with pytest.raises(ValueError, match=r"^record %s already exists$" % re.escape(path)):
        records.write_record(str(tmp_path), "demo", "stop", {"writer": "second"}, RUN, identity={"user": "ops"})
    assert read(path)["data"] == {"writer": "first"}
    assert os.listdir(os.path.dirname(path)) == ["stop.yml"]


def test_without_hard_links_a_write_that_fails_leaves_no_partial_record(tmp_path, monkeypatch):
    no_hard_links(monkeypatch)
    real_fdopen = records.os.fdopen
    opened = []

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd, *args, **kwargs):
        opened.append(fd)
        handle = real_fdopen(fd, *args, **kwargs)
        return handle if len(opened) == 1 else Full(handle)  # the temp file is written, the record is not

    monkeypatch.setattr(records.os, "fdopen", fdopen)
    with pytest.raises(OSError, match="No space left"):
        records.write_record(str(tmp_path), "demo", "stop", {}, RUN, identity={"user": "ops"})
    assert os.listdir(str(tmp_path / "demo" / RUN)) == []


def test_a_name_taken_when_linking_is_never_written_afterwards(tmp_path, monkeypatch):
    # The other writer held the name when this one linked (EEXIST): no second, non-atomic attempt follows.
    def taken(src, dst):
        raise FileExistsError(errno.EEXIST, "File exists")

    monkeypatch.setattr(records.os, "link", taken)
    path = str(tmp_path / "demo" / RUN / "stop.yml")
    with pytest.raises(ValueError, match=r"^record %s already exists$" % re.escape(path)):
        records.write_record(str(tmp_path), "demo", "stop", {}, RUN, identity={"user": "ops"})
    assert os.listdir(str(tmp_path / "demo" / RUN)) == []


def test_the_index_counts_only_yaml_records_of_run_directories(tmp_path):
    records.write_record(str(tmp_path), "demo", "stop", {}, RUN, outcome="stopped", identity={"user": "ops"})
    run_dir = tmp_path / "demo" / RUN
    (run_dir / "notes.txt").write_text("taken by hand\n")
    (run_dir / ".draft.yml").write_text("record: stop\noutcome: draft\n")
    (tmp_path / "demo" / "0-notes").mkdir()  # sorts before every run id: not a run, and not the end of the list
    (tmp_path / "demo" / "1-readme.txt").write_text("x\n")
    later = "20260102T000000Z-resume-abcdef"
    records.write_record(str(tmp_path), "demo", "resume", {}, later, outcome="created", identity={"user": "ops"})
    index = read(str(tmp_path / "_index" / "demo.yml"))
    assert [(r["run_id"], r["records"]) for r in index["runs"]] == [
        (RUN, {"stop": "stopped"}),
        (later, {"resume": "created"}),
    ]


@pytest.mark.parametrize("data", [{"outcome": "not a header", "time": "nor this"}, "a plain record of text"])
def test_an_unwrapped_record_has_no_outcome_in_the_index(tmp_path, data):
    records.write_record(str(tmp_path), "demo", "job", data, RUN, wrap=False)
    [run] = records.run_index(str(tmp_path), "demo")
    assert run["records"] == {"job": None} and run["time"] is None


@pytest.mark.parametrize("job", ["demo", "trainer"])  # either side of "invalid-inputs"
def test_every_job_but_the_refused_inputs_gets_an_index(tmp_path, job):
    records.write_record(str(tmp_path), job, "stop", {}, RUN, outcome="stopped", identity={"user": "ops"})
    assert read(str(tmp_path / "_index" / ("%s.yml" % job)))["runs"][0]["records"] == {"stop": "stopped"}


def test_write_index_returns_the_index_path(tmp_path):
    assert records.write_index(str(tmp_path), "demo") == str(tmp_path / "_index" / "demo.yml")


def test_a_record_being_written_counts_without_an_outcome(tmp_path):
    records.write_record(str(tmp_path), "demo", "stop", {}, RUN, outcome="stopped", identity={"user": "ops"})
    (tmp_path / "demo" / RUN / "verify.yml").write_text("record: verify\noutcome: [unfinish")
    [run] = records.run_index(str(tmp_path), "demo")
    assert run["records"] == {"stop": "stopped", "verify": None}


def test_without_a_passwd_entry_the_user_is_the_uid(monkeypatch):
    def no_entry():
        raise KeyError("getpwuid(): uid not found: %d" % os.getuid())

    monkeypatch.setattr(records.getpass, "getuser", no_entry)
    assert records.acting_identity()["user"] == str(os.getuid())


def test_the_api_user_is_named_only_when_known():
    assert "api_user" not in records.acting_identity()
    assert records.acting_identity("ops@example")["api_user"] == "ops@example"


def test_refused_inputs_named_in_json_get_no_index(tmp_path):
    # The folder's name as a caller decodes it from JSON: an equal string, not the module's own constant.
    records.write_record(str(tmp_path), json.loads('"invalid-inputs"'), "preflight", {}, RUN, identity={"user": "ops"})
    assert os.listdir(str(tmp_path)) == ["invalid-inputs"]


def test_a_run_whose_first_record_is_unwrapped_takes_its_time_from_the_next(tmp_path):
    """migrate saves job.yml (no header) beside preflight.yml: the run's time is preflight's, not null."""
    records.write_record(str(tmp_path), "demo", "job", {"kind": "Job"}, RUN, wrap=False)
    records.write_record(str(tmp_path), "demo", "preflight", {}, RUN, outcome="ok", identity={"user": "ops"})
    [run] = records.run_index(str(tmp_path), "demo")
    header = read(str(tmp_path / "demo" / RUN / "preflight.yml"))
    assert run["records"] == {"job": None, "preflight": "ok"}
    assert run["time"] == header["time"] and run["time"]
