# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""payloads' edges (issue 26): the zip tail, tracker, JSON, DCP and integrity-list checks one at a time.

Zip tails are built byte by byte with ``struct`` (the end-of-central-directory record's layout), and the
files come from an in-memory source; each finding's id, severity, path and message are asserted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import struct
import types

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_check as C
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_prefetch as P
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import payloads as PL
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.verdict import StepVerdict

NO_EOCD = "no zip end-of-central-directory record (truncated torch.save payload)"
PAST = "zip central directory points past its end record (damaged torch.save payload)"
EMPTY = "zip archive with no entries (not a torch.save payload)"


def eocd(total=1, cd_size=10, cd_off=0, comment=b""):
    return struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, total, total, cd_size, cd_off, len(comment)) + comment


class Source:
    """Files in memory, read as LocalSource reads them (a tail of n bytes and the size; the first n bytes)."""

    def __init__(self, files):
        self.files = files
        self.tails = []

    def read_tail(self, step_name, rel, nbytes):
        assert step_name == "global_step_7"
        data = self.files[rel]
        self.tails.append(nbytes)
        return data[max(0, len(data) - nbytes) :], len(data)

    def read_all(self, step_name, rel, limit):
        assert step_name == "global_step_7"
        data = self.files[rel]
        if isinstance(data, Exception):
            raise data
        return data[:limit]

    def list_files(self, step_name):
        return [(rel, len(data)) for rel, data in self.files.items() if isinstance(data, bytes)]


def _verdict(prefetched=None):
    return StepVerdict(
        types.SimpleNamespace(name="global_step_7", files=0, bytes=0, newest=0, prefetched=prefetched or {})
    )


def _ids(v):
    return [(p["id"], p["severity"], p["path"]) for p in v.findings]


def test_the_limits():
    assert PL.ZIP_TAIL == 22 + 65535 and PL.JSON_LIMIT == 64 << 20


# -- zip_tail_problem -------------------------------------------------------------------------------------------


def test_a_whole_tail_is_fine():
    assert PL.zip_tail_problem(b"x" * 10 + eocd(cd_off=0, cd_size=10), 32) is None


def test_the_central_directory_may_end_exactly_at_its_record_and_not_one_byte_later():
    # a 132-byte file whose 32-byte tail starts at 100: its record is at 110
    assert PL.zip_tail_problem(b"x" * 10 + eocd(cd_off=90, cd_size=20), 132) is None
    assert PL.zip_tail_problem(b"x" * 10 + eocd(cd_off=90, cd_size=21), 132) == PAST
    assert PL.zip_tail_problem(b"x" * 10 + eocd(cd_off=91, cd_size=19), 132) is None


@pytest.mark.parametrize("field", ["cd_off", "cd_size"])
def test_zip64_markers_skip_the_directory_bound(field):
    record = eocd(**{field: 0xFFFFFFFF})
    assert PL.zip_tail_problem(record, 22) is None
    record = eocd(**{field: 0xFFFFFFFE})
    assert PL.zip_tail_problem(record, 22) == PAST


def test_a_zip_with_no_entries_is_no_payload():
    assert PL.zip_tail_problem(eocd(total=0, cd_size=0), 22) == EMPTY


def test_a_comment_must_end_the_file_exactly():
    assert PL.zip_tail_problem(eocd(comment=b"abc"), 35) is None
    assert PL.zip_tail_problem(eocd(comment=b"abc") + b"!", 36) == NO_EOCD
    assert PL.zip_tail_problem(eocd(comment=b"abc")[:-1], 34) == NO_EOCD


def test_a_signature_in_the_comment_is_skipped_for_the_real_record():
    comment = b"PK\x05\x06" + b"c" * 30  # a fake record in the comment, more than 22 bytes before the end
    assert PL.zip_tail_problem(b"y" * 5 + eocd(comment=comment), 10 + 5 + 22 + len(comment)) is None


