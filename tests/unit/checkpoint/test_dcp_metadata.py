# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DCP .metadata reader (torch's pickle format, no torch) and the manifest-driven shard checks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pickle
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
import dcp_format as DF
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_metadata as D
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource

ROW = F.ROWS[0]  # FSDP x embodied, W=2
META = "actor/dcp_checkpoint/.metadata"
STEP = 40


@pytest.mark.parametrize("layout", sorted(DF.LAYOUTS))
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_reads_torch_format_in_every_pickle_protocol(protocol, layout):
    items = [("__0_0.distcp", 0, 100), ("__0_0.distcp", 100, 28), ("__1_0.distcp", 0, 64)]
    manifest = D.parse(DF.metadata_bytes(items, protocol=protocol, layout=layout))
    assert manifest.needs == {"__0_0.distcp": 128, "__1_0.distcp": 64}
    assert manifest.items == 4  # three tensor chunks and one bytes entry


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch %s" % _Boom.target,))


def test_a_hostile_pickle_runs_nothing(tmp_path):
    _Boom.target = str(tmp_path / "pwned")
    with pytest.raises(D.UnknownFormat, match=r"(posix|os)\.system"):
        D.parse(pickle.dumps(_Boom()))
    assert not os.path.exists(_Boom.target)


def test_the_layout_call_takes_only_a_layout_name():
    """``torch.serialization._get_layout`` is the one callable a pickle may name: it returns its argument."""
    data = DF.metadata_bytes([("__0_0.distcp", 0, 16)]).replace(b"torch.strided", b"os.system;ls!")
    with pytest.raises(D.UnknownFormat, match="not a layout name"):
        D.parse(data)


@pytest.mark.parametrize(
    "data,fragment",
    [
        (b"", "empty"),
        (lambda: DF.metadata_bytes(DF.shard_items(["__0_0.distcp", "__1_0.distcp"]))[:300], "truncated"),
        (lambda: DF.metadata_bytes([]), "names no shard file"),
    ],
    ids=["empty", "truncated-pickle", "no-storage"],
)
def test_a_marker_without_shard_names_is_no_commit(tmp_path, data, fragment):
    """The bug: a .metadata naming no shard was taken as a valid commit marker."""
    data = data() if callable(data) else data
    files = [(rel, data if rel == META else content, age) for rel, content, age in F.tree(ROW, STEP, "complete")]
    F.write_local(str(tmp_path), "global_step_%d" % STEP, files)
    r = run_gate(LocalSource(str(tmp_path)), dict(ROW.gate_params(), quiet_seconds=120))
    assert not r["complete"]
    bad = [p for p in r["findings"] if p["id"] == "invalid-dcp-metadata"]
    assert bad and bad[0]["severity"] == "error" and bad[0]["path"] == META and fragment in bad[0]["message"]


@pytest.mark.parametrize(
    "data", [b"RLARKSIM-DCP\x00binary", pickle.dumps({"storage_data": {}})], ids=["not-a-pickle", "other-pickle"]
)
def test_unknown_formats_fall_back_to_the_presence_rules_with_a_warning(tmp_path, data):
    files = [(rel, data if rel == META else content, age) for rel, content, age in F.tree(ROW, STEP, "complete")]
    F.write_local(str(tmp_path), "global_step_%d" % STEP, files)
    r = run_gate(LocalSource(str(tmp_path)), dict(ROW.gate_params(), quiet_seconds=120))
    assert r["complete"], r["findings"]
    warn = [p for p in r["findings"] if p["id"] == "dcp-metadata-unverified"]
    assert warn and warn[0]["severity"] == "warning" and warn[0]["path"] == META


def test_a_truncated_shard_names_the_file_and_the_missing_bytes(tmp_path):
    items = [("__0_0.distcp", 0, 4096), ("__0_0.distcp", 4096, 1000), ("__1_0.distcp", 0, 5096)]
    files = []
    for rel, content, age in F.tree(ROW, STEP, "complete"):
        if rel == META:
            content = DF.metadata_bytes(items, extra_bytes_entry=False)
        elif rel.endswith("__0_0.distcp"):
            content = b"\1" * 4500  # the save died inside the second item
        elif rel.endswith("__1_0.distcp"):
            content = b"\1" * 5096
        files.append((rel, content, age))
    F.write_local(str(tmp_path), "global_step_%d" % STEP, files)
    r = run_gate(LocalSource(str(tmp_path)), dict(ROW.gate_params(), quiet_seconds=120))
    assert not r["complete"] and r["missing"] == []
    cut = [p for p in r["findings"] if p["id"] == "truncated-shard"]
    assert len(cut) == 1 and cut[0]["severity"] == "error"
    assert cut[0]["path"] == "actor/dcp_checkpoint/__0_0.distcp" and cut[0]["missing_bytes"] == 596
    assert "4500 bytes" in cut[0]["message"] and "5096" in cut[0]["message"]


def test_a_shard_the_metadata_references_but_the_world_size_does_not_is_missing(tmp_path):
    """.metadata written by 3 ranks, files of 2 (and actor_world_size unset): the marker decides."""
    names = ["__0_0.distcp", "__1_0.distcp", "__2_0.distcp"]
    files = [
        (rel, F.dcp_metadata(names) if rel == META else content, age)
        for rel, content, age in F.tree(ROW, STEP, "complete")
    ]
    F.write_local(str(tmp_path), "global_step_%d" % STEP, files)
    r = run_gate(LocalSource(str(tmp_path)), {"quiet_seconds": 120})
    assert not r["complete"] and r["world_size"] == 3
    assert "actor/dcp_checkpoint/__2_0.distcp" in r["missing"]


def test_torch_dist_shard_truncation(tmp_path):
    row = next(r for r in F.ROWS if r.backend == "megatron_torch_dist")
    F.write_local(str(tmp_path), "global_step_%d" % STEP, F.tree(row, STEP, "shard-truncated"))
    r = run_gate(LocalSource(str(tmp_path)), dict(row.gate_params(), quiet_seconds=120))
    cut = [p for p in r["findings"] if p["id"] == "truncated-shard"]
    assert not r["complete"] and cut and cut[0]["path"] == "actor/iter_%07d/__1_0.distcp" % STEP
    assert cut[0]["missing_bytes"] == 5
