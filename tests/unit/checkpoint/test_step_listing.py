# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint/step_listing.py: what one pass over a step keeps, counts and indexes (issue 26)."""

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import step_listing
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.step_listing import StepFacts, shallow_facts


def test_a_new_step_knows_nothing():
    facts = StepFacts("global_step_3")
    assert (facts.name, facts.files, facts.bytes, facts.newest) == ("global_step_3", 0, 0, None)
    assert (facts.entries, facts.sizes, facts.dirs, facts.leftovers, facts.errors) == ({}, {}, set(), [], [])
    assert (facts.index, facts.prefetched) == (None, {})
    assert facts.children() == {}


def test_every_file_is_counted_and_the_newest_mtime_kept_from_both_sides():
    facts = StepFacts("s")
    facts.add_file("a.bin", 10, 5.0)
    assert (facts.files, facts.bytes, facts.newest) == (1, 10, 5.0)
    facts.add_file("b.bin", 7, 4.0)  # older: the newest stays
    assert (facts.files, facts.bytes, facts.newest) == (2, 17, 5.0)
    facts.add_file("c.bin", 0, 5.0)  # as new
    assert facts.newest == 5.0
    facts.add_file("d.bin", 1, 6.5)  # newer
    assert (facts.files, facts.bytes, facts.newest) == (4, 18, 6.5)
    facts = StepFacts("s")
    facts.add_file("x.bin", 3, 0.0)  # mtime 0 is a time, not "none yet"
    facts.add_file("y.bin", 3, -1.0)
    assert facts.newest == 0.0
    assert facts.entries == {}  # none of these names matters to the rules


def test_interesting_names_are_kept_with_shard_sizes_and_leftovers():
    facts = StepFacts("s")
    facts.add_file("actor/dcp_checkpoint/__0_0.distcp", 100, 1.0)
    facts.add_file("actor/dcp_checkpoint/.metadata", 9, 2.0)
    facts.add_file("actor/dcp_checkpoint/.metadata.tmp", 0, 3.0)
    facts.add_file("top.distcp", 5, 1.0)
    facts.add_file("actor/weights.bin", 100, 1.0)
    assert facts.entries == {
        "actor/dcp_checkpoint/__0_0.distcp": 1.0,
        "actor/dcp_checkpoint/.metadata": 2.0,
        "actor/dcp_checkpoint/.metadata.tmp": 3.0,
        "top.distcp": 1.0,
    }
    assert facts.sizes == {"actor/dcp_checkpoint": {"__0_0.distcp": 100}, "": {"top.distcp": 5}}
    assert facts.leftovers == ["actor/dcp_checkpoint/.metadata.tmp"]
    assert (facts.files, facts.bytes) == (5, 214)


def test_a_replay_buffer_rank_keeps_only_its_json_and_tmp():
    assert step_listing.keeps_all("actor/replay_buffer")
    assert not step_listing.keeps_all("actor/replay_buffer/rank_0")
    facts = StepFacts("s")
    for rel in ("a/replay_buffer/rank_0/t.pt", "a/replay_buffer/rank_0/t.txt", "a/replay_buffer/rank_0/m.json"):
        facts.add_file(rel, 1, 1.0)
    facts.add_file("a/replay_buffer/rank_0/w.tmp", 1, 1.0)
    facts.add_file("a/replay_buffer/state.pt", 1, 1.0)
    assert sorted(facts.entries) == [
        "a/replay_buffer/rank_0/m.json",
        "a/replay_buffer/rank_0/w.tmp",
        "a/replay_buffer/state.pt",
    ]
    assert facts.files == 5


def test_children_from_what_was_kept_or_from_the_index_built_on_the_way():
    facts = StepFacts("s")
    facts.add_file("actor/dcp_checkpoint/.metadata", 1, 1.0)
    facts.add_file("rng.pt", 1, 1.0)
    facts.dirs.update({"actor", "actor/dcp_checkpoint", "actor/empty"})
    assert facts.children() == {
        "": {"rng.pt", "actor"},
        "actor": {"dcp_checkpoint", "empty"},
        "actor/dcp_checkpoint": {".metadata"},
    }
    facts.index = {"": {"only"}}
    assert facts.children() == {"": {"only"}}
    facts.index = {}
    assert facts.children() == {}