def test_a_signature_too_close_to_the_end_is_skipped():
    """The last 21 bytes cannot hold a record: a signature there is comment bytes."""
    record = eocd(comment=b"PK\x05\x06" + b"z" * 17)  # the fake one has exactly 21 bytes from its start
    assert PL.zip_tail_problem(record, len(record) + 10) is None


def test_a_signature_with_exactly_22_bytes_left_is_read_as_the_record():
    tail = b"PK\x05\x06" + b"\x00" * 18  # 22 bytes, total 0
    assert PL.zip_tail_problem(tail, 22) == EMPTY


@pytest.mark.parametrize("tail", [b"", b"no record here", b"PK\x05\x06short"])
def test_no_record_at_all(tail):
    assert PL.zip_tail_problem(tail, len(tail)) == NO_EOCD


def test_a_tail_starting_with_a_signature_too_short_to_be_a_record():
    assert PL.zip_tail_problem(b"PK\x05\x06" + b"q" * 10, 14) == NO_EOCD


# -- check_zip: the short read first, the long one only when the file is longer --------------------------------


def test_a_record_found_in_the_last_kib_reads_nothing_more():
    src = Source({"a.pt": b"x" * 5000 + eocd(cd_off=0, cd_size=10)})
    v = _verdict()
    PL.check_zip(v, src, "a.pt", {})
    assert v.findings == [] and src.tails == [1024]


def test_a_long_comment_makes_the_second_read():
    comment = b"c" * 2000
    src = Source({"a.pt": b"x" * 5000 + eocd(cd_off=0, cd_size=10, comment=comment)})
    v = _verdict()
    PL.check_zip(v, src, "a.pt", {})
    assert v.findings == [] and src.tails == [1024, 22 + 65535]


@pytest.mark.parametrize("size", [9, 1000])  # 1000: an int CPython does not share, compared by value
def test_a_file_read_whole_the_first_time_is_not_read_again(size):
    src = Source({"a.pt": b"no record".ljust(size, b"-")})
    v = _verdict()
    PL.check_zip(v, src, "a.pt", {})
    assert src.tails == [1024]
    assert _ids(v) == [("truncated-payload", "error", "a.pt")]
    assert v.findings[0]["message"] == "a.pt: " + NO_EOCD


def test_a_file_of_1025_bytes_is_read_again():
    src = Source({"a.pt": b"n" * 1025})
    v = _verdict()
    PL.check_zip(v, src, "a.pt", {})
    assert src.tails == [1024, PL.ZIP_TAIL] and _ids(v) == [("truncated-payload", "error", "a.pt")]


# -- tracker, JSON and the guard ----------------------------------------------------------------------------------


def test_the_tracker_names_the_step():
    v = _verdict()
    PL.check_tracker(v, Source({"t.txt": b" 7\n"}), "t.txt", {})
    assert v.findings == []


def test_a_tracker_of_another_step_is_reported_with_its_first_40_characters():
    v = _verdict()
    PL.check_tracker(v, Source({"t.txt": b"8" * 41 + b"\n"}), "t.txt", {})
    assert _ids(v) == [("tracker-mismatch", "error", "t.txt")]
    assert v.findings[0]["message"] == "t.txt contains '%s', not 7: the tracker belongs to another save" % ("8" * 40)


def test_a_tracker_is_read_up_to_4096_bytes():
    v = _verdict()
    PL.check_tracker(v, Source({"t.txt": b"7" + b" " * 4095 + b"9"}), "t.txt", {})
    PL.check_tracker(v, Source({"t.txt": b" " * 4095 + b"7"}), "t.txt", {})
    assert v.findings == []


def test_bad_json_is_a_finding_with_80_characters_of_the_reason():
    v = _verdict()
    PL.guarded(v, PL.check_json, Source({"c.json": b"{"}), "c.json", {})
    assert _ids(v) == [("invalid-json", "error", "c.json")]
    with pytest.raises(ValueError) as err:
        json.loads("{")
    assert v.findings[0]["message"] == "c.json does not parse as JSON (%s)" % str(err.value)[:80]


