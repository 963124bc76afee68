# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dcp_check's edges (issue 26): a ``.metadata``'s promise against the shards beside it, one rule at a time.

Each test builds the step's verdict by hand (the shards present, the missing list, the findings so far) and
asserts the findings' ids, severities, paths and exact messages, and the missing list.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys
import types

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dcp_format as DF
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_check as C
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_prefetch as P
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.verdict import StepVerdict

ACTOR = "actor/dcp_checkpoint"
ACTOR_META = ACTOR + "/.metadata"
CRITIC = "critic/dcp_checkpoint"
CRITIC_META = CRITIC + "/.metadata"
UNSET = {"actor_world_size": None}


def _verdict(present=None, world_size=None, missing=(), findings=()):
    v = StepVerdict(types.SimpleNamespace(name="global_step_7", files=0, bytes=0, newest=0, prefetched={}))
    v.distcp_names = dict(present or {})
    v.world_size = world_size
    v.missing = list(missing)
    v.findings = list(findings)
    return v


def _ids(v):
    return [(p["id"], p["severity"], p["path"]) for p in v.findings]


# -- dcp_needs: the size limit, the reader's answer, the fallback for unknown formats -------------------------


def test_a_marker_of_exactly_the_limit_is_read_and_one_byte_more_is_not(monkeypatch):
    monkeypatch.setattr(C, "METADATA_LIMIT", 3 << 20)
    body = DF.metadata_bytes([("__0_0.distcp", 0, 100)])
    whole = body + b"." * ((3 << 20) - len(body))  # the unpickler stops at the first STOP: trailing bytes are inert
    v = _verdict()
    assert C.dcp_needs(v, whole, CRITIC_META) == {"__0_0.distcp": 100}
    assert v.findings == []
    over = whole + b"."
    assert C.dcp_needs(v, over, CRITIC_META) is None
    assert _ids(v) == [("dcp-metadata-unverified", "warning", CRITIC_META)]
    assert v.findings[0]["message"] == (
        CRITIC_META + " is larger than 3 MiB: its shard list was not read, only the presence rules were applied"
    )


def test_an_invalid_marker_is_an_error_naming_why():
    v = _verdict()
    assert C.dcp_needs(v, b"", CRITIC_META) is None
    assert _ids(v) == [("invalid-dcp-metadata", "error", CRITIC_META)]
    assert v.findings[0]["message"] == CRITIC_META + " is not a whole DCP commit marker: the file is empty"
    assert "do not resume from this step" in v.findings[0]["hint"]


def test_an_unknown_format_keeps_the_shard_names_its_bytes_mention_with_no_size():
    v = _verdict()
    data = b"RLARK __1_0.distcp, __0_0.distcp and __1_0.distcp again; not__x.distcp"
    assert C.dcp_needs(v, data, CRITIC_META) == {"__0_0.distcp": 0, "__1_0.distcp": 0}
    assert _ids(v) == [("dcp-metadata-unverified", "warning", CRITIC_META)]
    assert v.findings[0]["message"].startswith(
        CRITIC_META + " is not a torch DCP Metadata this gate can read (not a pickle"
    )
    assert v.findings[0]["message"].endswith("): only the presence rules were applied")


def test_an_unknown_format_naming_no_shard_is_presence_rules_only():
    v = _verdict()
    assert C.dcp_needs(v, b"RLARK no shard names here", CRITIC_META) is None
    assert _ids(v) == [("dcp-metadata-unverified", "warning", CRITIC_META)]


def test_shards_an_unknown_format_names_must_exist_but_may_be_empty():
    v = _verdict(present={CRITIC: {"__0_0.distcp": 0}})
    C.check_dcp(v, b"RLARK __0_0.distcp __1_0.distcp", CRITIC_META, UNSET)
    assert v.missing == [CRITIC + "/__1_0.distcp"]
    assert _ids(v) == [("dcp-metadata-unverified", "warning", CRITIC_META)]


# -- check_dcp_answer: the forked reader's answer ---------------------------------------------------------------


def test_an_invalid_answer_reports_its_reason_and_checks_nothing_else():
    v = _verdict(present={CRITIC: {"__5_0.distcp": 3}})
    C.check_dcp_answer(v, (P.INVALID, "the pickle is truncated", 4096), CRITIC_META, UNSET)
    assert _ids(v) == [("invalid-dcp-metadata", "error", CRITIC_META)]
    assert v.findings[0]["message"] == CRITIC_META + " is not a whole DCP commit marker: the pickle is truncated"
    assert v.missing == []


def test_an_ok_answer_is_checked_against_the_shards():
    v = _verdict(present={CRITIC: {"__0_0.distcp": 10}})
    C.check_dcp_answer(v, (P.OK, {"__0_0.distcp": 10, "__1_0.distcp": 4}, 4096), CRITIC_META, UNSET)
    assert v.findings == [] and v.missing == [CRITIC + "/__1_0.distcp"]


# -- check_needs: missing, short and stale shards -----------------------------------------------------------------


