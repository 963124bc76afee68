# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hydra.py: one parser reads, sets and strips overrides in every shell form; set/strip round-trip."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import hydra
from hypothesis import given, settings
from hypothesis import strategies as st

KEYS = ["runner.resume_dir", "runner.logger.experiment_name", "runner.logger.log_path", "runner.experiment_name"]


@pytest.mark.parametrize(
    "word,key,value,prefix",
    [
        ("runner.logger.experiment_name=e1", "runner.logger.experiment_name", "e1", ""),
        ("+runner.resume_dir=/a/global_step_3", "runner.resume_dir", "/a/global_step_3", "+"),
        ("'++runner.resume_dir=/d x/global_step_4'", "runner.resume_dir", "/d x/global_step_4", "++"),
        ('"runner.output_dir=/o p"', "runner.output_dir", "/o p", ""),
        ("runner.logger.log_path='/l q'", "runner.logger.log_path", "/l q", ""),
        ("~runner.resume_dir=x", "runner.resume_dir", "x", "~"),
    ],
)
def test_every_shell_form_parses_to_what_hydra_receives(word, key, value, prefix):
    [item] = hydra.parse("python t.py %s 2>&1" % word)
    assert (item["key"], item["value"], item["prefix"]) == (key, value, prefix)


def test_not_overrides():
    assert hydra.parse("X=1 export Y=2 --config-name a.b echo a.b|tee") == []
    assert hydra.overrides("python t.py runner.a=1 runner.a=2 actor.b=3", "runner.") == {"runner.a": "2"}
    assert hydra.get("python t.py runner.a=1 ~runner.a=1", "runner.a") is None


def test_step_names():
    assert hydra.step_number("/x/checkpoints/global_step_40") == 40
    assert hydra.step_number("/x/global_step_40/") is None
    assert hydra.step_number("/x/global_step_40_bak") is None
    assert hydra.step_number("/x/global_step_40/actor") is None
    assert hydra.step_dir("/x/checkpoints/", 7) == "/x/checkpoints/global_step_7"
    assert hydra.step_number(hydra.step_dir("/r", 12)) == 12


FORMS = st.sampled_from(["%s=/a", "+%s=/b", "++%s='/c d'", "'++%s=/e f'", '%s="/g"', "~%s=/h"])
WORDS = st.sampled_from(["runner.max_steps=9", "actor.lr=1e-5", "--config-name ppo", "2>&1", "| tee log", "\\\n "])
VALUES = st.sampled_from(["/data/x/global_step_5", "/d with space/global_step_1", "demo-r1"])


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(KEYS),
    st.lists(st.one_of(WORDS, st.tuples(FORMS, st.sampled_from(KEYS))), max_size=8),
    VALUES,
)
def test_set_then_parse_then_strip_round_trips(key, parts, value):
    words = [p[0] % p[1] if isinstance(p, tuple) else p for p in parts]
    script = "cd /w && python train.py " + " ".join(words)
    others = {k: v for k, v in hydra.overrides(script).items() if k != key}
    out = hydra.set_override(script, key, value)
    assert hydra.get(out, key) == value
    assert [i["key"] for i in hydra.parse(out)].count(key) == 1
    assert {k: v for k, v in hydra.overrides(out).items() if k != key} == others  # nothing else moved
    stripped, removed = hydra.strip_override(out, key)
    assert removed == [value] and hydra.get(stripped, key) is None
    assert hydra.overrides(stripped) == others
