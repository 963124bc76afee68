# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint/layouts.py at its edges: the rows of the layout table, parallel sizes and grids (issue 26)."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L


def rels(exp):
    return [rel for rel, _kind in exp.entries]


# ---------------------------------------------------------------- names
def test_step_and_mp_rank_and_iter_names():
    assert L.step_number("global_step_40") == 40
    assert L.step_number("global_step_40_bak") is None
    assert L.mp_rank_name(3, 2, 1, 1, 1) == "mp_rank_03"
    assert L.mp_rank_name(3, 2, 1, 2, 1) == "mp_rank_03_002"
    assert L.mp_rank_name(3, 2, 1, 1, 2) == "mp_rank_03_001"
    assert L.mp_rank_name(3, 2, 1, 3, 2) == "mp_rank_03_002_001"
    assert L.iter_dir("critic", 7) == "critic/iter_0000007"
    assert L.grid_names(2, 1, 1) == frozenset({"mp_rank_00", "mp_rank_01"})
    assert L.grid_names(1, 2, 2) == frozenset(
        {"mp_rank_00_000_000", "mp_rank_00_000_001", "mp_rank_00_001_000", "mp_rank_00_001_001"}
    )
    assert L.grid_names(2, 1, 1) is L.grid_names(2, 1, 1)


# ---------------------------------------------------------------- what is refused
@pytest.mark.parametrize("runner", ["sac", "dagger", "iql"])
@pytest.mark.parametrize("backend", ["megatron", "megatron_torch_dist"])
def test_fsdp_only_runners_refuse_megatron(runner, backend):
    with pytest.raises(L.LayoutError) as exc:
        L.check_combination(runner, backend)
    assert str(exc.value) == (
        "runner '%s' saves through FSDP workers only; backend '%s' does not apply (use fsdp or fsdp2)"
        % (runner, backend)
    )
    L.check_combination(runner, "fsdp2")
    L.check_combination("reasoning", backend)


@pytest.mark.parametrize(
    "args, message",
    [
        (("megatron", 0, None, None, None), "actor_world_size must be at least 1, got 0"),
        (("megatron", None, 0, None, None), "tensor_parallel must be at least 1, got 0"),
        (("megatron", None, None, 0, None), "pipeline_parallel must be at least 1, got 0"),
        (("megatron", None, None, None, 0), "expert_parallel must be at least 1, got 0"),
        (("megatron", None, None, None, -1), "expert_parallel must be at least 1, got -1"),
        (
            ("fsdp", 4, 2, None, None),
            "tensor_parallel=2 is inconsistent with backend fsdp: FSDP checkpoints are sharded by actor_world_size",
        ),
        (("fsdp2", 4, None, 2, None), "pipeline_parallel=2 is inconsistent with backend fsdp2: FSDP"),
        (("fsdp", 4, None, None, 2), "expert_parallel=2 is inconsistent with backend fsdp: FSDP"),
        (
            ("megatron", 6, 2, 2, None),
            "actor_world_size=6 is not a multiple of tensor_parallel x pipeline_parallel x expert_parallel = 4",
        ),
        (("megatron_torch_dist", 4, None, None, 3), "actor_world_size=4 is not a multiple of"),
        (("megatron", 3, 2, None, None), "= 2"),
        (
            ("megatron", 6, None, None, 4),
            "actor_world_size=6 is not a multiple of tensor_parallel x pipeline_parallel x expert_parallel = 4",
        ),
        (("megatron", 3, None, 2, None), "= 2"),
    ],
)
def test_parallel_sizes_that_disagree_are_named(args, message):
    with pytest.raises(L.LayoutError) as exc:
        L.validate_parallel(*args)
    assert str(exc.value).startswith(message) or str(exc.value).endswith(message)


@pytest.mark.parametrize(
    "args",
    [
        ("megatron", 1, 1, 1, 1),
        ("megatron", None, 2, 2, 2),
        ("megatron", 8, 2, 2, 2),
        ("megatron", 12, 2, 3, None),
        ("megatron", 4, None, None, None),
        ("fsdp", 4, 1, 1, 1),
        ("fsdp2", None, None, None, None),
        ("megatron", 6, 3, None, None),
    ],
)
def test_parallel_sizes_that_agree(args):
    assert L.validate_parallel(*args) is None


