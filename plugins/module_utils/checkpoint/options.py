# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate's options: one table of defaults, the argument spec built from it, and one clear message for
each bad value (raised as ``LayoutError``). rlark_ckpt_gate, rlark_ckpt_wait, rlark_guarded_stop and the
checkpoint_gate role's filter all take their gate options from here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import step_names
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.s3_options import BACKUP_ARG_SPEC, S3_ARG_SPEC
from ansible_collections.rlark.ops.plugins.module_utils.wait_options import wait_spec

DEFAULTS = {
    "runner": L.AUTO,
    "backend": L.AUTO,
    "actor_world_size": None,
    "tensor_parallel": None,
    "pipeline_parallel": None,
    "expert_parallel": None,
    "critic": None,
    "full_weights": True,
    "step": "latest",
    "quiet_seconds": 120,
    "verify_payloads": True,
    "full_report": False,
}
PARALLEL_SIZES = ("actor_world_size", "tensor_parallel", "pipeline_parallel", "expert_parallel")
# The gate's own options, in the order of DEFAULTS (what run_gate takes).
GATE_OPTIONS = tuple(DEFAULTS)
# The option types; each default is DEFAULTS' (None: no default).
GATE_TYPES = {
    "runner": dict(type="str", choices=[L.AUTO, *L.RUNNERS]),
    "backend": dict(type="str", choices=[L.AUTO, *L.BACKENDS]),
    "actor_world_size": dict(type="int"),
    "tensor_parallel": dict(type="int"),
    "pipeline_parallel": dict(type="int"),
    "expert_parallel": dict(type="int"),
    "critic": dict(type="bool"),
    "full_weights": dict(type="bool"),
    "step": dict(type="str"),
    "quiet_seconds": dict(type="int"),
    "verify_payloads": dict(type="bool"),
    "full_report": dict(type="bool"),
}
# How rlark_ckpt_gate itself waits, in the one wait vocabulary (wait_options; wait_interval is the older name of
# wait_sleep); rlark_ckpt_wait and rlark_guarded_stop wait with their own defaults of the same names.
WAIT_SPEC = dict(
    wait_spec(0, 5.0, after_step=True, older=("wait_interval",), timeout_type="int"),
    newest_complete=dict(type="bool", default=True),
)
WAIT_OPTIONS = tuple(WAIT_SPEC)
INTEGRITY_SPEC = dict(
    integrity=dict(type="str", default="off", choices=["off", "write", "verify"]),
    integrity_path=dict(type="path"),
    integrity_store=dict(type="str", default="file", choices=["file", "result"]),
    integrity_manifest=dict(type="dict"),
    hash_workers=dict(type="int"),
    backup=dict(type="dict", options=BACKUP_ARG_SPEC),
)


def argument_spec():
    """rlark_ckpt_gate's argument spec: where the checkpoint is, the gate options, integrity and the wait."""
    spec = dict(path=dict(type="path"), s3=dict(type="dict", options=S3_ARG_SPEC))
    for name in GATE_OPTIONS:
        spec[name] = dict(GATE_TYPES[name])
        if DEFAULTS[name] is not None:
            spec[name]["default"] = DEFAULTS[name]
    spec.update(INTEGRITY_SPEC)
    spec["fail_when_incomplete"] = dict(type="bool", default=True)
    spec.update(WAIT_SPEC)
    return spec


def normalize_options(options):
    """Fill defaults and reject bad input with one clear message (raises ``GateError``)."""
    opts = dict(DEFAULTS)
    opts.update({k: v for k, v in (options or {}).items() if v is not None})
    if opts["runner"] not in (*L.RUNNERS, L.AUTO):
        raise L.LayoutError("unknown runner %r; expected one of %s or auto" % (opts["runner"], ", ".join(L.RUNNERS)))
    if opts["backend"] not in (*L.BACKENDS, L.AUTO):
        raise L.LayoutError("unknown backend %r; expected one of %s or auto" % (opts["backend"], ", ".join(L.BACKENDS)))
    opts["step"] = _step(opts["step"])
    for name in PARALLEL_SIZES:
        if opts[name] is not None and opts[name] < 1:
            raise L.LayoutError("%s must be at least 1, got %s" % (name, opts[name]))
    if opts["quiet_seconds"] < 0:
        raise L.LayoutError("quiet_seconds must not be negative")
    if opts["runner"] != L.AUTO and opts["backend"] != L.AUTO:
        L.check_combination(opts["runner"], opts["backend"])
    if opts["backend"] != L.AUTO:
        L.validate_parallel(opts["backend"], *(opts[name] for name in PARALLEL_SIZES))
    _check_critic(opts)
    return opts


def _step(step):
    """``latest`` or a non-negative step number; ``"40"`` and RLinf's directory name ``global_step_40`` mean 40."""
    if isinstance(step, int) and not isinstance(step, bool) and step < 0:
        raise L.LayoutError("step must not be negative, got %d" % step)
    parsed = step_names.parse_step(step)
    if parsed is None:
        raise L.LayoutError("step must be a number, global_step_N or 'latest', got %r" % (step,))
    return parsed


def _check_critic(opts):
    if opts["critic"] and opts["runner"] not in (L.AUTO, "reasoning", "agent"):
        raise L.LayoutError(
            "critic=true is inconsistent with runner %s: only reasoning/agent save a critic" % opts["runner"]
        )
    if opts["critic"] and opts["backend"] in ("fsdp", "fsdp2"):
        raise L.LayoutError(
            "critic=true is inconsistent with backend %s: only Megatron critics are saved" % opts["backend"]
        )
