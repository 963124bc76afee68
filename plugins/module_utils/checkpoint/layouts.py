# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RLinf checkpoint layouts as data: what each runner x backend writes into ``global_step_N``.

This is the "Completeness rules" table of docs/rlinf-checkpoints.md turned into functions that
expand a (runner, backend, world size, TP/PP/EP, options) description into the exact list of
required entries (paths relative to ``global_step_N``), which of them are commit markers written
last, and which ones are ``torch.save`` zips, trackers or JSON that a strict check may open.
Nothing here touches a file system.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from operator import itemgetter

from ansible_collections.rlark.ops.plugins.module_utils import step_names

RUNNERS = ("embodied", "offline", "sft", "reasoning", "agent", "coding", "sac", "dagger", "iql")
BACKENDS = ("fsdp", "fsdp2", "megatron", "megatron_torch_dist")
AUTO = "auto"

# Runners whose checkpoints share one layout. The actor family writes ``actor/`` only (SFT may
# add data state); the reasoning family adds ``critic/`` (Megatron) and ``data/data.pt`` last.
FAMILY = {
    "embodied": "actor",
    "offline": "actor",
    "sft": "actor",
    "coding": "actor",
    "reasoning": "reasoning",
    "agent": "reasoning",
    "sac": "sac",
    "dagger": "dagger",
    "iql": "iql",
}
# The runner name reported when only the family could be detected from the files.
FAMILY_LABEL = {"actor": "embodied", "reasoning": "reasoning", "sac": "sac", "dagger": "dagger", "iql": "iql"}
FSDP_ONLY_FAMILIES = ("sac", "dagger", "iql")
# Worker additions live inside ``actor/`` (the save path the runner hands to its actor workers).
IQL_MODELS = ("actor/actor_policy", "actor/critic", "actor/value")

# Payload kinds: how a strict check may open an entry.
FILE = "file"  # presence only (DCP shards are raw storage, not zips)
ZIP = "zip"  # written by torch.save: a zip archive that ends with an end-of-central-directory record
TRACKER = "tracker"  # Megatron latest_checkpointed_iteration.txt: must contain N
JSON = "json"  # must parse
DCP_METADATA = "dcp-metadata"  # torch DCP commit marker; a pickle that names the shard files
ANY_DISTCP = "any-distcp"  # torch_dist: at least one ``*.distcp`` in the directory

TRACKER_NAME = "latest_checkpointed_iteration.txt"
DISTCP = re.compile(r"^__(\d+)_(\d+)\.distcp$")
RANK_FILE = re.compile(r"^checkpoint_rank_(\d+)\.pt$")
RANK_DIR = re.compile(r"^rank_(\d+)$")
MP_RANK = re.compile(r"^mp_rank_(\d{2})(?:_(\d{3}))?(?:_(\d{3}))?$")
ITER_DIR = re.compile(r"^iter_(\d{7})$")

# Only these file names matter to the rules; everything else is counted, never stored.
INTERESTING_SUFFIXES = (".distcp", ".pt", ".json", ".tmp", ".txt", ".metadata")

ROW_TEXT = {
    "fsdp-actor": "FSDP/FSDP2 dcp x embodied/offline/SFT/coding: actor/dcp_checkpoint/__r_0.distcp for every rank, "
    "actor/dcp_checkpoint/.metadata without a leftover .metadata.tmp, then actor/model_state_dict/full_weights.pt "
    "(SFT: actor/data.pt + actor/rng.pt, or actor/data_state.json, when used)",
    "fsdp-sac": "FSDP x SAC: the actor model (dcp or local_shard) plus full_weights, actor/sac_components/alpha when "
    "learned, actor/sac_components/target_model/checkpoint_rank_r.pt and actor/sac_components/replay_buffer/rank_r/"
    "{metadata.json, trajectory_index.json} for every rank",
    "fsdp-dagger": "FSDP x DAgger: the actor model plus actor/dagger_components/replay_buffer/rank_r/"
    "{metadata.json, trajectory_index.json} for every rank",
    "fsdp-iql": "FSDP x IQL: actor/{actor_policy,critic,value}/local_shard_checkpoint/checkpoint_rank_r.pt for every "
    "rank with their full_weights, actor/iql_components/target_critic.pt, then actor/iql_components/state.pt",
    "fsdp-reasoning": "FSDP x reasoning/agent: the dcp entries under actor/, then data/data.pt",
    "megatron-reasoning": "Megatron x reasoning/agent: per actor/ (and critic/) TPxPP(xEP) iter_N/mp_rank_*/"
    "model_optim_rng.pt (+ distrib_optim.pt) and latest_checkpointed_iteration.txt == N, then data/data.pt",
    "megatron-actor": "Megatron x coding/SFT/embodied: actor/iter_N/mp_rank_*/model_optim_rng.pt (+ distrib_optim.pt) "
    "for TPxPP(xEP) ranks, then actor/latest_checkpointed_iteration.txt == N (VLM SFT: data_state.json after it)",
}
TORCH_DIST_TEXT = "Megatron torch_dist: iter_N/{*.distcp, .metadata, common.pt, metadata.json}, then the tracker"


