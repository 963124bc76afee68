# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint/parallelism.py: how many ranks wrote a step, and the shards outside them (issue 26)."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import parallelism as P
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.step_listing import StepFacts
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.verdict import StepVerdict

DCP = "actor/dcp_checkpoint"
RB = "actor/sac_components/replay_buffer"


def facts(files, dirs=()):
    """A step from {path: mtime} (parent directories added) and extra directories."""
    out = StepFacts("global_step_5")
    for rel, mtime in files.items():
        out.add_file(rel, 1, mtime)
        parts = rel.split("/")[:-1]
        out.dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    out.dirs.update(dirs)
    return out


def verdict(f, family="actor"):
    v = StepVerdict(f)
    v.family = family
    return v


def ids(v):
    return [(p["id"], p["severity"], p["path"]) for p in v.findings]


# ---------------------------------------------------------------- rank times
def test_rank_times_of_files_and_of_rank_directories():
    f = facts(
        {
            DCP + "/__0_0.distcp": 5.0,
            DCP + "/__1_0.distcp": 6.0,
            DCP + "/.metadata": 9.0,
            RB + "/rank_0/metadata.json": 3.0,
            RB + "/rank_0/trajectory_index.json": 4.0,
            RB + "/rank_1/x.bin": 8.0,  # counted, not kept: the rank's time is unknown
        },
        dirs=[DCP + "/__2_0.distcp"],  # a directory with a shard's name is no shard
    )
    children = f.children()
    assert P._rank_times(children, DCP, L.DISTCP, False, f) == {0: 5.0, 1: 6.0}
    assert P._rank_times(children, RB, L.RANK_DIR, True, f) == {0: 4.0, 1: None}
    assert P._rank_times(children, RB + "/rank_0", L.RANK_DIR, True, f) == {}
    assert P._rank_times(children, "nowhere", L.DISTCP, False, f) == {}


# ---------------------------------------------------------------- older generations
@pytest.mark.parametrize(
    "times, split",
    [
        ({}, None),
        ({0: 1000.0}, None),
        ({0: 1000.0, 1: None}, None),
        ({0: 1000.0, 1: 399.0}, 1),  # 601 s older
        ({0: 1000.0, 1: 400.0}, None),  # exactly 600 s: one save
        ({0: 1000.0, 1: 401.0}, None),
        ({0: 1000.0, 1: 1000.0, 2: 10.0, 3: 20.0}, 2),
        ({0: 10.0, 1: 1000.0}, None),  # a lower rank older: not a leftover of a larger run
        ({0: 1000.0, 1: 2000.0, 2: 1300.0}, None),
        ({0: 2000.0, 1: 1000.0, 2: 1300.0}, 1),
        ({0: 2000.0, 1: 1500.0, 2: 100.0}, 2),
        ({0: 2000.0, 1: 1000.0, 2: 1500.0}, None),  # 1500 is not far older than rank 1's 1000
        ({0: 1000.0, 1: 2000.0, 2: 100.0}, 2),
        ({0: 5000.0, 1: 5000.0, 2: 4500.0, 3: 4000.0}, None),  # rank 3 is within 600 s of rank 2
        ({1: 1000.0, 5: 100.0}, 5),
        ({0: -1000.0, 1: -1601.0}, 1),
        ({0: 0.0, 1: -601.0}, 1),
        ({0: 0.0, 1: -600.0}, None),
    ],
)
def test_older_generation_pinned_at_600_seconds(times, split):
    assert P._older_generation(times) == split


# ---------------------------------------------------------------- world size
def test_the_given_world_size_wins_and_the_dcp_ranks_are_kept():
    f = facts({DCP + "/__0_0.distcp": 1.0, DCP + "/__2_0.distcp": 1.0})
    v = verdict(f)
    size, groups = P.infer_world_size(v, f, f.children(), 4)
    assert (size, groups, v.distcp_ranks, v.findings) == (4, [(DCP, {0, 2})], (0, 2), [])


def test_every_group_agreeing_is_the_world_size():
    f = facts({DCP + "/__%d_0.distcp" % r: 1.0 for r in range(3)})
    f.add_file("actor/local_shard_checkpoint/checkpoint_rank_0.pt", 1, 1.0)
    v = verdict(f)
    assert P.infer_world_size(v, f, f.children(), None)[0] is None
    assert v.findings[0]["message"] == (
        "the actor world size cannot be inferred unambiguously (actor/dcp_checkpoint has ranks 0,1,2; "
        "actor/local_shard_checkpoint has ranks 0)"
    )
    assert v.findings[0]["hint"] == "pass actor_world_size (the number of actor ranks that wrote this checkpoint)"
    assert v.distcp_ranks == (0, 1, 2)  # the DCP group's ranks, not the last group's
    f = facts({DCP + "/__%d_0.distcp" % r: 1.0 for r in range(3)})
    v = verdict(f)
    assert P.infer_world_size(v, f, f.children(), None) == (3, [(DCP, {0, 1, 2})])
    assert v.findings == [] and v.distcp_ranks == (0, 1, 2)


