# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generate large RLinf checkpoint roots for the gate benchmarks (small files, real layouts)."""

import io
import os
import pickle
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "unit", "checkpoint"))

import dcp_format  # noqa: E402  (test-only writer of the .metadata format)

TP, PP = 8, 4


def _zip():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", pickle.dumps({"w": 1}))
        zf.writestr("archive/version", "3\n")
    return buf.getvalue()


ZIP = _zip()


def megatron_step(step):
    """Megatron torch format, TP8 x PP4 with the distributed optimizer (coding runner): 65 files."""
    files = []
    for t in range(TP):
        for p in range(PP):
            d = "actor/iter_%07d/mp_rank_%02d_%03d/" % (step, t, p)
            files += [(d + "distrib_optim.pt", ZIP), (d + "model_optim_rng.pt", ZIP)]
    files.append(("actor/latest_checkpointed_iteration.txt", str(step).encode()))
    return files


def fsdp_step(step, world=64):
    """FSDP dcp with full weights (embodied runner): world + 2 files."""
    files = [("actor/dcp_checkpoint/__%d_0.distcp" % r, b"\0" * 32) for r in range(world)]
    files.append(("actor/dcp_checkpoint/.metadata", b"meta"))
    files.append(("actor/model_state_dict/full_weights.pt", ZIP))
    return files


TORCH_DIST_RANKS = 1980  # x 2 files per rank + 4 = 3,964 files per step; 25 steps = 99,100 files
SHARD = b"\1" * 64
_META_CACHE = {}


def torch_dist_metadata(ranks, files_per_rank=2):
    key = (ranks, files_per_rank)
    if key not in _META_CACHE:
        items = [("__%d_%d.distcp" % (r, k), 0, len(SHARD)) for r in range(ranks) for k in range(files_per_rank)]
        _META_CACHE[key] = dcp_format.metadata_bytes(items, extra_bytes_entry=False)
    return _META_CACHE[key]


def torch_dist_step(step, ranks=TORCH_DIST_RANKS):
    """Megatron torch_dist (reasoning-free actor layout): 2 shards per rank, real-format .metadata."""
    it = "actor/iter_%07d/" % step
    files = [(it + "__%d_%d.distcp" % (r, k), SHARD) for r in range(ranks) for k in range(2)]
    files.append((it + "common.pt", ZIP))
    files.append((it + "metadata.json", b'{"sharded_backend": "torch_dist", "sharded_backend_version": 1}'))
    files.append((it + ".metadata", torch_dist_metadata(ranks)))
    files.append(("actor/latest_checkpointed_iteration.txt", str(step).encode()))
    return files


def write_tree(root, layout, steps, first=1, mtime=None):
    """Write ``steps`` global_step dirs; every file gets ``mtime`` (old, so the quiet period holds)."""
    count = 0
    for i in range(steps):
        step = first + i
        for rel, data in layout(step):
            path = os.path.join(root, "global_step_%d" % step, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(data)
            if mtime is not None:
                os.utime(path, (mtime, mtime))
            count += 1
    return count
