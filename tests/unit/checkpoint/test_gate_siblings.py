# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What sibling steps reveal: trailing parts a newer step lacks (issue 26's surviving mutants of siblings.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource


def newer_step_without(tmp_path, row, prefixes):
    """Step 10 complete, step 20 without the files under ``prefixes``: step 20's findings, the gate's step."""
    F.write_local(str(tmp_path), "global_step_10", F.tree(row, 10, "complete"), age=1000)
    files = [f for f in F.tree(row, 20, "complete") if not f[0].startswith(prefixes)]
    F.write_local(str(tmp_path), "global_step_20", files, age=500)
    params = dict(row.gate_params(), quiet_seconds=120, runner="auto", full_report=True)
    r = run_gate(LocalSource(str(tmp_path)), params)
    [newer] = [s for s in r["steps"] if s["name"] == "global_step_20"]
    return [(f["id"], f["path"]) for f in newer["findings"]], r["step"]


def test_sft_data_and_rng_cut_off_point_at_the_last_one_written(tmp_path):
    row = F.ROWS[3]  # FSDP x SFT: actor/data.pt then actor/rng.pt, written last
    found, step = newer_step_without(tmp_path, row, ("actor/data.pt", "actor/rng.pt"))
    assert (found, step) == ([("missing-trailing-part", "actor/rng.pt")], 10)


def test_a_learned_alpha_seen_in_a_sibling_is_required_on_fsdp_too(tmp_path):
    row = F.ROWS[5]  # FSDP x SAC with a learned alpha
    found, step = newer_step_without(tmp_path, row, ("actor/sac_components/alpha",))
    assert (found, step) == ([("missing-trailing-part", "actor/sac_components/alpha/dcp_checkpoint/.metadata")], 10)


def test_a_reasoning_root_still_checks_sft_parts_after_skipping_the_critic(tmp_path):
    # FSDP reasoning: the critic rule does not apply, and must not end the look at the parts after it.
    row = F.ROWS[9]
    extra = [("actor/data.pt", b"d", 0.001), ("actor/rng.pt", b"r", 0.0)]
    F.write_local(str(tmp_path), "global_step_10", F.tree(row, 10, "complete") + extra, age=1000)
    F.write_local(str(tmp_path), "global_step_20", F.tree(row, 20, "complete"), age=500)
    params = dict(row.gate_params(), quiet_seconds=120, runner="auto", full_report=True)
    r = run_gate(LocalSource(str(tmp_path)), params)
    [newer] = [s for s in r["steps"] if s["name"] == "global_step_20"]
    assert [(f["id"], f["path"]) for f in newer["findings"]] == [("missing-trailing-part", "actor/rng.pt")]