def test_no_shard_or_a_hole_or_an_older_generation_is_ambiguous():
    f = facts({"actor/x.json": 1.0})
    v = verdict(f)
    assert P.infer_world_size(v, f, f.children(), None) == (None, [])
    assert ids(v) == [("world-size-ambiguous", "error", "")]
    assert v.findings[0]["message"].endswith("(no rank-indexed shard was found)")
    assert v.distcp_ranks == ()
    f = facts({DCP + "/__0_0.distcp": 1.0, DCP + "/__2_0.distcp": 1.0})
    v = verdict(f)
    assert P.infer_world_size(v, f, f.children(), None)[0] is None
    assert v.findings[0]["message"].endswith("(actor/dcp_checkpoint has ranks 0,2)")
    f = facts({DCP + "/__0_0.distcp": 5000.0, DCP + "/__1_0.distcp": 1000.0})
    v = verdict(f)
    assert P.infer_world_size(v, f, f.children(), None)[0] is None
    assert v.findings[0]["message"].endswith(
        "(actor/dcp_checkpoint has ranks 0,1; actor/dcp_checkpoint ranks >= 1 are far older than the others)"
    )
    # given, an older generation is no question: stale_ranks names it
    v = verdict(f)
    assert P.infer_world_size(v, f, f.children(), 1)[0] == 1 and v.findings == []


def test_rank_text_shortens_past_six():
    assert P._rank_text({3, 1, 2}) == "1,2,3"
    assert P._rank_text(set(range(6))) == "0,1,2,3,4,5"
    assert P._rank_text(set(range(7))) == "0..6 (7)"


def test_stale_ranks_from_the_world_size_on():
    v = verdict(facts({}))
    P.stale_ranks(v, [(DCP, {0, 1, 2, 3}), ("actor/local_shard_checkpoint", {0, 1})], 2)
    assert ids(v) == [("stale-shards", "warning", DCP)]
    assert v.findings[0]["message"] == (
        "actor/dcp_checkpoint holds 2 shard(s) for rank(s) 2,3 beyond the world size 2: left over from a larger "
        "earlier run, not counted"
    )
    v = verdict(facts({}))
    P.stale_ranks(v, [(DCP, {0, 1})], 2)
    assert v.findings == []


# ---------------------------------------------------------------- Megatron grid
def megatron(names, step=5, **given):
    o = {"tensor_parallel": None, "pipeline_parallel": None, "expert_parallel": None, "actor_world_size": None}
    o.update(given)
    f = facts({"actor/iter_%07d/%s/model_optim_rng.pt" % (step, n): 1.0 for n in names})
    v = verdict(f, "reasoning")
    v.step = step
    return v, P.megatron_grid(v, f.children(), o)


def test_no_mp_rank_directory_is_missing_entries_unless_tp_is_given():
    v, grid = megatron([])
    assert grid is None and v.findings == []
    assert v.missing == ["actor/iter_0000005/mp_rank_*/model_optim_rng.pt", "actor/latest_checkpointed_iteration.txt"]
    v, grid = megatron([], tensor_parallel=2)
    assert (grid, v.missing) == ((2, 1, 1), [])


def test_an_undecidable_grid_says_what_to_pass():
    v, grid = megatron(["mp_rank_00_000", "mp_rank_00_001"])
    assert grid is None and ids(v) == [("parallel-layout-ambiguous", "error", "")]
    assert v.findings[0]["message"] == (
        "the Megatron TP x PP x EP layout of actor/iter_0000005 cannot be inferred from its mp_rank directories"
    )
    assert v.findings[0]["hint"].startswith("pass pipeline_parallel or expert_parallel")


@pytest.mark.parametrize("world, ok", [(None, True), (4, True), (8, True), (6, False), (2, False), (5, False)])
def test_the_world_size_must_be_a_multiple_of_the_grid(world, ok):
    v, grid = megatron(
        ["mp_rank_00_000", "mp_rank_01_000", "mp_rank_00_001", "mp_rank_01_001"],
        pipeline_parallel=2,
        actor_world_size=world,
    )
    assert grid == (2, 2, 1)
    if ok:
        assert v.findings == []
    else:
        assert ids(v) == [("parallel-layout-mismatch", "error", "")]
        assert v.findings[0]["message"] == (
            "actor_world_size=%d is not a multiple of TP x PP x EP = 4 found in actor/iter_0000005" % world
        )