class GateError(Exception):
    """Bad input or an unreadable source: one clear message naming the path or bucket, no traceback."""


class LayoutError(GateError):
    """Parameters that describe no RLinf checkpoint."""


def step_number(name):
    """``global_step_N`` -> N; anything else (``global_step_40_bak``, ``best_model``) -> None."""
    return step_names.step_number(name)


def mp_rank_name(tp, pp, ep, pp_size, ep_size):
    """Megatron's per-model-parallel-rank directory name (``_ppp`` only if PP>1, ``_eee`` only if EP>1)."""
    name = "mp_rank_%02d" % tp
    if pp_size > 1:
        name += "_%03d" % pp
    if ep_size > 1:
        name += "_%03d" % ep
    return name


def iter_dir(component, step):
    return "%s/iter_%07d" % (component, step)


def check_combination(runner, backend):
    """Refuse combinations RLinf never writes (SAC/DAgger/IQL workers are FSDP-only)."""
    family = FAMILY[runner]
    if backend.startswith("megatron") and family in FSDP_ONLY_FAMILIES:
        raise LayoutError(
            "runner '%s' saves through FSDP workers only; backend '%s' does not apply (use fsdp or fsdp2)"
            % (runner, backend)
        )


def validate_parallel(backend, world_size, tp, pp, ep):
    """Inconsistent parallel sizes are bad input: say which numbers disagree."""
    for name, value in (("actor_world_size", world_size), ("tensor_parallel", tp), ("pipeline_parallel", pp)):
        if value is not None and value < 1:
            raise LayoutError("%s must be at least 1, got %s" % (name, value))
    if ep is not None and ep < 1:
        raise LayoutError("expert_parallel must be at least 1, got %s" % ep)
    if backend in ("fsdp", "fsdp2"):
        for name, value in (("tensor_parallel", tp), ("pipeline_parallel", pp), ("expert_parallel", ep)):
            if value is not None and value > 1:
                raise LayoutError(
                    "%s=%s is inconsistent with backend %s: FSDP checkpoints are sharded by actor_world_size only"
                    % (name, value, backend)
                )
    if backend.startswith("megatron") and world_size is not None:
        model_parallel = (tp or 1) * (pp or 1) * (ep or 1)
        if world_size % model_parallel:
            raise LayoutError(
                "actor_world_size=%d is not a multiple of tensor_parallel x pipeline_parallel x expert_parallel = %d"
                % (world_size, model_parallel)
            )


class Expectation:
    """Required entries of one step, in write order, with the commit markers that close them."""

    def __init__(self, row):
        self.row = row
        self.required = frozenset()
        self.any_distcp = []
        self.order_fetch = []
        self.entries = []  # (relpath, kind), write order
        self.order = []  # (marker relpath, [relpaths written before it])
        self.markers = []  # the entries written last (the step's commit markers)

    def add(self, rel, kind):
        self.entries.append((rel, kind))
        return rel

    def after(self, marker, preds):
        preds = [p for p in preds if p]
        if preds:
            self.order.append((marker, preds))

    def rule_text(self):
        return ROW_TEXT.get(self.row, TORCH_DIST_TEXT)


