"""RLinf checkpoint layouts and write order (rlinf-checkpoints.md), as an ordered list of operations.

A save is a plan of ("write", relpath, kind) and ("rename", src, dst) steps relative to
`global_step_N/`; `required_entries` is the completeness table for the same configuration.
"""

import io
import json
import pickle
import zipfile

# kinds: "pt" (torch.save zip archive), "json", "text", "bin" (raw bytes: distcp shards, dcp metadata)


def _fsdp_dcp(prefix, world):
    ops = [("write", "%s/dcp_checkpoint/__%d_0.distcp" % (prefix, r), "bin") for r in range(world)]
    ops.append(("write", "%s/dcp_checkpoint/.metadata.tmp" % prefix, "bin"))
    ops.append(("rename", "%s/dcp_checkpoint/.metadata.tmp" % prefix, "%s/dcp_checkpoint/.metadata" % prefix))
    return ops


def _full_weights(prefix):
    return [("write", "%s/model_state_dict/full_weights.pt" % prefix, "pt")]


def _local_shard(prefix, world):
    return [("write", "%s/local_shard_checkpoint/checkpoint_rank_%d.pt" % (prefix, r), "pt") for r in range(world)]


def mp_rank_dirs(tp, pp):
    out = []
    for p in range(pp):
        for t in range(tp):
            out.append("mp_rank_%02d" % t + ("_%03d" % p if pp > 1 else ""))
    return out


def _megatron(prefix, step, cfg):
    iter_dir = "%s/iter_%07d" % (prefix, step)
    ops = []
    if cfg.backend == "megatron_torch_dist":
        ops += [("write", "%s/__%d_0.distcp" % (iter_dir, r), "bin") for r in range(cfg.world_size)]
        ops += [
            ("write", "%s/.metadata" % iter_dir, "bin"),
            ("write", "%s/common.pt" % iter_dir, "pt"),
            ("write", "%s/metadata.json" % iter_dir, "json"),
        ]
    else:
        for rank_dir in mp_rank_dirs(cfg.tp, cfg.pp):
            ops.append(("write", "%s/%s/distrib_optim.pt" % (iter_dir, rank_dir), "pt"))
            ops.append(("write", "%s/%s/model_optim_rng.pt" % (iter_dir, rank_dir), "pt"))
    ops.append(("write", "%s/latest_checkpointed_iteration.txt" % prefix, "text"))
    return ops


def _model(prefix, step, cfg):
    if cfg.megatron:
        return _megatron(prefix, step, cfg)
    ops = _fsdp_dcp(prefix, cfg.world_size)
    if cfg.full_weights:
        ops += _full_weights(prefix)
    return ops


def _replay_buffer(prefix, world):
    ops = []
    for r in range(world):
        base = "%s/replay_buffer/rank_%d" % (prefix, r)
        ops += [
            ("write", "%s/trajectory_0.pt" % base, "pt"),
            ("write", "%s/metadata.json" % base, "json"),
            ("write", "%s/trajectory_index.json" % base, "json"),
        ]
    return ops


def save_plan(cfg, step):
    """Ordered operations of one save of global_step_<step>, in RLinf's real write order."""
    w = cfg.world_size
    if cfg.runner == "iql":
        ops = []
        for part in ("actor_policy", "critic", "value"):
            ops += _local_shard("actor/%s" % part, w) + _full_weights("actor/%s" % part)
        ops += [
            ("write", "actor/iql_components/target_critic.pt", "pt"),
            ("write", "actor/iql_components/state.pt", "pt"),
        ]
        return ops
    ops = _model("actor", step, cfg)
    if cfg.runner == "sac":
        if cfg.learn_alpha:
            ops += _fsdp_dcp("actor/sac_components/alpha", w)
        ops += [("write", "actor/sac_components/target_model/checkpoint_rank_%d.pt" % r, "pt") for r in range(w)]
        ops += _replay_buffer("actor/sac_components", w)
    elif cfg.runner == "dagger":
        ops += _replay_buffer("actor/dagger_components", w)
    elif cfg.runner == "sft" and cfg.sft_data == "vla":
        ops += [("write", "actor/data.pt", "pt"), ("write", "actor/rng.pt", "pt")]
    elif cfg.runner == "sft" and cfg.sft_data == "vlm":
        ops += [("write", "actor/data_state.json", "json")]
    elif cfg.runner in ("reasoning", "agent"):
        if cfg.megatron and cfg.critic:
            ops += _model("critic", step, cfg)
        ops += [("write", "data/data.pt", "pt")]
    return ops


def required_entries(cfg, step):
    """Completeness table: every file the plan ends with (renamed sources excluded)."""
    entries = []
    renamed = set()
    for op in save_plan(cfg, step):
        if op[0] == "write":
            entries.append(op[1])
        else:
            renamed.add(op[1])
            entries.append(op[2])
    return [e for e in entries if e not in renamed]


def forbidden_leftovers(cfg, step):
    return [op[1] for op in save_plan(cfg, step) if op[0] == "rename"]


def payload(kind, relpath, step, rank=0):
    """Small but real file contents: zip archives for .pt (like torch.save), valid JSON, the tracker text."""
    if kind == "text":
        return str(step).encode()
    if kind == "json":
        if relpath.endswith("trajectory_index.json"):
            return json.dumps({"trajectories": ["trajectory_0.pt"], "global_step": step}).encode()
        return json.dumps({"global_step": step, "file": relpath.rsplit("/", 1)[-1], "rank": rank}).encode()
    if kind == "pt":
        buf = io.BytesIO()
        stem = "archive"
        data = pickle.dumps({"global_step": step, "file": relpath, "weights": list(range(256))}, protocol=2)
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
            zf.writestr(stem + "/data.pkl", data)
            zf.writestr(stem + "/byteorder", "little")
            zf.writestr(stem + "/data/0", bytes(range(256)) * 8)
            zf.writestr(stem + "/version", "3\n")
        return buf.getvalue()
    header = b"RLARKSIM-DCP\x00" + relpath.encode() + b"\x00" + str(step).encode() + b"\x00"
    return header + bytes((i * 7 + step) % 256 for i in range(2048))


def splits_in_two(kind):
    """Plain torch.save/open writes are not atomic: a kill can leave them truncated."""
    return kind == "pt"
