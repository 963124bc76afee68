# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write real torch DCP checkpoints on CPU, the way RLinf's FSDP worker saves, for the gate's tests.

Run with a Python that has torch (``make torch-dcp-fixtures`` builds one venv per version and runs
this in each); the collection itself never imports torch. For one torch version it writes, under
``OUT/torch-<version>/``:

- ``fsdp_w2/``: ``torch.distributed.checkpoint.save`` by 2 gloo ranks on CPU of RLinf's FSDP
  state (``fsdp_checkpoint`` -> model DTensors sharded on dim 0, Adam state, lr scheduler,
  ``fsdp_version``, rng bytes): ``__0_0.distcp``, ``__1_0.distcp`` and the ``.metadata`` commit
  marker, as in ``global_step_N/actor/dcp_checkpoint/``;
- ``expected.json``: what torch's own reader (``FileSystemReader.read_metadata``) says each shard
  file must hold (the largest offset + length of its items), the files' sizes and every global
  the ``.metadata`` pickle names. The tests compare the gate's torch-free reader with that.

gloo talks over loopback only (``GLOO_SOCKET_IFNAME=lo``, a file store for the rendezvous).
"""

import json
import os
import pickle
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor  # torch >= 2.4

WORLD = 2


def _state(rank, mesh):
    torch.manual_seed(0)
    full = {"embed.weight": torch.randn(64, 16), "head.weight": torch.randn(8, 16), "head.bias": torch.randn(8)}
    model = {k: distribute_tensor(v, mesh, [Shard(0)]) for k, v in full.items()}
    optim = {
        "state": {
            k: {
                "step": torch.tensor(40.0),
                "exp_avg": distribute_tensor(v * 0.1, mesh, [Shard(0)]),
                "exp_avg_sq": distribute_tensor(v * v, mesh, [Shard(0)]),
            }
            for k, v in full.items()
        },
        "param_groups": [{"lr": 1e-5, "betas": (0.9, 0.999), "weight_decay": 0.0, "params": sorted(full)}],
    }
    rng = {"cpu": torch.get_rng_state(), "python": ("v3", rank)}
    return {
        "fsdp_checkpoint": {
            "model": model,
            "optimizers": optim,
            "lr_schedulers": {"last_epoch": 40, "base_lrs": [1e-5]},
            "fsdp_version": 2,
            "rng": rng,
        }
    }


def _save(rank, store, out):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=WORLD)
    try:
        mesh = init_device_mesh("cpu", (WORLD,))
        dcp.save(_state(rank, mesh), checkpoint_id=out)
        dist.barrier()
    finally:
        dist.destroy_process_group()


class _NamingUnpickler(pickle.Unpickler):
    """torch's own classes, with a note of every global the pickle names."""

    def __init__(self, fh):
        super().__init__(fh)
        self.names = set()

    def find_class(self, module, name):
        self.names.add("%s.%s" % (module, name))
        return super().find_class(module, name)


def _globals(path):
    with open(path, "rb") as fh:
        reader = _NamingUnpickler(fh)
        reader.load()
    return sorted(reader.names)


def _expected(ckpt):
    meta = dcp.FileSystemReader(ckpt).read_metadata()
    needs = {}
    for info in meta.storage_data.values():
        needs[info.relative_path] = max(needs.get(info.relative_path, 0), info.offset + info.length)
    files = {n: os.path.getsize(os.path.join(ckpt, n)) for n in sorted(os.listdir(ckpt))}
    names = _globals(os.path.join(ckpt, ".metadata"))
    return {"torch": torch.__version__, "world_size": WORLD, "needs": needs, "sizes": files, "globals": names}


def main(out_root):
    version = torch.__version__.split("+")[0]
    target = os.path.join(out_root, "torch-" + version)
    shutil.rmtree(target, ignore_errors=True)
    ckpt = os.path.join(target, "fsdp_w2")
    os.makedirs(ckpt)
    work = tempfile.mkdtemp(prefix="dcp-store-")
    try:
        mp.spawn(_save, args=(os.path.join(work, "store"), ckpt), nprocs=WORLD, join=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(target, "expected.json"), "w") as fh:
        json.dump(_expected(ckpt), fh, indent=1, sort_keys=True)
        fh.write("\n")
    print("wrote", target, sorted(os.listdir(ckpt)))


if __name__ == "__main__":
    main(sys.argv[1])