def _dcp(exp, base, world_size):
    shards = [exp.add("%s/__%d_0.distcp" % (base, r), FILE) for r in range(world_size)]
    meta = exp.add(base + "/.metadata", DCP_METADATA)
    exp.after(meta, shards)
    return meta


def fsdp_model(exp, component, world_size, fmt, full_weights):
    """An FSDP model under ``component/``: dcp (``.metadata`` commits) or local_shard, then full_weights."""
    if fmt == "local_shard":
        last = [
            exp.add("%s/local_shard_checkpoint/checkpoint_rank_%d.pt" % (component, r), ZIP) for r in range(world_size)
        ]
    else:
        last = [_dcp(exp, component + "/dcp_checkpoint", world_size)]
    if full_weights:
        fw = exp.add(component + "/model_state_dict/full_weights.pt", ZIP)
        exp.after(fw, last)
        last = [fw]
    return last


def megatron_component(exp, component, step, fmt, grid, dist_opt):
    """Megatron ``save_checkpoint`` into ``component/``: per mp_rank payloads, then the tracker."""
    it = iter_dir(component, step)
    written = []
    if fmt == "torch_dist":
        written.append(exp.add(it + "/*.distcp", ANY_DISTCP))
        written.append(exp.add(it + "/common.pt", ZIP))
        written.append(exp.add(it + "/metadata.json", JSON))
        written.append(exp.add(it + "/.metadata", DCP_METADATA))
    else:
        tp_size, pp_size, ep_size = grid
        for tp in range(tp_size):
            for pp in range(pp_size):
                for ep in range(ep_size):
                    d = "%s/%s" % (it, mp_rank_name(tp, pp, ep, pp_size, ep_size))
                    opt = exp.add(d + "/distrib_optim.pt", ZIP) if dist_opt else None
                    model = exp.add(d + "/model_optim_rng.pt", ZIP)
                    exp.after(model, [opt])
                    written.extend([opt, model])
    tracker = exp.add("%s/%s" % (component, TRACKER_NAME), TRACKER)
    exp.after(tracker, written)
    return [tracker]


def replay_buffer(exp, base, world_size):
    last = []
    for r in range(world_size):
        meta = exp.add("%s/rank_%d/metadata.json" % (base, r), JSON)
        index = exp.add("%s/rank_%d/trajectory_index.json" % (base, r), JSON)
        exp.after(index, [meta])
        last.append(index)
    return last


def expect(step, runner, backend, world_size, grid=None, features=(), critic=False, full_weights=True):
    """Expand one row of the table into an :class:`Expectation`.

    ``world_size`` is the actor world size (FSDP shard count); ``grid`` is (TP, PP, EP) for Megatron
    torch format. ``features`` are optional parts detected on disk: ``local_shard`` (model format),
    ``dist_opt``, ``torch_dist``, ``vla`` (actor/data.pt + rng.pt), ``vlm`` (data_state.json), ``alpha``.
    """
    family = FAMILY[runner]
    check_combination(runner, backend)
    features = set(features)
    fmt = "local_shard" if "local_shard" in features else "dcp"
    if backend.startswith("megatron"):
        mfmt = "torch_dist" if (backend == "megatron_torch_dist" or "torch_dist" in features) else "torch"
        exp = Expectation("megatron-%s" % family if mfmt == "torch" else "megatron-torch-dist")
        dist_opt = "dist_opt" in features
        last = megatron_component(exp, "actor", step, mfmt, grid, dist_opt)
        if family == "reasoning":
            if critic:
                last += megatron_component(exp, "critic", step, mfmt, grid, dist_opt)
            data = exp.add("data/data.pt", ZIP)
            exp.after(data, last)
            last = [data]
        elif "vlm" in features:
            state = exp.add("actor/data_state.json", JSON)
            exp.after(state, last)
            last = [state]
        exp.markers = last
        return exp

    exp = Expectation("fsdp-%s" % family)
    if family == "iql":
        last = []
        for component in IQL_MODELS:
            last += fsdp_model(exp, component, world_size, "local_shard", full_weights)
        target = exp.add("actor/iql_components/target_critic.pt", ZIP)
        state = exp.add("actor/iql_components/state.pt", ZIP)
        exp.after(state, [*last, target])
        exp.markers = [state]
        return exp

    last = fsdp_model(exp, "actor", world_size, fmt, full_weights)
    if family == "actor" and "vla" in features:
        data = exp.add("actor/data.pt", ZIP)
        rng = exp.add("actor/rng.pt", ZIP)
        exp.after(rng, [data])
        last = [rng]
    if family == "actor" and "vlm" in features:
        state = exp.add("actor/data_state.json", JSON)
        exp.after(state, last)
        last = [state]
    if family == "reasoning":
        data = exp.add("data/data.pt", ZIP)
        exp.after(data, last)
        last = [data]
    if family == "sac":
        if "alpha" in features:
            exp.add("actor/sac_components/alpha/dcp_checkpoint/.metadata", DCP_METADATA)
        for r in range(world_size):
            exp.add("actor/sac_components/target_model/checkpoint_rank_%d.pt" % r, ZIP)
        last = replay_buffer(exp, "actor/sac_components/replay_buffer", world_size)
    if family == "dagger":
        last = replay_buffer(exp, "actor/dagger_components/replay_buffer", world_size)
    exp.markers = last
    return exp