def test_presence_rules_only_change_nothing():
    v = _verdict(present={CRITIC: {"__9_0.distcp": 1}}, missing=["x"])
    C.check_needs(v, None, CRITIC_META, UNSET)
    assert v.findings == [] and v.missing == ["x"]


def test_a_shard_of_exactly_its_promise_is_whole_and_one_byte_less_is_cut_off():
    v = _verdict(present={CRITIC: {"__0_0.distcp": 100, "__1_0.distcp": 99, "__2_0.distcp": 101}})
    C.check_needs(v, {"__0_0.distcp": 100, "__1_0.distcp": 100, "__2_0.distcp": 100}, CRITIC_META, UNSET)
    assert _ids(v) == [("truncated-shard", "error", CRITIC + "/__1_0.distcp")]
    cut = v.findings[0]
    assert cut["missing_bytes"] == 1
    assert cut["message"] == (
        CRITIC + "/__1_0.distcp is 99 bytes but " + CRITIC_META + " references bytes up to 100: 1 bytes are missing "
        "(the shard was cut off)"
    )
    assert cut["hint"] == "this step is not complete; do not resume from it"
    assert v.missing == []


def test_short_shards_are_reported_in_name_order():
    v = _verdict(present={CRITIC: {"__0_0.distcp": 1, "__1_0.distcp": 2, "__2_0.distcp": 3}})
    C.check_needs(v, {"__2_0.distcp": 10, "__0_0.distcp": 10, "__1_0.distcp": 10}, CRITIC_META, UNSET)
    assert [p["path"] for p in v.findings] == [CRITIC + "/__%d_0.distcp" % i for i in range(3)]
    assert [p["missing_bytes"] for p in v.findings] == [9, 8, 7]
    assert [p["message"].split(": ")[1] for p in v.findings] == [
        "%d bytes are missing (the shard was cut off)" % n for n in (9, 8, 7)
    ]


def test_missing_shards_are_added_once_in_name_order_and_not_reported_as_short():
    v = _verdict(present={CRITIC: {"__1_0.distcp": 5}}, missing=[CRITIC + "/__3_0.distcp"])
    C.check_needs(v, {"__3_0.distcp": 5, "__2_0.distcp": 5, "__1_0.distcp": 5, "__0_0.distcp": 5}, CRITIC_META, UNSET)
    assert v.missing == [CRITIC + "/__3_0.distcp", CRITIC + "/__0_0.distcp", CRITIC + "/__2_0.distcp"]
    assert v.findings == []


def test_a_directory_with_no_shard_listed_misses_every_promised_one():
    v = _verdict(present={})
    C.check_needs(v, {"__0_0.distcp": 5}, CRITIC_META, UNSET)
    assert v.missing == [CRITIC + "/__0_0.distcp"] and v.findings == []


def test_unreferenced_shards_are_stale_and_the_message_names_the_first_four():
    present = {"__%d_0.distcp" % i: 5 for i in range(7)}
    v = _verdict(present={CRITIC: present})
    C.check_needs(v, {"__0_0.distcp": 5, "__1_0.distcp": 5}, CRITIC_META, UNSET)
    assert _ids(v) == [("stale-shards", "warning", CRITIC)]
    assert v.findings[0]["message"] == (
        CRITIC + " holds 5 shard file(s) that its .metadata does not reference (__2_0.distcp, __3_0.distcp, "
        "__4_0.distcp, __5_0.distcp): left over from another run, not counted"
    )


def test_exactly_one_stale_shard_is_named():
    v = _verdict(present={CRITIC: {"__0_0.distcp": 5, "__1_0.distcp": 5}})
    C.check_needs(v, {"__0_0.distcp": 5}, CRITIC_META, UNSET)
    assert v.findings[0]["message"] == (
        CRITIC + " holds 1 shard file(s) that its .metadata does not reference (__1_0.distcp): left over from another "
        "run, not counted"
    )


def test_a_marker_at_the_top_of_the_step_reads_the_top_level_shards():
    v = _verdict(present={"": {"__0_0.distcp": 5}})
    C.check_needs(v, {"__0_0.distcp": 6}, ".metadata", UNSET)
    assert _ids(v) == [("truncated-shard", "error", "/__0_0.distcp")]


# -- the actor's marker: the authoritative world size ---------------------------------------------------------


def _actor_needs(count):
    return {"__%d_0.distcp" % i: 5 for i in range(count)}


def test_the_actor_marker_of_the_inferred_world_size_changes_nothing():
    stale = {"id": "stale-shards", "severity": "warning", "path": ACTOR, "message": "m", "hint": ""}
    v = _verdict(present={ACTOR: _actor_needs(3)}, world_size=3, findings=[stale], missing=[ACTOR + "/__9_0.distcp"])
    C.check_needs(v, _actor_needs(3), ACTOR_META, UNSET)
    assert v.world_size == 3 and v.findings == [stale] and v.missing == [ACTOR + "/__9_0.distcp"]