# ---------------------------------------------------------------- the rows
def test_fsdp_local_shard_without_full_weights():
    exp = L.expect(5, "embodied", "fsdp", 2, features={"local_shard"}, full_weights=False)
    assert exp.entries == [
        ("actor/local_shard_checkpoint/checkpoint_rank_0.pt", L.ZIP),
        ("actor/local_shard_checkpoint/checkpoint_rank_1.pt", L.ZIP),
    ]
    assert exp.order == []
    assert exp.markers == [
        "actor/local_shard_checkpoint/checkpoint_rank_0.pt",
        "actor/local_shard_checkpoint/checkpoint_rank_1.pt",
    ]
    assert exp.row == "fsdp-actor" and exp.rule_text() == L.ROW_TEXT["fsdp-actor"]


def test_fsdp_dcp_order_and_kinds():
    exp = L.expect(5, "embodied", "fsdp2", 2)
    assert exp.entries == [
        ("actor/dcp_checkpoint/__0_0.distcp", L.FILE),
        ("actor/dcp_checkpoint/__1_0.distcp", L.FILE),
        ("actor/dcp_checkpoint/.metadata", L.DCP_METADATA),
        ("actor/model_state_dict/full_weights.pt", L.ZIP),
    ]
    assert exp.order == [
        ("actor/dcp_checkpoint/.metadata", ["actor/dcp_checkpoint/__0_0.distcp", "actor/dcp_checkpoint/__1_0.distcp"]),
        ("actor/model_state_dict/full_weights.pt", ["actor/dcp_checkpoint/.metadata"]),
    ]


def test_fsdp_vla_and_vlm_state_close_the_actor():
    exp = L.expect(5, "sft", "fsdp", 1, features={"vla", "vlm"})
    assert rels(exp)[-3:] == ["actor/data.pt", "actor/rng.pt", "actor/data_state.json"]
    assert ("actor/rng.pt", ["actor/data.pt"]) in exp.order
    assert ("actor/data_state.json", ["actor/rng.pt"]) in exp.order
    assert exp.markers == ["actor/data_state.json"]
    exp = L.expect(5, "sft", "fsdp", 1, features={"vla"})
    assert exp.markers == ["actor/rng.pt"]
    exp = L.expect(5, "sft", "fsdp", 1, features={"vlm"})
    assert exp.order[-1] == ("actor/data_state.json", ["actor/model_state_dict/full_weights.pt"])
    # Those parts belong to the actor family only.
    exp = L.expect(5, "reasoning", "fsdp", 1, features={"vla", "vlm"})
    assert "actor/data.pt" not in rels(exp) and "actor/data_state.json" not in rels(exp)
    assert exp.markers == ["data/data.pt"] and exp.order[-1] == (
        "data/data.pt",
        ["actor/model_state_dict/full_weights.pt"],
    )


def test_fsdp_sac_with_alpha_and_dagger_replay_buffers():
    exp = L.expect(5, "sac", "fsdp", 2, features={"alpha"})
    assert rels(exp)[4:] == [
        "actor/sac_components/alpha/dcp_checkpoint/.metadata",
        "actor/sac_components/target_model/checkpoint_rank_0.pt",
        "actor/sac_components/target_model/checkpoint_rank_1.pt",
        "actor/sac_components/replay_buffer/rank_0/metadata.json",
        "actor/sac_components/replay_buffer/rank_0/trajectory_index.json",
        "actor/sac_components/replay_buffer/rank_1/metadata.json",
        "actor/sac_components/replay_buffer/rank_1/trajectory_index.json",
    ]
    assert exp.markers == [
        "actor/sac_components/replay_buffer/rank_0/trajectory_index.json",
        "actor/sac_components/replay_buffer/rank_1/trajectory_index.json",
    ]
    assert (
        "actor/sac_components/replay_buffer/rank_1/trajectory_index.json",
        ["actor/sac_components/replay_buffer/rank_1/metadata.json"],
    ) in exp.order
    assert "actor/sac_components/alpha/dcp_checkpoint/.metadata" not in rels(L.expect(5, "sac", "fsdp", 2))
    exp = L.expect(5, "dagger", "fsdp", 1)
    assert rels(exp)[3:] == [
        "actor/dagger_components/replay_buffer/rank_0/metadata.json",
        "actor/dagger_components/replay_buffer/rank_0/trajectory_index.json",
    ]
    assert exp.row == "fsdp-dagger"