# One step's expectation differs from another's of the same shape only in ``iter_NNNNNNN``: build
# each shape once (thousands of steps, TP x PP directories each) and rename per step.
_SENTINEL_STEP = 9999999
_SENTINEL_ITER = "/iter_%07d/" % _SENTINEL_STEP
_TEMPLATES = {}


def template(runner, backend, world_size, grid=None, features=(), critic=False, full_weights=True):
    """The expectation of a shape with a placeholder step; ``required`` is the set of plain entries."""
    key = (runner, backend, world_size, grid, frozenset(features), critic, full_weights)
    tmpl = _TEMPLATES.get(key)
    if tmpl is None:
        if len(_TEMPLATES) > 256:
            _TEMPLATES.clear()
        tmpl = expect(_SENTINEL_STEP, runner, backend, world_size, grid, features, critic, full_weights)
        tmpl.required = frozenset(rel for rel, kind in tmpl.entries if kind != ANY_DISTCP)
        tmpl.any_distcp = [rel for rel, kind in tmpl.entries if kind == ANY_DISTCP]
        tmpl.order_fetch = []
        for marker, preds in tmpl.order:
            preds = [p for p in preds if p in tmpl.required]  # a "*.distcp" pattern has no mtime of its own
            if preds:
                tmpl.order_fetch.append((marker, preds, itemgetter(*preds)))
        _TEMPLATES[key] = tmpl
    return tmpl


def to_template(step, backend):
    """(real, placeholder) iteration directory fragments of a step; None when paths carry no step."""
    if not backend.startswith("megatron"):
        return None
    return "/iter_%07d/" % step, _SENTINEL_ITER


def expect_cached(step, runner, backend, world_size, grid=None, features=(), critic=False, full_weights=True):
    """:func:`expect` with per-shape templates; same result."""
    tmpl = template(runner, backend, world_size, grid, features, critic, full_weights)
    if not backend.startswith("megatron"):
        return tmpl
    real = "/iter_%07d/" % step

    def sub(rel):
        return rel.replace(_SENTINEL_ITER, real) if rel else rel

    exp = Expectation(tmpl.row)
    exp.entries = [(sub(rel), kind) for rel, kind in tmpl.entries]
    exp.order = [(sub(m), [sub(p) for p in preds]) for m, preds in tmpl.order]
    exp.markers = [sub(m) for m in tmpl.markers]
    return exp


def grid_names(tp, pp, ep):
    """The mp_rank directory names of a (TP, PP, EP) grid."""
    key = (tp, pp, ep)
    names = _GRID_NAMES.get(key)
    if names is None:
        names = _GRID_NAMES[key] = frozenset(
            mp_rank_name(t, p, e, pp, ep) for t in range(tp) for p in range(pp) for e in range(ep)
        )
    return names


_GRID_NAMES = {}


