# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate's options, value by value (issue 26: mutants of checkpoint/options.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import options as O
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import LayoutError


def test_defaults_and_spec():
    opts = O.normalize_options(None)
    assert opts == O.DEFAULTS and opts is not O.DEFAULTS
    assert (opts["runner"], opts["backend"], opts["step"], opts["quiet_seconds"]) == ("auto", "auto", "latest", 120)
    assert opts["full_weights"] is True and opts["verify_payloads"] is True and opts["full_report"] is False
    assert {k for k, v in opts.items() if v is None} == {"critic", *O.PARALLEL_SIZES}
    assert O.normalize_options({"quiet_seconds": None, "runner": None})["quiet_seconds"] == 120
    spec = O.argument_spec()
    assert spec["quiet_seconds"] == {"type": "int", "default": 120}
    assert spec["actor_world_size"] == {"type": "int"} and spec["critic"] == {"type": "bool"}
    assert spec["runner"]["choices"][0] == "auto" and spec["runner"]["default"] == "auto"
    assert spec["fail_when_incomplete"] == {"type": "bool", "default": True}
    assert spec["wait_timeout"] == {"type": "int", "default": 0} and spec["wait_sleep"]["default"] == 5.0
    assert spec["wait_sleep"]["aliases"] == ["wait_interval"]
    assert spec["integrity"]["default"] == "off" and spec["path"] == {"type": "path"}
    assert O.GATE_TYPES["runner"] is not spec["runner"]  # the table is copied, never edited
    assert "default" not in O.GATE_TYPES["runner"]


@pytest.mark.parametrize(
    "given,message",
    [
        (
            {"runner": "ppo"},
            "unknown runner 'ppo'; expected one of embodied, offline, sft, reasoning, agent, coding, sac, dagger, "
            "iql or auto",
        ),
        (
            {"backend": "jax"},
            "unknown backend 'jax'; expected one of fsdp, fsdp2, megatron, megatron_torch_dist or auto",
        ),
        ({"actor_world_size": 0}, "actor_world_size must be at least 1, got 0"),
        ({"tensor_parallel": 0}, "tensor_parallel must be at least 1, got 0"),
        ({"pipeline_parallel": -1}, "pipeline_parallel must be at least 1, got -1"),
        ({"expert_parallel": 0}, "expert_parallel must be at least 1, got 0"),
        ({"quiet_seconds": -1}, "quiet_seconds must not be negative"),
        ({"step": -1}, "step must not be negative, got -1"),
        ({"step": "x"}, "step must be a number, global_step_N or 'latest', got 'x'"),
        ({"step": True}, "step must be a number, global_step_N or 'latest', got True"),
        ({"runner": "sac", "backend": "megatron"}, "runner 'sac' saves through FSDP workers only"),
        ({"backend": "fsdp", "tensor_parallel": 2}, "tensor_parallel=2 is inconsistent with backend fsdp"),
        (
            {"critic": True, "runner": "embodied"},
            "critic=true is inconsistent with runner embodied: only reasoning/agent save a critic",
        ),
        (
            {"critic": True, "backend": "fsdp"},
            "critic=true is inconsistent with backend fsdp: only Megatron critics are saved",
        ),
        ({"critic": True, "backend": "fsdp2"}, "critic=true is inconsistent with backend fsdp2"),
    ],
)
def test_refusals(given, message):
    with pytest.raises(LayoutError) as e:
        O.normalize_options(given)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize(
    "given",
    [
        {"actor_world_size": 1, "tensor_parallel": 1, "pipeline_parallel": 1, "expert_parallel": 1},
        {"quiet_seconds": 0},
        {"step": 0},
        {"runner": "sac", "backend": "fsdp"},
        {"runner": "sac"},
        {"backend": "megatron", "tensor_parallel": 2, "actor_world_size": 4},
        {"critic": True},
        {"critic": True, "runner": "reasoning", "backend": "megatron"},
        {"critic": True, "runner": "agent"},
        {"critic": False, "runner": "embodied", "backend": "fsdp"},
    ],
)
def test_accepted(given):
    O.normalize_options(given)


def test_megatron_world_size_must_be_a_multiple():
    with pytest.raises(LayoutError, match="actor_world_size=3 is not a multiple"):
        O.normalize_options({"backend": "megatron", "tensor_parallel": 2, "actor_world_size": 3})
    # runner auto: the combination is not checked, the sizes are
    O.normalize_options({"runner": "sac"})


@pytest.mark.parametrize("given,step", [("latest", "latest"), ("40", 40), ("global_step_40", 40), (7, 7), (0, 0)])
def test_step_spellings(given, step):
    assert O.normalize_options({"step": given})["step"] == step


def test_auto_read_back_from_json_is_auto():
    """Options come from module arguments (JSON): "auto" is compared by value."""
    auto = "".join(["au", "to"])
    assert auto == "auto" and auto is not O.L.AUTO
    opts = O.normalize_options({"runner": auto, "backend": "megatron", "critic": True})
    assert opts["runner"] == "auto" and opts["backend"] == "megatron"
