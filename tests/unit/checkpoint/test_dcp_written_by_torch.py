# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate on DCP checkpoints written by real torch (CPU, 2 gloo ranks), not by our own writer.

``data/torch-dcp/torch-<version>/`` holds what ``hack/write_torch_dcp.py`` wrote with each torch
(``make torch-dcp-fixtures``): an FSDP ``dcp_checkpoint`` and ``expected.json``, torch's own reading
of its ``.metadata`` (per shard file the largest offset + length). The gate reads the same files
without torch; these tests hold its reading to torch's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_metadata as D
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "torch-dcp")
# RLinf's torch stacks (2.6 with sglang 0.4, 2.11 with Megatron core_r0.17) and the newest torch
TORCH_VERSIONS = ("torch-2.6.0", "torch-2.11.0", "torch-2.15.0")
FSDP = F.ROWS[0]  # FSDP x embodied, actor world size 2
TORCH_DIST = next(r for r in F.ROWS if r.backend == "megatron_torch_dist")
STEP = 40
PLACES = {FSDP.id: "actor/dcp_checkpoint", TORCH_DIST.id: "actor/iter_%07d" % STEP}


class Written:
    def __init__(self, version):
        self.dir = os.path.join(DATA, version, "fsdp_w2")
        with open(os.path.join(DATA, version, "expected.json")) as fh:
            self.expected = json.load(fh)

    def read(self, name):
        with open(os.path.join(self.dir, name), "rb") as fh:
            return fh.read()


@pytest.fixture(params=TORCH_VERSIONS)
def written(request):
    return Written(request.param)


def step_with(tmp_path, row, written, cut=None):
    """A complete step of ``row`` whose DCP files are torch's; ``cut`` = (shard, bytes to drop)."""
    place = PLACES[row.id]
    files = []
    for rel, content, age in F.tree(row, STEP, "complete"):
        if rel.startswith(place + "/") and rel.rsplit("/", 1)[1] in written.expected["sizes"]:
            name = rel.rsplit("/", 1)[1]
            content = written.read(name)
            if cut and name == cut[0]:
                content = content[: len(content) - cut[1]]
        files.append((rel, content, age))
    F.write_local(str(tmp_path), "global_step_%d" % STEP, files)
    return place


def gate(tmp_path, row, **extra):
    return run_gate(LocalSource(str(tmp_path)), dict(row.gate_params(), quiet_seconds=120, **extra))


def test_every_torch_version_has_its_checkpoint():
    assert sorted(os.listdir(DATA)) == sorted(TORCH_VERSIONS)


def test_the_reader_agrees_with_torchs_own(written):
    manifest = D.parse(written.read(".metadata"))
    assert manifest.needs == written.expected["needs"]
    assert written.expected["torch"].startswith(os.path.basename(os.path.dirname(written.dir))[len("torch-") :])
    # torch writes each shard exactly as long as its items: a whole file is not short
    assert all(written.expected["sizes"][name] >= end for name, end in manifest.needs.items())


@pytest.mark.parametrize("row", [FSDP, TORCH_DIST], ids=lambda r: r.id)
@pytest.mark.parametrize("full_report", [False, True], ids=["newest-first", "full-report"])
def test_a_checkpoint_torch_wrote_is_complete_and_checked_by_its_manifest(tmp_path, written, row, full_report):
    step_with(tmp_path, row, written)
    r = gate(tmp_path, row, full_report=full_report)
    assert r["complete"], r["findings"]
    # read as a torch DCP manifest, not waved through by the presence rules
    assert [p["id"] for p in r["findings"] if p["id"].startswith(("dcp-", "invalid-dcp"))] == []


@pytest.mark.parametrize("row", [FSDP, TORCH_DIST], ids=lambda r: r.id)
@pytest.mark.parametrize("full_report", [False, True], ids=["newest-first", "full-report"])
def test_a_shard_torch_wrote_cut_short_names_the_file_and_the_missing_bytes(tmp_path, written, row, full_report):
    shard = "__1_0.distcp"
    place = step_with(tmp_path, row, written, cut=(shard, 1000))
    r = gate(tmp_path, row, full_report=full_report)
    assert not r["complete"]
    cut = [p for p in r["findings"] if "missing_bytes" in p]
    assert [(p["id"], p["severity"], p["path"], p["missing_bytes"]) for p in cut] == [
        ("truncated-shard", "error", "%s/%s" % (place, shard), 1000)
    ]
    size = written.expected["sizes"][shard]
    assert "%d bytes" % (size - 1000) in cut[0]["message"]
    assert str(written.expected["needs"][shard]) in cut[0]["message"]


def test_a_shard_torch_wrote_that_is_gone_is_missing(tmp_path, written):
    step_with(tmp_path, FSDP, written)
    os.remove(os.path.join(str(tmp_path), "global_step_%d" % STEP, PLACES[FSDP.id], "__0_0.distcp"))
    r = gate(tmp_path, FSDP)
    assert not r["complete"] and r["missing"] == ["%s/__0_0.distcp" % PLACES[FSDP.id]]