class Listing:
    """A step as directory listings: {rel: (files, dirs)}; what each call asked for is recorded."""

    def __init__(self, tree, iter_names=None):
        self.tree, self.iter_names, self.asked = tree, iter_names or {}, []

    def list_dir(self, name, rel):
        self.asked.append(("list", name, rel))
        return self.tree.get(rel, ([], []))

    def iter_dir_names(self, name, rel):
        self.asked.append(("iter", name, rel))
        return self.iter_names[rel]


def test_shallow_facts_looks_into_actor_critic_their_iter_dirs_and_sac_components_only():
    tree = {
        "": (["rng.pt"], ["actor", "critic", "data"]),
        "actor": (["x.json"], ["iter_0000012", "iter_12", "sac_components", "dcp_checkpoint"]),
        "actor/sac_components": (["alpha.pt"], []),
        "critic": ([], ["iter_0000012"]),
        "data": (["d.pt"], []),
    }
    iters = {"actor/iter_0000012": ([".metadata"], []), "critic/iter_0000012": ([], ["mp_rank_00"])}
    source = Listing(tree, iters)
    facts = shallow_facts(source, "global_step_12")
    assert facts.name == "global_step_12"
    assert source.asked == [
        ("list", "global_step_12", ""),
        ("list", "global_step_12", "actor"),
        ("iter", "global_step_12", "actor/iter_0000012"),
        ("list", "global_step_12", "actor/sac_components"),
        ("list", "global_step_12", "critic"),
        ("iter", "global_step_12", "critic/iter_0000012"),
    ]
    assert facts.entries == {
        "rng.pt": 0.0,
        "actor/x.json": 0.0,
        "actor/iter_0000012/.metadata": 0.0,
        "actor/sac_components/alpha.pt": 0.0,
    }
    assert facts.dirs == {
        "actor",
        "critic",
        "data",
        "actor/iter_0000012",
        "actor/iter_12",
        "actor/sac_components",
        "actor/dcp_checkpoint",
        "critic/iter_0000012",
        "critic/iter_0000012/mp_rank_00",
    }
    assert facts.files == 4
    assert facts.children() is facts.index
    assert facts.index == {
        "": {"rng.pt", "actor", "critic", "data"},
        "actor": {"x.json", "iter_0000012", "iter_12", "sac_components", "dcp_checkpoint"},
        "actor/iter_0000012": {".metadata"},
        "actor/sac_components": {"alpha.pt"},
        "critic": {"iter_0000012"},
        "critic/iter_0000012": {"mp_rank_00"},
    }


def test_shallow_facts_of_a_critic_with_sac_components_and_of_a_step_without_components():
    source = Listing({"": ([], ["critic"]), "critic": ([], ["sac_components"])})
    facts = shallow_facts(source, "s")
    assert ("list", "s", "critic/sac_components") not in source.asked
    assert facts.index == {"": {"critic"}, "critic": {"sac_components"}}
    source = Listing({"": (["a.pt"], [])})
    facts = shallow_facts(source, "s")
    assert source.asked == [("list", "s", "")]
    assert (facts.files, facts.entries, facts.dirs, facts.index) == (1, {"a.pt": 0.0}, set(), {"": {"a.pt"}})


def test_a_name_that_is_both_an_object_and_a_prefix_is_one_child():
    # S3 can hold a key "actor" beside keys under "actor/": the name is listed as a file and as a directory.
    source = Listing({"": (["actor", "rng.pt"], ["actor"]), "actor": (["x.json"], [])})
    facts = shallow_facts(source, "s")
    assert facts.index[""] == {"actor", "rng.pt"}
    assert facts.index["actor"] == {"x.json"}
