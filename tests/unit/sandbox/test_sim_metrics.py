"""rlark-sim's metric tables: RLinf's format, a function of (seed, trained steps), read by the collection's parser."""

from ansible_collections.rlark.ops.plugins.module_utils import continuity
from rlark_sim import layouts, metrics


def test_table_round_trips_through_the_collection_parser():
    values = dict(metrics.values("1", 5), **{"time/step": 1.002})
    lines = metrics.table(5, 100, 5.1, 5, values)
    assert all(len(line) == 120 for line in lines if line)
    parsed = continuity.parse_metrics("\n".join(lines))[5]
    assert parsed["metrics"]["Rollout/rewards"] == "%.3f" % values["rollout/rewards"]
    assert parsed["metrics"]["Training/Actor/actor/policy_loss"] == "%.3f" % values["train/actor/policy_loss"]
    assert parsed["metrics"]["Time/step"] == "1.002"


def test_values_depend_on_seed_and_trained_steps_only():
    assert metrics.values("1", 7) == metrics.values("1", 7)
    assert metrics.values("1", 7) != metrics.values("1", 4)
    assert metrics.values("1", 7) != metrics.values("2", 7)


def test_held_step_of_every_payload_kind():
    for kind, rel in (
        ("dcp", "actor/dcp_checkpoint/__0_0.distcp"),
        ("pt", "actor/x.pt"),
        ("json", "a/m.json"),
        ("text", "actor/latest_checkpointed_iteration.txt"),
    ):
        assert metrics.held_step(layouts.payload(kind, rel, 12)) == 12