# Rank-indexed entries of FSDP layouts, per family: (directory, pattern of the child, is a dir).
# The first group is primary: it is closed by a commit marker, so it is what the world size is
# inferred from; shards beyond the world size in any group are stale leftovers of a larger run.
RANK_GROUPS = {
    "actor": [("actor/dcp_checkpoint", DISTCP, False), ("actor/local_shard_checkpoint", RANK_FILE, False)],
    "reasoning": [("actor/dcp_checkpoint", DISTCP, False)],
    "sac": [
        ("actor/dcp_checkpoint", DISTCP, False),
        ("actor/local_shard_checkpoint", RANK_FILE, False),
        ("actor/sac_components/target_model", RANK_FILE, False),
        ("actor/sac_components/replay_buffer", RANK_DIR, True),
    ],
    "dagger": [
        ("actor/dcp_checkpoint", DISTCP, False),
        ("actor/local_shard_checkpoint", RANK_FILE, False),
        ("actor/dagger_components/replay_buffer", RANK_DIR, True),
    ],
    "iql": [("%s/local_shard_checkpoint" % c, RANK_FILE, False) for c in IQL_MODELS],
}


def contiguous_size(ranks):
    """``{0..k-1}`` -> k; a set with holes is ambiguous (a missing rank or a stale one) -> None."""
    if not ranks:
        return None
    top = max(ranks)
    return top + 1 if len(ranks) == top + 1 else None


def parse_mp_rank_names(names):
    """Megatron mp_rank directory names -> (tp set, second-number set, third-number set, part counts)."""
    tps, seconds, thirds, parts = set(), set(), set(), set()
    for name in names:
        m = MP_RANK.match(name)
        if not m:
            continue
        tps.add(int(m.group(1)))
        count = 1
        if m.group(2) is not None:
            seconds.add(int(m.group(2)))
            count = 2
        if m.group(3) is not None:
            thirds.add(int(m.group(3)))
            count = 3
        parts.add(count)
    return tps, seconds, thirds, parts


_GRIDS = {}


def infer_grid_cached(names, tp=None, pp=None, ep=None):
    """:func:`infer_grid` for a frozenset of names; steps of one run share their directory names."""
    key = (names, tp, pp, ep)
    hit = _GRIDS.get(key)
    if hit is None:
        if len(_GRIDS) > 256:
            _GRIDS.clear()
        hit = _GRIDS[key] = infer_grid(names, tp, pp, ep)
    return hit


def infer_grid(names, tp=None, pp=None, ep=None):
    """(TP, PP, EP) from the mp_rank directories, honouring given sizes.

    Returns ``(grid, reason)``: ``grid`` is None when the names cannot decide it (a two-part name
    ``mp_rank_TT_NNN`` is PP when EP is 1 and EP when PP is 1; holes in a rank range are either a
    missing or a stale directory), and ``reason`` says which parameter to pass.
    """
    tps, seconds, thirds, parts = parse_mp_rank_names(names)
    if tp is None:
        tp = contiguous_size(tps)
        if tp is None:
            return None, "tensor_parallel (the mp_rank_TT numbers found are %s)" % (sorted(tps) or "none")
    if pp is not None and ep is not None:
        return (tp, pp, ep), None
    if len(parts) > 1:
        return None, "pipeline_parallel and expert_parallel (mp_rank names of different shapes: %s)" % sorted(parts)
    shape = parts.pop() if parts else 1
    if shape == 1:
        return (tp, pp or 1, ep or 1), None
    if shape == 3:
        pp = pp if pp is not None else contiguous_size(seconds)
        ep = ep if ep is not None else contiguous_size(thirds)
        if pp is None or ep is None:
            return None, "pipeline_parallel and expert_parallel (holes in the mp_rank numbers)"
        return (tp, pp, ep), None
    # shape == 2: mp_rank_TT_NNN is a pipeline rank unless the pipeline is 1 and experts are split
    if pp == 1 or (ep is not None and ep > 1):
        ep = ep if ep is not None else contiguous_size(seconds)
        return ((tp, 1, ep), None) if ep else (None, "expert_parallel (holes in the mp_rank numbers)")
    if ep == 1 or (pp is not None and pp > 1):
        pp = pp if pp is not None else contiguous_size(seconds)
        return ((tp, pp, 1), None) if pp else (None, "pipeline_parallel (holes in the mp_rank numbers)")
    return None, "pipeline_parallel or expert_parallel (mp_rank_TT_NNN may be either a pipeline or an expert rank)"