def test_fsdp_iql_models_then_its_state():
    exp = L.expect(5, "iql", "fsdp", 1)
    assert rels(exp) == [
        "actor/actor_policy/local_shard_checkpoint/checkpoint_rank_0.pt",
        "actor/actor_policy/model_state_dict/full_weights.pt",
        "actor/critic/local_shard_checkpoint/checkpoint_rank_0.pt",
        "actor/critic/model_state_dict/full_weights.pt",
        "actor/value/local_shard_checkpoint/checkpoint_rank_0.pt",
        "actor/value/model_state_dict/full_weights.pt",
        "actor/iql_components/target_critic.pt",
        "actor/iql_components/state.pt",
    ]
    assert exp.order[-1] == (
        "actor/iql_components/state.pt",
        [
            "actor/actor_policy/model_state_dict/full_weights.pt",
            "actor/critic/model_state_dict/full_weights.pt",
            "actor/value/model_state_dict/full_weights.pt",
            "actor/iql_components/target_critic.pt",
        ],
    )
    assert exp.markers == ["actor/iql_components/state.pt"] and exp.row == "fsdp-iql"


def test_megatron_torch_grid_with_and_without_dist_opt():
    exp = L.expect(7, "coding", "megatron", None, grid=(1, 2, 1), features={"dist_opt"})
    assert exp.entries == [
        ("actor/iter_0000007/mp_rank_00_000/distrib_optim.pt", L.ZIP),
        ("actor/iter_0000007/mp_rank_00_000/model_optim_rng.pt", L.ZIP),
        ("actor/iter_0000007/mp_rank_00_001/distrib_optim.pt", L.ZIP),
        ("actor/iter_0000007/mp_rank_00_001/model_optim_rng.pt", L.ZIP),
        ("actor/latest_checkpointed_iteration.txt", L.TRACKER),
    ]
    assert exp.order[0] == (
        "actor/iter_0000007/mp_rank_00_000/model_optim_rng.pt",
        ["actor/iter_0000007/mp_rank_00_000/distrib_optim.pt"],
    )
    assert exp.markers == ["actor/latest_checkpointed_iteration.txt"] and exp.row == "megatron-actor"
    exp = L.expect(7, "coding", "megatron", None, grid=(2, 1, 1))
    assert rels(exp) == [
        "actor/iter_0000007/mp_rank_00/model_optim_rng.pt",
        "actor/iter_0000007/mp_rank_01/model_optim_rng.pt",
        "actor/latest_checkpointed_iteration.txt",
    ]
    assert exp.order == [
        (
            "actor/latest_checkpointed_iteration.txt",
            ["actor/iter_0000007/mp_rank_00/model_optim_rng.pt", "actor/iter_0000007/mp_rank_01/model_optim_rng.pt"],
        )
    ]


def test_megatron_torch_dist_and_the_reasoning_data_last():
    for backend, features in (("megatron_torch_dist", ()), ("megatron", {"torch_dist"})):
        exp = L.expect(7, "reasoning", backend, None, features=features)
        assert exp.entries == [
            ("actor/iter_0000007/*.distcp", L.ANY_DISTCP),
            ("actor/iter_0000007/common.pt", L.ZIP),
            ("actor/iter_0000007/metadata.json", L.JSON),
            ("actor/iter_0000007/.metadata", L.DCP_METADATA),
            ("actor/latest_checkpointed_iteration.txt", L.TRACKER),
            ("data/data.pt", L.ZIP),
        ]
        assert exp.row == "megatron-torch-dist" and exp.rule_text() == L.TORCH_DIST_TEXT
        assert exp.markers == ["data/data.pt"]
        assert exp.order[-1] == ("data/data.pt", ["actor/latest_checkpointed_iteration.txt"])
    exp = L.expect(7, "reasoning", "megatron", None, grid=(1, 1, 1), critic=True)
    assert exp.order[-1] == (
        "data/data.pt",
        ["actor/latest_checkpointed_iteration.txt", "critic/latest_checkpointed_iteration.txt"],
    )
    assert exp.row == "megatron-reasoning"


def test_megatron_vlm_state_last_only_outside_reasoning():
    exp = L.expect(7, "sft", "megatron", None, grid=(1, 1, 1), features={"vlm"})
    assert exp.markers == ["actor/data_state.json"]
    assert exp.order[-1] == ("actor/data_state.json", ["actor/latest_checkpointed_iteration.txt"])
    exp = L.expect(7, "sft", "megatron", None, grid=(1, 1, 1))
    assert exp.markers == ["actor/latest_checkpointed_iteration.txt"]