def test_megatron_stale_iterations_and_mp_ranks_outside_the_grid():
    names = {
        "actor/iter_0000005/mp_rank_00/model_optim_rng.pt": 1.0,
        "actor/iter_0000005/mp_rank_01/model_optim_rng.pt": 1.0,
        "actor/iter_0000005/mp_rank_02/model_optim_rng.pt": 1.0,
        "actor/iter_0000005/mp_rank_03/model_optim_rng.pt": 1.0,
        "actor/iter_0000005/mp_rank_xx/model_optim_rng.pt": 1.0,
        "actor/iter_0000004/mp_rank_00/model_optim_rng.pt": 1.0,
        "critic/iter_0000005/mp_rank_00/model_optim_rng.pt": 1.0,
        "critic/iter_0000005/mp_rank_01/model_optim_rng.pt": 1.0,
        "critic/iter_0000005/mp_rank_02/model_optim_rng.pt": 1.0,
    }
    f = facts(names, dirs=["actor/iter_5"])
    v = verdict(f, "reasoning")
    v.grid = (2, 1, 1)
    P.megatron_stale(v, f.children())
    assert ids(v) == [
        ("stale-iteration", "warning", "actor/iter_0000004"),
        ("stale-shards", "warning", "actor/iter_0000005"),
        ("stale-shards", "warning", "critic/iter_0000005"),
    ]
    assert v.findings[0]["message"] == "actor/iter_0000004 belongs to iteration 4, not to this step"
    assert v.findings[1]["message"] == (
        "actor/iter_0000005 holds 2 mp_rank directories outside the TP x PP x EP grid 2x1x1: left over from "
        "another run, not counted"
    )
    assert v.findings[2]["message"].startswith("critic/iter_0000005 holds 1 mp_rank directory outside the TP x PP")


def test_megatron_stale_of_a_torch_dist_step_or_without_a_grid():
    f = facts({"actor/iter_0000005/mp_rank_00/x.pt": 1.0, "actor/iter_0000006/common.pt": 1.0})
    v = verdict(f, "reasoning")
    v.features = {"torch_dist"}
    v.grid = (1, 1, 1)
    P.megatron_stale(v, f.children())
    assert ids(v) == [("stale-iteration", "warning", "actor/iter_0000006")]
    v = verdict(f, "reasoning")
    v.features = {"torch_dist"}
    P.megatron_stale(v, f.children())  # torch_dist has no grid: its iterations are still looked at
    assert ids(v) == [("stale-iteration", "warning", "actor/iter_0000006")]


@pytest.mark.parametrize("world, ok", [(2, False), (4, True), (6, False), (8, True)])
def test_the_world_size_against_a_grid_with_experts(world, ok):
    names = ["mp_rank_00_000", "mp_rank_01_000", "mp_rank_00_001", "mp_rank_01_001"]
    v, grid = megatron(names, expert_parallel=2, actor_world_size=world)
    assert grid == (2, 1, 2)
    if ok:
        assert v.findings == []
    else:
        assert v.findings[0]["message"] == (
            "actor_world_size=%d is not a multiple of TP x PP x EP = 4 found in actor/iter_0000005" % world
        )


def test_torch_dist_stale_iterations_of_the_critic_too():
    f = facts(
        {
            "actor/iter_0000005/common.pt": 1.0,
            "critic/iter_0000005/common.pt": 1.0,
            "critic/iter_0000003/common.pt": 1.0,
        }
    )
    v = verdict(f, "reasoning")
    v.features = {"torch_dist"}
    P.megatron_stale(v, f.children())
    assert ids(v) == [("stale-iteration", "warning", "critic/iter_0000003")]


def test_the_world_size_against_a_pipeline_only_grid():
    v, grid = megatron(["mp_rank_00_000", "mp_rank_00_001"], pipeline_parallel=2, actor_world_size=3)
    assert grid == (1, 2, 1)
    assert v.findings[0]["message"] == (
        "actor_world_size=3 is not a multiple of TP x PP x EP = 2 found in actor/iter_0000005"
    )


def test_a_file_named_like_a_rank_directory_is_no_rank():
    f = facts({RB + "/rank_0/trajectory_index.json": 4.0})
    f.index = {RB: {"rank_0", "rank_1"}, RB + "/rank_0": {"trajectory_index.json"}}  # rank_1: a file
    assert P._rank_times(f.children(), RB, L.RANK_DIR, True, f) == {0: 4.0}


def test_the_steps_own_iteration_is_not_stale_past_the_small_ints():
    f = facts({"actor/iter_0001000/mp_rank_00/model_optim_rng.pt": 1.0})
    v = verdict(f, "reasoning")
    v.step, v.grid = 1000, (1, 1, 1)
    P.megatron_stale(v, f.children())
    assert v.findings == []


def test_an_iql_step_has_no_dcp_ranks():
    # IQL's groups sort before actor/dcp_checkpoint ("actor/actor_policy/..."): none of them is the DCP group.
    f = facts({"actor/actor_policy/local_shard_checkpoint/checkpoint_rank_%d.pt" % r: 1.0 for r in range(2)})
    v = verdict(f, "iql")
    assert P.infer_world_size(v, f, f.children(), None)[0] == 2
    assert v.distcp_ranks == ()
