# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint/identify.py: backend, runner family and optional parts of one step from its names (issue 26)."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import identify as I
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.step_listing import StepFacts
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.verdict import StepVerdict

IT = "actor/iter_0000005"


def facts(*files, dirs=(), name="global_step_5", sizes=None):
    """A step from its file paths (their parent directories are added) and extra empty directories."""
    out = StepFacts(name)
    for rel in files:
        out.add_file(rel, (sizes or {}).get(rel, 1), 1.0)
        parts = rel.split("/")[:-1]
        out.dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    for rel in dirs:
        parts = rel.split("/")
        out.dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return out


def backend(*files, dirs=()):
    f = facts(*files, dirs=dirs)
    return I.detect_backend(f, f.children())


def opts(backend="auto", runner="auto", critic=None):
    return {"backend": backend, "runner": runner, "critic": critic}


def step(f, **kw):
    return I.identify_step(StepVerdict(f), f, f.children(), opts(**kw))


# ---------------------------------------------------------------- backend
def test_megatron_by_its_tracker_or_an_iter_dir_in_actor_or_critic():
    assert backend("actor/latest_checkpointed_iteration.txt") == "megatron"
    assert backend(IT + "/mp_rank_00/model_optim_rng.pt") == "megatron"
    assert backend("critic/iter_0000005/mp_rank_00/model_optim_rng.pt") == "megatron"
    assert backend("critic/latest_checkpointed_iteration.txt", dirs=["critic/iter_0000005"]) == "megatron"
    # iter_5 is no Megatron iteration directory, and actor/ alone no layout.
    assert backend("actor/x.json", dirs=["actor/iter_5"]) is None
    assert backend("actor/latest_checkpointed_iteration.txt", dirs=["actor/iter_5"]) == "megatron"


@pytest.mark.parametrize("marker", ["common.pt", "metadata.json", ".metadata", "__0_0.distcp"])
def test_torch_dist_by_any_of_its_markers_or_a_shard_without_mp_rank(marker):
    assert backend(IT + "/" + marker) == "megatron_torch_dist"
    assert backend("critic/iter_0000005/" + marker) == "megatron_torch_dist"


def test_shards_beside_mp_rank_directories_are_megatron_torch():
    assert backend(IT + "/__0_0.distcp", IT + "/mp_rank_00/model_optim_rng.pt") == "megatron"
    # the first iteration decides nothing: a later one can still be torch_dist
    f = facts(IT + "/mp_rank_00/model_optim_rng.pt", "actor/iter_0000009/common.pt")
    assert I.detect_backend(f, f.children()) == "megatron_torch_dist"


@pytest.mark.parametrize(
    "directory",
    ["actor/dcp_checkpoint", "actor/local_shard_checkpoint", "actor/model_state_dict", "actor/actor_policy"],
)
def test_fsdp_by_any_of_its_directories(directory):
    assert backend(dirs=[directory]) == "fsdp"


def test_nothing_recognisable_is_no_backend():
    assert backend("data/data.pt", "actor/x.json", dirs=["actor/other"]) is None


# ---------------------------------------------------------------- runner evidence
@pytest.mark.parametrize(
    "dirs, megatron, found",
    [
        (["actor/iql_components"], False, {"iql"}),
        (["actor/actor_policy"], False, {"iql"}),
        (["actor/sac_components"], False, {"sac"}),
        (["actor/dagger_components"], False, {"dagger"}),
        (["data"], False, {"reasoning"}),
        (["critic"], True, {"reasoning"}),
        (["critic"], False, set()),
        (["actor/dcp_checkpoint"], False, set()),
        (["actor/sac_components", "actor/dagger_components"], False, {"sac", "dagger"}),
    ],
)
def test_runner_evidence(dirs, megatron, found):
    f = facts(dirs=dirs)
    assert I.runner_evidence(f, f.children(), megatron) == found


# ---------------------------------------------------------------- features
def features(*files, dirs=(), backend="fsdp"):
    f = facts(*files, dirs=dirs)
    return I.step_features(f, f.children(), backend)


def test_fsdp_features():
    assert features(dirs=["actor/local_shard_checkpoint"]) == {"local_shard"}
    assert features(dirs=["actor/local_shard_checkpoint", "actor/dcp_checkpoint"]) == set()
    assert features("actor/data.pt") == {"vla"}
    assert features("actor/rng.pt") == {"vla"}
    assert features("actor/data_state.json") == {"vlm"}
    assert features(dirs=["actor/sac_components/alpha"]) == {"alpha"}
    assert features(dirs=["critic"], backend="fsdp") == set()
    assert features(IT + "/mp_rank_00/distrib_optim.pt", backend="fsdp") == set()


