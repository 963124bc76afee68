"""RLinf checkpoint layouts and write order as rlark-sim writes them (rlinf-checkpoints.md)."""

import io
import json
import zipfile

from rlark_sim import layouts
from rlark_sim.overrides import TrainerConfig
from rlark_sim.storage import LocalSink
from rlark_sim.trainer import checkpoint_problems


def cfg(**env):
    return TrainerConfig({}, {k: str(v) for k, v in env.items()})


def paths(plan):
    return [op[1] if op[0] == "write" else "rename:" + op[2] for op in plan]


def test_fsdp_dcp_shards_then_metadata_rename_then_full_weights():
    plan = paths(layouts.save_plan(cfg(SIM_RLINF_WORLD_SIZE=3), 40))
    assert plan == [
        "actor/dcp_checkpoint/__0_0.distcp",
        "actor/dcp_checkpoint/__1_0.distcp",
        "actor/dcp_checkpoint/__2_0.distcp",
        "actor/dcp_checkpoint/.metadata.tmp",
        "rename:actor/dcp_checkpoint/.metadata",
        "actor/model_state_dict/full_weights.pt",
    ]
    required = layouts.required_entries(cfg(SIM_RLINF_WORLD_SIZE=3), 40)
    assert "actor/dcp_checkpoint/.metadata" in required and "actor/dcp_checkpoint/.metadata.tmp" not in required


def test_full_weights_off():
    assert not any("full_weights" in p for p in paths(layouts.save_plan(cfg(SIM_RLINF_FULL_WEIGHTS="false"), 1)))


def test_megatron_torch_per_rank_files_then_tracker_then_data():
    c = cfg(
        SIM_RLINF_RUNNER="reasoning", SIM_RLINF_BACKEND="megatron", SIM_RLINF_TP=2, SIM_RLINF_PP=2, SIM_RLINF_CRITIC=1
    )
    plan = paths(layouts.save_plan(c, 7))
    actor = [p for p in plan if p.startswith("actor/")]
    assert actor[:2] == [
        "actor/iter_0000007/mp_rank_00_000/distrib_optim.pt",
        "actor/iter_0000007/mp_rank_00_000/model_optim_rng.pt",
    ]
    assert len([p for p in actor if p.endswith("model_optim_rng.pt")]) == 4
    assert actor[-1] == "actor/latest_checkpointed_iteration.txt"
    assert plan.index("actor/latest_checkpointed_iteration.txt") < plan.index(
        "critic/iter_0000007/mp_rank_00_000/distrib_optim.pt"
    )
    assert plan[-1] == "data/data.pt"


def test_megatron_single_pp_has_no_pp_suffix():
    assert layouts.mp_rank_dirs(2, 1) == ["mp_rank_00", "mp_rank_01"]


def test_torch_dist_and_extras_order():
    dist = paths(layouts.save_plan(cfg(SIM_RLINF_BACKEND="megatron_torch_dist", SIM_RLINF_RUNNER="coding"), 3))
    assert dist[-4:] == [
        "actor/iter_0000003/.metadata",
        "actor/iter_0000003/common.pt",
        "actor/iter_0000003/metadata.json",
        "actor/latest_checkpointed_iteration.txt",
    ]
    sac = paths(layouts.save_plan(cfg(SIM_RLINF_RUNNER="sac", SIM_RLINF_WORLD_SIZE=1), 3))
    assert sac[-1] == "actor/sac_components/replay_buffer/rank_0/trajectory_index.json"
    assert "rename:actor/sac_components/alpha/dcp_checkpoint/.metadata" in sac
    iql = paths(layouts.save_plan(cfg(SIM_RLINF_RUNNER="iql", SIM_RLINF_WORLD_SIZE=1), 3))
    assert iql[-1] == "actor/iql_components/state.pt"
    vla = paths(layouts.save_plan(cfg(SIM_RLINF_RUNNER="sft", SIM_RLINF_SFT_DATA="vla"), 3))
    assert vla[-2:] == ["actor/data.pt", "actor/rng.pt"]


def test_payloads_are_real_zip_and_json():
    pt = layouts.payload("pt", "actor/model_state_dict/full_weights.pt", 5)
    with zipfile.ZipFile(io.BytesIO(pt)) as zf:
        assert "archive/data.pkl" in zf.namelist()
    assert not zipfile.is_zipfile(io.BytesIO(pt[: len(pt) // 2]))
    assert json.loads(layouts.payload("json", "x/trajectory_index.json", 5))["global_step"] == 5
    assert layouts.payload("text", "actor/latest_checkpointed_iteration.txt", 12) == b"12"


def write_plan(sink, c, step, stop_before=None):
    for i, op in enumerate(layouts.save_plan(c, step)):
        if i == stop_before:
            return
        if op[0] == "rename":
            sink.rename(op[1], op[2])
        else:
            sink.write(op[1], layouts.payload(op[2], op[1], step))


def test_completeness_check(tmp_path):
    c = cfg()
    complete = LocalSink(str(tmp_path / "a"))
    write_plan(complete, c, 4)
    assert checkpoint_problems(c, complete, "", 4) == []
    partial = LocalSink(str(tmp_path / "b"))
    write_plan(partial, c, 4, stop_before=3)  # shards only
    assert "missing actor/dcp_checkpoint/.metadata" in checkpoint_problems(c, partial, "", 4)
    truncated = LocalSink(str(tmp_path / "c"))
    write_plan(truncated, c, 4)
    data = truncated.read("actor/model_state_dict/full_weights.pt")
    truncated.write("actor/model_state_dict/full_weights.pt", data[:100])
    assert checkpoint_problems(c, truncated, "", 4) == ["truncated actor/model_state_dict/full_weights.pt"]