# ---------------------------------------------------------------- per-shape templates
def test_cached_expectations_equal_fresh_ones_per_step():
    for step in (7, 8):
        args = (step, "reasoning", "megatron", None, (1, 2, 1), {"dist_opt"}, True)
        cached, fresh = L.expect_cached(*args), L.expect(*args)
        assert (cached.entries, cached.order, cached.markers, cached.row) == (
            fresh.entries,
            fresh.order,
            fresh.markers,
            fresh.row,
        )
    fsdp = L.expect_cached(3, "embodied", "fsdp", 2)
    assert fsdp is L.template("embodied", "fsdp", 2)
    assert fsdp.entries == L.expect(3, "embodied", "fsdp", 2).entries
    assert L.to_template(3, "fsdp") is None
    assert L.to_template(3, "megatron") == ("/iter_0000003/", "/iter_9999999/")


def test_a_template_keeps_plain_entries_and_the_order_it_can_fetch():
    tmpl = L.template("reasoning", "megatron_torch_dist", None)
    assert tmpl.any_distcp == ["actor/iter_9999999/*.distcp"]
    assert "actor/iter_9999999/*.distcp" not in tmpl.required
    assert "actor/iter_9999999/common.pt" in tmpl.required
    markers = [(m, preds) for m, preds, _get in tmpl.order_fetch]
    assert markers == [
        (
            "actor/latest_checkpointed_iteration.txt",
            ["actor/iter_9999999/common.pt", "actor/iter_9999999/metadata.json", "actor/iter_9999999/.metadata"],
        ),
        ("data/data.pt", ["actor/latest_checkpointed_iteration.txt"]),
    ]
    get = tmpl.order_fetch[1][2]
    assert get({"actor/latest_checkpointed_iteration.txt": 4.0}) == 4.0


def test_the_template_cache_is_bounded_and_reused():
    L._TEMPLATES.clear()
    for size in range(1, 258):
        L.template("embodied", "fsdp", size)
    assert len(L._TEMPLATES) == 257
    first = L.template("embodied", "fsdp", 1)
    assert L.template("embodied", "fsdp", 1) is first
    L.template("embodied", "fsdp", 258)  # 257 > 256: the cache starts over
    assert len(L._TEMPLATES) == 1
    L._TEMPLATES.clear()
    for size in range(1, 257):
        L.template("embodied", "fsdp", size)
    L.template("embodied", "fsdp", 257)  # 256 is not over the bound: kept
    assert len(L._TEMPLATES) == 257


# ---------------------------------------------------------------- ranks and grids
def test_contiguous_size():
    assert L.contiguous_size(set()) is None
    assert L.contiguous_size({0}) == 1
    assert L.contiguous_size({0, 1, 2}) == 3
    assert L.contiguous_size({1}) is None
    assert L.contiguous_size({0, 2}) is None


def test_parse_mp_rank_names_by_shape():
    assert L.parse_mp_rank_names(["mp_rank_01", "mp_rank_00_002", "mp_rank_03_001_004", "other", "mp_rank_1"]) == (
        {0, 1, 3},
        {1, 2},
        {4},
        {1, 2, 3},
    )


@pytest.mark.parametrize(
    "names, sizes, grid",
    [
        (["mp_rank_00_000", "mp_rank_00_001"], dict(pp=1), (1, 1, 2)),
        (["mp_rank_00_000", "mp_rank_00_001"], dict(ep=1), (1, 2, 1)),
        (["mp_rank_00_000", "mp_rank_00_001", "mp_rank_00_002"], dict(ep=2), (1, 1, 2)),
        (["mp_rank_00_000", "mp_rank_00_001", "mp_rank_00_002"], dict(pp=2), (1, 2, 1)),
        (["mp_rank_00_000", "mp_rank_00_001"], dict(tp=4, pp=3, ep=5), (4, 3, 5)),
        (["mp_rank_00", "mp_rank_01"], dict(pp=2), (2, 2, 1)),
        (["mp_rank_00", "mp_rank_01"], dict(ep=3), (2, 1, 3)),
        ([], dict(tp=2), (2, 1, 1)),
        (["mp_rank_00_000_000", "mp_rank_00_001_001"], dict(pp=3, ep=2), (1, 3, 2)),
        (["mp_rank_00_000_000", "mp_rank_00_001_001"], dict(pp=2), (1, 2, 2)),
        (["mp_rank_00_000_000", "mp_rank_00_001_001"], dict(ep=3), (1, 2, 3)),
    ],
)
def test_infer_grid_honours_given_sizes(names, sizes, grid):
    assert L.infer_grid(names, **sizes) == (grid, None)