def test_the_json_reason_is_cut_at_80_characters():
    def check(v, source, rel, opts):
        raise ValueError("r" * 80 + "s")

    v = _verdict()
    PL.guarded(v, check, None, "c.json", {})
    assert v.findings[0]["message"] == "c.json does not parse as JSON (%s)" % ("r" * 80)


def test_good_json_is_no_finding():
    v = _verdict()
    PL.guarded(v, PL.check_json, Source({"c.json": b'{"a": 1}'}), "c.json", {})
    assert v.findings == []


def test_json_is_read_up_to_its_limit():
    v = _verdict()
    PL.guarded(v, PL.check_json, Source({"c.json": b" " * (PL.JSON_LIMIT - 2) + b"{}" + b"!"}), "c.json", {})
    assert v.findings == []


@pytest.mark.parametrize(
    "exc,reason",
    [
        (OSError(13, "Permission denied"), "Permission denied"),
        (OSError("no strerror"), "no strerror"),
        (L.GateError("bucket gone"), "bucket gone"),
    ],
)
def test_an_unreadable_file_is_a_finding(exc, reason):
    v = _verdict()
    PL.guarded(v, PL.check_json, Source({"c.json": exc}), "c.json", {})
    assert _ids(v) == [("unreadable", "error", "c.json")]
    assert v.findings[0]["message"] == "c.json could not be read: " + reason


def test_other_errors_are_not_swallowed():
    def check(v, source, rel, opts):
        raise KeyError("x")

    with pytest.raises(KeyError):
        PL.guarded(_verdict(), check, None, "c.json", {})


# -- the DCP marker: the child's answer when it has one ------------------------------------------------------------


class _Claim:
    def __init__(self, answer):
        self.answer = answer

    def result(self):
        return self.answer


def test_the_dcp_check_takes_the_childs_answer():
    v = _verdict({"critic/dcp_checkpoint/.metadata": _Claim((P.INVALID, "from the child", 9))})
    PL.check_dcp_metadata(v, Source({}), "critic/dcp_checkpoint/.metadata", {"actor_world_size": None})
    assert v.findings[0]["message"].endswith(": from the child")


def test_a_marker_one_byte_over_the_limit_gets_the_presence_rules_only(monkeypatch):
    rel = "critic/dcp_checkpoint/.metadata"
    monkeypatch.setattr(PL, "METADATA_LIMIT", 40)
    monkeypatch.setattr(C, "METADATA_LIMIT", 40)
    v = _verdict()
    PL.check_dcp_metadata(v, Source({rel: b"\x80" + b"x" * 40}), rel, {"actor_world_size": None})
    assert _ids(v) == [("dcp-metadata-unverified", "warning", rel)]


def test_without_an_answer_the_dcp_check_reads_the_file_itself():
    rel = "critic/dcp_checkpoint/.metadata"
    for prefetched in ({}, {rel: _Claim(None)}):
        v = _verdict(prefetched)
        PL.check_dcp_metadata(v, Source({rel: b""}), rel, {"actor_world_size": None})
        assert v.findings[0]["message"].endswith(": the file is empty")


# -- verify_payloads --------------------------------------------------------------------------------------------


def test_every_entry_kind_has_its_check():
    assert {
        L.ZIP: PL.check_zip,
        L.TRACKER: PL.check_tracker,
        L.JSON: PL.check_json,
        L.DCP_METADATA: PL.check_dcp_metadata,
    } == PL.CHECKS


def test_verify_payloads_runs_each_check_and_the_integrity_lists(monkeypatch):
    ran = []
    entries = [("a.pt", L.ZIP), ("dir", "dir-kind-without-check"), ("c.json", L.JSON)]
    monkeypatch.setattr(PL, "expectation", lambda v, opts: types.SimpleNamespace(entries=entries))
    monkeypatch.setattr(PL, "CHECKS", {L.ZIP: lambda *a: ran.append(("zip", a[2])), L.JSON: PL.check_json})
    monkeypatch.setattr(PL, "check_integrity_list", lambda v, s, rel, o: ran.append(("list", rel)))
    v = _verdict()
    v.integrity_lists = ("m/integrity.json",)
    PL.verify_payloads(v, Source({"c.json": b"{"}), {})
    assert ran == [("zip", "a.pt"), ("list", "m/integrity.json")]
    assert _ids(v) == [("invalid-json", "error", "c.json")] and v.verified is True