def test_megatron_features_dist_opt_only_right_under_an_iteration():
    assert features(dirs=["critic"], backend="megatron") == {"critic"}
    assert features(backend="megatron_torch_dist") == {"torch_dist"}
    assert features(IT + "/mp_rank_00/distrib_optim.pt", backend="megatron") == {"dist_opt"}
    assert features("critic/iter_0000005/mp_rank_01/distrib_optim.pt", backend="megatron") == {"dist_opt", "critic"}
    # deeper than an mp_rank directory, or in a directory that is no iteration: not the distributed optimizer
    assert features(IT + "/mp_rank_00/sub/distrib_optim.pt", backend="megatron") == set()
    assert features("actor/iter_5/mp_rank_00/distrib_optim.pt", backend="megatron") == set()
    assert features(IT + "/mp_rank_00/model_optim_rng.pt", backend="megatron") == set()


def test_has_dist_opt_looks_only_at_directories_one_level_under_base():
    f = facts(IT + "/mp_rank_00/distrib_optim.pt", "actor/iter_0000006/mp_rank_00/distrib_optim.pt")
    assert I._has_dist_opt(f, IT + "/")
    assert not I._has_dist_opt(f, "actor/iter_0000007/")
    assert not I._has_dist_opt(f, "actor/")
    f = facts(IT + "/distrib_optim.pt")
    assert not I._has_dist_opt(f, IT + "/")


# ---------------------------------------------------------------- identify
def test_a_directory_without_a_step_number_is_not_judged():
    v, found = step(facts("actor/latest_checkpointed_iteration.txt", name="best_model"))
    assert (found, v.findings, v.backend) == (None, [], None)


def test_no_layout_counts_the_files():
    v, found = step(facts("a.bin", "b.bin"))
    assert found is None
    assert [(p["id"], p["severity"], p["message"], p["hint"]) for p in v.findings] == [
        (
            "no-layout",
            "error",
            "nothing of an RLinf checkpoint is here yet (2 file(s)): the save has not started or was cut off",
            "pass backend and runner to list what is missing",
        )
    ]


def test_the_given_backend_and_runner_win_except_megatron_found_torch_dist():
    f = facts(IT + "/common.pt")
    v, found = step(f, backend="megatron", runner="coding")
    assert (found, v.backend, v.runner, v.family) == ("megatron_torch_dist", "megatron_torch_dist", "coding", "actor")
    v, found = step(facts(IT + "/mp_rank_00/model_optim_rng.pt"), backend="megatron")
    assert (found, v.backend) == ("megatron", "megatron")
    v, found = step(facts(dirs=["actor/dcp_checkpoint"]), backend="fsdp2")
    assert (found, v.backend) == ("fsdp2", "fsdp2")
    v, found = step(facts(dirs=["actor/dcp_checkpoint"]), backend="fsdp")
    assert (found, v.backend) == ("fsdp", "fsdp")
    v, found = step(facts(dirs=["actor/dcp_checkpoint"]))
    assert (found, v.backend) == ("fsdp", "fsdp")
    v, found = step(facts("x.bin"), backend="fsdp2")  # given: judged even with nothing recognisable
    assert (found, v.backend, v.runner) == ("fsdp2", "fsdp2", "embodied")


def test_several_runners_are_ambiguous_unless_one_is_given():
    f = facts(dirs=["actor/dcp_checkpoint", "actor/sac_components", "actor/dagger_components"])
    v, found = step(f)
    assert found is None
    assert [(p["id"], p["message"], p["hint"]) for p in v.findings] == [
        ("runner-ambiguous", "the files point to several runners (dagger, sac)", "pass runner")
    ]
    v, found = step(f, runner="sac")
    assert (found, v.runner, v.family, v.evidence, v.findings) == ("fsdp", "sac", "sac", {"sac", "dagger"}, [])


@pytest.mark.parametrize(
    "dirs, runner, evidence",
    [
        (["actor/dcp_checkpoint"], "embodied", set()),
        (["actor/dcp_checkpoint", "actor/sac_components"], "sac", {"sac"}),
        (["actor/dcp_checkpoint", "data"], "reasoning", {"reasoning"}),
    ],
)
def test_one_family_found_is_its_label(dirs, runner, evidence):
    v, found = step(facts(dirs=dirs))
    assert (found, v.runner, v.evidence) == ("fsdp", runner, evidence)


def test_embodied_with_sft_data_is_sft_only_when_auto():
    for part in ("actor/data.pt", "actor/data_state.json"):
        v, _found = step(facts(part, dirs=["actor/dcp_checkpoint"]))
        assert (v.runner, v.family) == ("sft", "actor")
        v, _found = step(facts(part, dirs=["actor/dcp_checkpoint"]), runner="embodied")
        assert v.runner == "embodied"
    v, _found = step(facts(dirs=["actor/dcp_checkpoint"]))
    assert v.runner == "embodied"
    v, _found = step(facts("actor/data.pt", dirs=["actor/dcp_checkpoint", "data"]))
    assert v.runner == "reasoning"