@pytest.mark.parametrize(
    "names, sizes, why",
    [
        ([], {}, "tensor_parallel (the mp_rank_TT numbers found are none)"),
        (["mp_rank_00", "mp_rank_02"], {}, "tensor_parallel (the mp_rank_TT numbers found are [0, 2])"),
        (
            ["mp_rank_00", "mp_rank_00_001"],
            {},
            "pipeline_parallel and expert_parallel (mp_rank names of different shapes: [1, 2])",
        ),
        (
            ["mp_rank_00_000_000", "mp_rank_00_002_000"],
            {},
            "pipeline_parallel and expert_parallel (holes in the mp_rank numbers)",
        ),
        (
            ["mp_rank_00_000_000", "mp_rank_00_000_002"],
            {},
            "pipeline_parallel and expert_parallel (holes in the mp_rank numbers)",
        ),
        (["mp_rank_00_000", "mp_rank_00_002"], dict(pp=1), "expert_parallel (holes in the mp_rank numbers)"),
        (["mp_rank_00_000", "mp_rank_00_002"], dict(ep=1), "pipeline_parallel (holes in the mp_rank numbers)"),
        (
            ["mp_rank_00_000", "mp_rank_00_001"],
            {},
            "pipeline_parallel or expert_parallel (mp_rank_TT_NNN may be either a pipeline or an expert rank)",
        ),
    ],
)
def test_infer_grid_says_what_to_pass(names, sizes, why):
    assert L.infer_grid(names, **sizes) == (None, why)


def test_infer_grid_cached_is_bounded():
    L._GRIDS.clear()
    names = frozenset(["mp_rank_00"])
    for tp in range(1, 258):
        L.infer_grid_cached(names, tp)
    assert len(L._GRIDS) == 257
    assert L.infer_grid_cached(names, 1) == ((1, 1, 1), None)
    L.infer_grid_cached(names, 300)
    assert len(L._GRIDS) == 1
    L._GRIDS.clear()
    for tp in range(1, 257):
        L.infer_grid_cached(names, tp)
    L.infer_grid_cached(names, 257)
    assert len(L._GRIDS) == 257


def test_layout_options_compare_by_value_and_large_rank_sets():
    # Module options arrive parsed from JSON: equal strings, never layouts.py's own constants.
    exp = L.expect(7, "reasoning", "".join(["megatron", "_torch_dist"]), None)
    assert exp.row == "megatron-torch-dist"
    assert L.contiguous_size(set(range(300))) == 300  # past the ints CPython caches
    assert L.contiguous_size(set(range(301)) - {7}) is None


def test_parse_mp_rank_names_reads_past_a_foreign_name():
    assert L.parse_mp_rank_names(["other", "mp_rank_00", "mp_rank_01_002"]) == ({0, 1}, {2}, set(), {1, 2})


@pytest.mark.parametrize(
    "runner, features, directories",
    [
        (
            "sac",
            (),
            ["actor/dcp_checkpoint", "actor/sac_components/target_model", "actor/sac_components/replay_buffer"],
        ),
        ("embodied", ("local_shard",), ["actor/local_shard_checkpoint"]),
        ("embodied", (), ["actor/dcp_checkpoint"]),
        ("reasoning", (), ["actor/dcp_checkpoint"]),
        ("dagger", (), ["actor/dcp_checkpoint", "actor/dagger_components/replay_buffer"]),
        ("iql", (), [m + "/local_shard_checkpoint" for m in L.IQL_MODELS]),
        ("dagger", ("local_shard",), ["actor/local_shard_checkpoint", "actor/dagger_components/replay_buffer"]),
        (
            "sac",
            ("local_shard",),
            ["actor/local_shard_checkpoint", "actor/sac_components/target_model", "actor/sac_components/replay_buffer"],
        ),
    ],
)
def test_each_familys_rank_groups_read_the_shards_its_row_writes(runner, features, directories):
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import parallelism
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.step_listing import StepFacts
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.verdict import StepVerdict

    facts = StepFacts("global_step_5")
    for rel, _kind in L.expect(5, runner, "fsdp", 2, features=features).entries:
        facts.add_file(rel, 1, 1.0)
        parts = rel.split("/")[:-1]
        facts.dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    v = StepVerdict(facts)
    v.family = L.FAMILY[runner]
    size, groups = parallelism.infer_world_size(v, facts, facts.children(), None)
    assert (size, v.findings) == (2, [])
    assert groups == [(d, {0, 1}) for d in directories]