def test_an_actor_marker_with_a_hole_in_its_ranks_decides_nothing():
    needs = {"__0_0.distcp": 5, "__2_0.distcp": 5}
    v = _verdict(present={ACTOR: {"__0_0.distcp": 5, "__1_0.distcp": 5, "__2_0.distcp": 5}}, world_size=3)
    C.check_needs(v, needs, ACTOR_META, UNSET)
    assert v.world_size == 3 and v.findings == [] and v.missing == []


def test_an_actor_marker_without_shard_names_decides_nothing():
    v = _verdict(present={ACTOR: {}}, world_size=2)
    C.check_needs(v, {"model.bin": 5}, ACTOR_META, UNSET)
    assert v.world_size == 2 and v.findings == [] and v.missing == [ACTOR + "/model.bin"]


def test_an_actor_marker_of_another_world_size_than_the_one_set_belongs_to_another_run():
    v = _verdict(present={ACTOR: _actor_needs(2)}, world_size=2)
    C.check_needs(v, _actor_needs(3), ACTOR_META, {"actor_world_size": 2})
    assert _ids(v) == [("world-size-mismatch", "error", ACTOR_META)]
    assert v.findings[0]["message"] == (
        ACTOR_META + " was written by 3 ranks, not actor_world_size=2: it belongs to another run"
    )
    assert v.world_size == 2 and v.missing == [ACTOR + "/__2_0.distcp"]


def test_an_actor_marker_smaller_than_the_inferred_world_size_replaces_it():
    """Four shard files, a marker of two ranks (actor_world_size unset): the two others are stale, not missing."""
    earlier = [
        {"id": "stale-shards", "severity": "warning", "path": ACTOR, "message": "old", "hint": ""},
        {"id": "stale-shards", "severity": "warning", "path": CRITIC, "message": "kept", "hint": ""},
        {"id": "other", "severity": "error", "path": ACTOR, "message": "kept too", "hint": ""},
        {"id": "unreadable", "severity": "error", "path": ACTOR, "message": "kept, sorts after", "hint": ""},
        {"id": "stale-shards", "severity": "warning", "path": "actor/actor_policy/dcp_checkpoint", "message": "mine"},
    ]
    missing = [ACTOR + "/__4_0.distcp", ACTOR + "/.metadata.tmp", CRITIC + "/__1_0.distcp"]
    v = _verdict(present={ACTOR: _actor_needs(4)}, world_size=5, findings=earlier, missing=missing)
    C.check_needs(v, _actor_needs(2), ACTOR_META, UNSET)
    assert v.world_size == 2
    assert v.missing == [ACTOR + "/.metadata.tmp", CRITIC + "/__1_0.distcp"]
    assert [p["message"] for p in v.findings[:4]] == ["kept", "kept too", "kept, sorts after", "mine"]
    assert _ids(v)[4:] == [("stale-shards", "warning", ACTOR)]
    assert v.findings[4]["message"] == (
        ACTOR + " holds 2 shard file(s) that .metadata does not reference (__2_0.distcp, __3_0.distcp): left over "
        "from a larger earlier run, not counted"
    )


def test_the_actor_markers_stale_list_names_the_first_four():
    v = _verdict(present={ACTOR: _actor_needs(7)}, world_size=7)
    C.check_needs(v, _actor_needs(2), ACTOR_META, UNSET)
    assert v.findings[0]["message"] == (
        ACTOR + " holds 5 shard file(s) that .metadata does not reference (__2_0.distcp, __3_0.distcp, "
        "__4_0.distcp, __5_0.distcp): left over from a larger earlier run, not counted"
    )


def test_an_actor_marker_larger_than_the_files_makes_the_rest_missing():
    v = _verdict(present={ACTOR: _actor_needs(1)}, world_size=1)
    C.check_needs(v, _actor_needs(3), ACTOR_META, UNSET)
    assert v.world_size == 3 and v.findings == []
    assert v.missing == [ACTOR + "/__1_0.distcp", ACTOR + "/__2_0.distcp"]


@pytest.mark.parametrize("rel", [CRITIC_META, "actor/actor_policy/dcp_checkpoint/.metadata"])
def test_only_the_actor_marker_decides_the_world_size(rel):
    parent = rel.rpartition("/")[0]
    v = _verdict(present={parent: _actor_needs(2)}, world_size=2)
    C.check_needs(v, _actor_needs(3), rel, {"actor_world_size": 2})
    assert v.world_size == 2 and v.findings == [] and v.missing == [parent + "/__2_0.distcp"]


def test_a_large_actor_marker_of_the_world_size_set_is_no_mismatch():
    """Rank counts above 256 are ints CPython does not share: the sizes compare by value."""
    v = _verdict(present={ACTOR: _actor_needs(300)}, world_size=int("300"))
    C.check_needs(v, _actor_needs(300), ACTOR_META, {"actor_world_size": int("300")})
    assert v.findings == [] and v.missing == [] and v.world_size == 300