def test_an_fsdp_only_runner_on_megatron_is_unsupported():
    v, found = step(facts(IT + "/mp_rank_00/model_optim_rng.pt", dirs=["actor/sac_components"]))
    assert found is None
    assert [(p["id"], p["severity"]) for p in v.findings] == [("unsupported-layout", "error")]
    assert v.findings[0]["message"].startswith("runner 'sac' saves through FSDP workers only")


def test_dcp_directories_of_fsdp_and_torch_dist_steps_are_checked_against_their_metadata():
    f = facts(
        "actor/dcp_checkpoint/.metadata",
        "actor/dcp_checkpoint/__0_0.distcp",
        "actor/sac_components/alpha/dcp_checkpoint/.metadata",
        sizes={"actor/dcp_checkpoint/__0_0.distcp": 7},
    )
    v, _found = step(f)
    assert v.distcp_names == {
        "actor/dcp_checkpoint": {"__0_0.distcp": 7},
        "actor/sac_components/alpha/dcp_checkpoint": {},
    }
    v, _found = step(facts(IT + "/.metadata", IT + "/__0_0.distcp"))
    assert v.distcp_names == {IT: {"__0_0.distcp": 1}}
    v, _found = step(facts(IT + "/mp_rank_00/model_optim_rng.pt", "actor/x/.metadata"))
    assert v.distcp_names == {}


@pytest.mark.parametrize(
    "files, dirs, critic, expected",
    [
        ([IT + "/mp_rank_00/model_optim_rng.pt"], ["critic", "data"], None, True),
        ([IT + "/mp_rank_00/model_optim_rng.pt"], ["data"], None, False),
        ([IT + "/mp_rank_00/model_optim_rng.pt"], ["data"], True, True),
        ([IT + "/mp_rank_00/model_optim_rng.pt"], ["critic", "data"], False, False),
        ([IT + "/mp_rank_00/model_optim_rng.pt"], ["critic", "data"], 0, False),
        ([], ["actor/dcp_checkpoint", "data", "critic"], True, False),
        ([IT + "/mp_rank_00/model_optim_rng.pt"], [], True, False),
    ],
)
def test_the_critic_is_checked_only_for_megatron_reasoning(files, dirs, critic, expected):
    v, _found = step(facts(*files, dirs=dirs), critic=critic)
    assert v.critic is expected


def test_identify_reads_the_facts_children():
    v = I.identify(facts(dirs=["actor/dcp_checkpoint", "data"]), opts())
    assert (v.backend, v.runner, v.family) == ("fsdp", "reasoning", "reasoning")


def test_backend_and_runner_options_compare_by_value():
    # Module options arrive parsed from JSON: equal strings, never the module's own constants.
    auto, megatron, torch_dist = "".join(["au", "to"]), "".join(["mega", "tron"]), "".join(["megatron", "_torch_dist"])
    v, found = step(facts(dirs=["actor/dcp_checkpoint"]), backend=auto, runner=auto)
    assert (found, v.backend, v.runner) == ("fsdp", "fsdp", "embodied")
    v, found = step(facts(IT + "/common.pt"), backend=megatron)
    assert (found, v.backend) == ("megatron_torch_dist", "megatron_torch_dist")
    v, found = step(facts(IT + "/common.pt"), backend=torch_dist)
    assert (found, v.features) == (torch_dist, {"torch_dist"})
    v, found = step(facts("actor/data.pt", dirs=["actor/dcp_checkpoint"]), runner=auto)
    assert v.runner == "sft"


def test_a_given_runner_that_sorts_before_auto_is_still_given():
    v, found = step(facts(dirs=["actor/dcp_checkpoint"]), runner="agent")  # "agent" < "auto"
    assert (found, v.runner, v.family) == ("fsdp", "agent", "reasoning")


def test_a_given_backend_other_than_megatron_is_kept_whatever_is_found():
    v, found = step(facts(IT + "/common.pt"), backend="fsdp")
    assert (found, v.backend) == ("fsdp", "fsdp")
    v, found = step(facts(dirs=["actor/dcp_checkpoint"]), backend="megatron")  # FSDP files: still megatron
    assert (found, v.backend) == ("megatron", "megatron")
    v, found = step(facts("x.bin"), backend="megatron")  # nothing found: megatron as given
    assert (found, v.backend) == ("megatron", "megatron")


def test_vla_data_makes_only_embodied_sft():
    v, found = step(facts("actor/data.pt", dirs=["actor/dcp_checkpoint", "actor/dagger_components"]))
    assert (found, v.runner) == ("fsdp", "dagger")