# -- Megatron's integrity.json ----------------------------------------------------------------------------------


def _listing(files, base="iter_0000007"):
    return json.dumps({"files": [dict(f, sha256="ab") for f in files]}).encode()


def test_listed_paths_are_relative_to_the_list():
    src = Source({"iter_0000007/integrity.json": _listing([{"path": "a.pt", "size": 3}])})
    assert PL.integrity_list_entries(src, "global_step_7", "iter_0000007/integrity.json") == [
        ("iter_0000007/a.pt", 3, "ab")
    ]
    src = Source({"integrity.json": _listing([{"path": "a.pt"}])})
    assert PL.integrity_list_entries(src, "global_step_7", "integrity.json") == [("a.pt", None, "ab")]


def test_an_integrity_list_that_matches_is_no_finding():
    files = {
        "m/integrity.json": _listing([{"path": "a.pt", "size": 3}, {"path": "b.pt"}]),
        "m/a.pt": b"abc",
        "m/b.pt": b"anything",
    }
    v = _verdict()
    PL.check_integrity_list(v, Source(files), "m/integrity.json", {})
    assert v.findings == []


def test_a_missing_and_a_resized_file_are_each_a_mismatch():
    files = {
        "m/integrity.json": _listing(
            [{"path": "gone.pt", "size": 1}, {"path": "a.pt", "size": 4}, {"path": "c.pt", "size": 4}]
        ),
        "m/a.pt": b"abc",
        "m/c.pt": b"abcde",
    }
    v = _verdict()
    PL.check_integrity_list(v, Source(files), "m/integrity.json", {})
    assert [p["path"] for p in v.findings] == ["m/gone.pt", "m/a.pt", "m/c.pt"]
    assert {(p["id"], p["severity"]) for p in v.findings} == {("integrity-mismatch", "error")}
    assert [p["message"] for p in v.findings] == [
        "m/gone.pt is listed in m/integrity.json but does not exist: the checkpoint is not the one its integrity "
        "list describes",
        "m/a.pt has 3 bytes, m/integrity.json says 4: the checkpoint is not the one its integrity list describes",
        "m/c.pt has 5 bytes, m/integrity.json says 4: the checkpoint is not the one its integrity list describes",
    ]
    assert "do not resume from this step" in v.findings[0]["hint"]


@pytest.mark.parametrize(
    "data,fragment",
    [(b"{", "Expecting property name"), (b'{"files": []}', "the manifest lists no files")],
)
def test_an_unreadable_integrity_list_is_one_finding(data, fragment):
    v = _verdict()
    PL.check_integrity_list(v, Source({"m/integrity.json": data}), "m/integrity.json", {})
    assert _ids(v) == [("integrity-manifest-unreadable", "error", "m/integrity.json")]
    assert v.findings[0]["message"].startswith("m/integrity.json is not a readable integrity list: " + fragment)


def test_the_integrity_list_reason_is_cut_at_120_characters(monkeypatch):
    def entries(source, step_name, rel):
        raise ValueError("e" * 120 + "f")

    monkeypatch.setattr(PL, "integrity_list_entries", entries)
    v = _verdict()
    PL.check_integrity_list(v, Source({}), "m/integrity.json", {})
    assert v.findings[0]["message"] == "m/integrity.json is not a readable integrity list: " + "e" * 120


def test_an_integrity_list_is_read_up_to_the_json_limit():
    listing = _listing([{"path": "a.pt"}])
    src = Source({"m/integrity.json": b" " * (PL.JSON_LIMIT - len(listing)) + listing + b"!", "m/a.pt": b"a"})
    v = _verdict()
    PL.check_integrity_list(v, src, "m/integrity.json", {})
    assert v.findings == []
