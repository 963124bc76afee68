# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What sibling steps reveal: trailing parts a newer step lacks (issue 26's surviving mutants of siblings.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.siblings import root_evidence


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


MEGATRON_REASONING = F.ROWS[11]  # actor/ and critic/ iterations, then data/data.pt


def two_steps(tmp_path, row, older, newer, **params):
    """global_step_10 with ``older`` files, global_step_20 with ``newer``: step 20's (id, path) findings and
    the gate's step, from a full report and from the newest-first walk (siblings probed shallowly)."""
    F.write_local(str(tmp_path), "global_step_10", older, age=1000)
    F.write_local(str(tmp_path), "global_step_20", newer, age=500)
    out = []
    for full_report in (True, False):
        options = dict(row.gate_params(), quiet_seconds=120, runner="auto", full_report=full_report)
        options.update(params)
        r = run_gate(LocalSource(str(tmp_path)), options)
        [step20] = [s for s in r["steps"] if s["name"] == "global_step_20"]
        out.append(([(f["id"], f["path"]) for f in step20["findings"]], r["step"]))
    assert out[0] == out[1], out
    return out[0]


def without(files, prefix):
    return [f for f in files if not f[0].startswith(prefix)]


def test_megatron_reasoning_critic_auto_a_step_without_the_critic_its_siblings_have_was_cut_off(tmp_path):
    # critic unset (auto): step 10 saved a critic, so step 20 without critic/ stopped before it.
    row = MEGATRON_REASONING
    found = two_steps(
        tmp_path, row, F.tree(row, 10, "complete"), without(F.tree(row, 20, "complete"), "critic/"), critic=None
    )
    assert found == ([("missing-trailing-part", "critic/" + F.TRACKER)], 10)


def test_megatron_reasoning_critic_auto_no_step_with_a_critic_needs_none(tmp_path):
    row = MEGATRON_REASONING
    older, newer = (without(F.tree(row, s, "complete"), "critic/") for s in (10, 20))
    assert two_steps(tmp_path, row, older, newer, critic=None) == ([], 20)


def test_megatron_reasoning_a_step_with_its_critic_is_still_checked_for_later_parts(tmp_path):
    # The critic is there; the SFT data parts the older step has (written last) are not.
    row = MEGATRON_REASONING
    extra = [("actor/data.pt", b"d", 0.001), ("actor/rng.pt", b"r", 0.0)]
    found = two_steps(tmp_path, row, F.tree(row, 10, "complete") + extra, F.tree(row, 20, "complete"), critic=None)
    assert found == ([("missing-trailing-part", "actor/rng.pt")], 10)


def test_an_explicit_actor_runner_never_requires_a_critic_a_sibling_has(tmp_path):
    # runner=coding saves no critic: a critic/ directory beside an older step is no trailing part of step 20.
    row = F.ROWS[13]  # Megatron x coding
    stray = [(f[0], f[1], f[2] + 1) for f in F.tree(MEGATRON_REASONING, 10, "complete") if f[0].startswith("critic/")]
    found = two_steps(tmp_path, row, F.tree(row, 10, "complete") + stray, F.tree(row, 20, "complete"), runner="coding")
    assert found == ([], 20)


def test_a_step_of_an_unsupported_layout_reports_only_that(tmp_path):
    # Step 20: Megatron iterations with sac_components (SAC is FSDP-only); step 10 a reasoning step with a critic.
    row = MEGATRON_REASONING
    sac = [("actor/sac_components/target_model/checkpoint_rank_0.pt", F.zip_payload(), 0.0)]
    newer = without(without(F.tree(row, 20, "complete"), "critic/"), "data/") + sac
    found, _step = two_steps(tmp_path, row, F.tree(row, 10, "complete"), newer, critic=None)
    assert [i for i, _p in found] == ["unsupported-layout"]


@pytest.mark.parametrize("row", [F.ROWS[9], F.ROWS[12]], ids=lambda r: r.id)
def test_runner_auto_decoded_from_json_finds_the_reasoning_step_cut_off_before_data(tmp_path, row):
    # The module gets its options decoded from JSON: "auto" is then an equal string, not the same object.
    options = json.loads(json.dumps(dict(row.gate_params(), runner="auto", critic=None)))
    newer = without(F.tree(row, 20, "complete"), "data/")
    found = two_steps(tmp_path, row, F.tree(row, 10, "complete"), newer, **options)
    assert found == ([("missing-trailing-part", "data/data.pt")], 10)


@pytest.mark.parametrize("runner", ["embodied", "coding"])
def test_an_explicit_actor_runner_is_not_overruled_by_a_sibling_s_reasoning_data(tmp_path, runner):
    row = F.ROWS[0] if runner == "embodied" else F.ROWS[13]
    leftover = [("data/data.pt", F.zip_payload(), 0.0)]
    found = two_steps(tmp_path, row, F.tree(row, 10, "complete") + leftover, F.tree(row, 20, "complete"), runner=runner)
    assert found == ([], 20)


def identified(name, family, evidence, features=(), backend="megatron"):
    """A step as identify() leaves it: what root_evidence reads."""
    return types.SimpleNamespace(
        name=name, family=family, evidence=set(evidence), features=set(features), backend=backend
    )


@pytest.mark.parametrize("runner", ["agent", "reasoning", "embodied"])
def test_root_family_is_inferred_only_with_runner_auto(runner):
    steps = [identified("global_step_10", "reasoning", {"reasoning"}), identified("global_step_20", "actor", ())]
    assert root_evidence(steps, {"runner": runner})[0] is None
    assert root_evidence(steps, {"runner": json.loads('"auto"')})[0] == "reasoning"


def test_root_family_is_unknown_when_steps_point_to_two_families():
    steps = [identified("global_step_10", "reasoning", {"reasoning"}), identified("global_step_20", "sac", {"sac"})]
    assert root_evidence(steps, {"runner": "auto"})[0] is None
    assert root_evidence(steps[:1], {"runner": "auto"})[0] == "reasoning"
