# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only writer of torch DCP ``.metadata`` files in torch's own pickle format, without torch.

torch (``torch/distributed/checkpoint/metadata.py`` and ``filesystem.py``) pickles a ``Metadata``
dataclass: ``state_dict_metadata`` (fqn -> ``TensorStorageMetadata(properties, size, chunks)`` or
``BytesStorageMetadata``), ``planner_data``, ``storage_data`` (``MetadataIndex(fqn, offset, index)``
-> ``_StorageInfo(relative_path, offset, length)``), ``storage_meta`` and ``version``. The classes
below carry the same module paths and field names, so ``pickle`` writes the same opcodes
(GLOBAL ``torch.distributed.checkpoint.metadata Metadata``, ``torch Size``, ``torch float32``,
...). While pickling, stand-in modules are put into ``sys.modules`` and removed again.

Independent of the collection's reader on purpose.
"""

import enum
import pickle
import sys
import types
from contextlib import contextmanager

META = "torch.distributed.checkpoint.metadata"
FS = "torch.distributed.checkpoint.filesystem"


def _cls(module, name, fields, base=object):
    def __init__(self, *args, **kwargs):
        for key, value in zip(fields, args):
            setattr(self, key, value)
        for key, value in kwargs.items():
            setattr(self, key, value)

    return type(name, (base,), {"__init__": __init__, "__module__": module, "__qualname__": name})


class Size(tuple):
    def __reduce__(self):
        return (Size, (tuple(self),))


Size.__module__ = "torch"
Size.__qualname__ = "Size"


class _TorchConst:
    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return self.name


_TorchConst.__module__ = "torch"
float32 = _TorchConst("float32")
strided = _TorchConst("strided")  # torch before 2.6: GLOBAL torch.strided


def _get_layout(name):
    return name


_get_layout.__module__ = "torch.serialization"


class _LayoutByName:
    """torch 2.6 and later pickle a layout as ``torch.serialization._get_layout("torch.strided")``."""

    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return (_get_layout, (self.name,))


strided_by_name = _LayoutByName("torch.strided")
LAYOUTS = {"by-name": strided_by_name, "global": strided}
_layout = [strided_by_name]


class _MEM_FORMAT_ENCODING(enum.Enum):
    TORCH_CONTIGUOUS_FORMAT = 0
    TORCH_CHANNELS_LAST = 1
    TORCH_PRESERVE_FORMAT = 2


_MEM_FORMAT_ENCODING.__module__ = META

Metadata = _cls(META, "Metadata", ("state_dict_metadata", "planner_data", "storage_data", "storage_meta", "version"))
MetadataIndex = _cls(META, "MetadataIndex", ("fqn", "offset", "index"))
ChunkStorageMetadata = _cls(META, "ChunkStorageMetadata", ("offsets", "sizes"))
TensorStorageMetadata = _cls(META, "TensorStorageMetadata", ("properties", "size", "chunks"))
BytesStorageMetadata = _cls(META, "BytesStorageMetadata", ())
StorageMeta = _cls(META, "StorageMeta", ("checkpoint_id", "save_id", "load_id", "modules"))
_StorageInfo = _cls(FS, "_StorageInfo", ("relative_path", "offset", "length"))


class TensorProperties:
    """torch pickles it as a tuple (its ``__getstate__``), memory format as the enum above."""

    def __init__(self):
        self.dtype, self.layout, self.requires_grad = float32, _layout[0], False

    def __getstate__(self):
        return (self.dtype, self.layout, self.requires_grad, _MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT, False)

    def __setstate__(self, state):
        self.dtype, self.layout, self.requires_grad = state[:3]


TensorProperties.__module__ = META


@contextmanager
def _fake_torch():
    names = ["torch", "torch.serialization", "torch.distributed", "torch.distributed.checkpoint", META, FS]
    saved = {n: sys.modules.get(n) for n in names}
    mods = {n: types.ModuleType(n) for n in names}
    torch = mods["torch"]
    torch.Size, torch.float32, torch.strided = Size, float32, strided
    for cls in (Metadata, MetadataIndex, ChunkStorageMetadata, TensorStorageMetadata, BytesStorageMetadata):
        setattr(mods[META], cls.__name__, cls)
    for cls in (StorageMeta, TensorProperties, _MEM_FORMAT_ENCODING):
        setattr(mods[META], cls.__name__, cls)
    mods[FS]._StorageInfo = _StorageInfo
    mods["torch.serialization"]._get_layout = _get_layout
    sys.modules.update(mods)
    try:
        yield
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def metadata_bytes(items, protocol=pickle.DEFAULT_PROTOCOL, extra_bytes_entry=True, layout="by-name"):
    """``items``: [(shard file name, offset, length)], one tensor chunk each -> the pickled ``.metadata``.

    ``layout``: how a tensor's layout is pickled, ``by-name`` (torch >= 2.6) or ``global`` (older).
    """
    _layout[0] = LAYOUTS[layout]
    state_dict_metadata = {}
    storage_data = {}
    for i, (name, offset, length) in enumerate(items):
        fqn = "model.layers.%d.weight" % i
        chunk = ChunkStorageMetadata(Size((0, 0)), Size((length // 4, 1)))
        state_dict_metadata[fqn] = TensorStorageMetadata(TensorProperties(), Size((length // 4, 1)), [chunk])
        storage_data[MetadataIndex(fqn, Size((0, 0)), 0)] = _StorageInfo(name, offset, length)
    if extra_bytes_entry and items:
        state_dict_metadata["rng"] = BytesStorageMetadata()
        storage_data[MetadataIndex("rng", None, None)] = _StorageInfo(items[0][0], 0, 16)
    meta = Metadata(state_dict_metadata, None, storage_data, StorageMeta("/ckpt", "save-1", None, []), "1.0.0")
    with _fake_torch():
        return pickle.dumps(meta, protocol=protocol)


def shard_items(shards, items_per_shard=3, item_len=16):
    """[(name, offset, length)] packing ``items_per_shard`` items back to back into each shard."""
    out = []
    for name in shards:
        for k in range(items_per_shard):
            out.append((name, k * item_len, item_len))
    return out


def shard_size(items, name):
    """The size torch would have written for ``name``: the end of its last item."""
    return max(off + ln for n, off, ln in items if n == name)
