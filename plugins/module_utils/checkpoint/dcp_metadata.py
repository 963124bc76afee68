# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a torch DCP ``.metadata`` without torch: which shard files, and how many bytes of each.

torch's ``FileSystemWriter`` pickles a ``torch.distributed.checkpoint.metadata.Metadata`` whose
``storage_data`` maps every ``MetadataIndex`` to a ``_StorageInfo(relative_path, offset, length)``
(``torch.distributed.checkpoint.filesystem``). A shard shorter than the largest ``offset + length``
referenced in it is provably truncated.

The unpickler resolves only an allow-list of names, each to an inert stand-in (never the real
class, never a callable that does anything), so loading a hostile file cannot run code.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gc
import io
import operator
import pickle
import re

METADATA_LIMIT = 512 * 1024 * 1024  # larger files are not unpickled (presence rules only, with a warning)
DCP_MODULE = "torch.distributed.checkpoint.metadata"
FS_MODULE = "torch.distributed.checkpoint.filesystem"
OLD_PROPS_MODULE = "torch.distributed._shard.sharded_tensor.metadata"  # torch <= 2.2 kept TensorProperties here
TORCH_NAME = re.compile(r"^[a-z][a-z0-9_]*$")  # torch.float32, torch.strided, torch.contiguous_format
LAYOUT_NAME = re.compile(r"^torch\.[a-z][a-z0-9_]*$")  # the argument of torch.serialization._get_layout


class InvalidMetadata(Exception):
    """The file is not a whole DCP ``.metadata`` (empty, truncated pickle, or a Metadata naming no storage)."""


class UnknownFormat(Exception):
    """A pickle this reader does not know (another torch version or writer): fall back to presence rules."""


class _Stub:
    """Inert stand-in for an allow-listed class: keeps the pickled fields as attributes, nothing else."""

    _name = "?"

    def __init__(self, *args, **kwargs):
        self._args = args
        self.__dict__.update(kwargs)


class _Opaque(list, _Stub):
    """A class whose fields the gate never reads (one per tensor: its properties, chunks, sizes).

    Its state is kept as it comes, by a C-level ``list.append``: there are thousands of these in a
    large ``.metadata`` and a Python-level ``__setstate__`` per object was a quarter of the parse.
    """

    __setstate__ = list.append
    __hash__ = object.__hash__  # a MetadataIndex is a storage_data key


class _TorchName(str):
    """``torch.float32`` and friends: only their names matter here (a str is not callable)."""


def _stub(module, name, base=_Stub):
    return type(name, (base,), {"_name": "%s.%s" % (module, name), "__module__": __name__})


_ALLOWED = {}
for _n in ("Metadata", "StorageMeta"):
    _ALLOWED[(DCP_MODULE, _n)] = _stub(DCP_MODULE, _n)
for _n in ("MetadataIndex", "TensorStorageMetadata", "BytesStorageMetadata", "ChunkStorageMetadata"):
    _ALLOWED[(DCP_MODULE, _n)] = _stub(DCP_MODULE, _n, _Opaque)
_ALLOWED[(DCP_MODULE, "_MEM_FORMAT_ENCODING")] = _stub(DCP_MODULE, "_MEM_FORMAT_ENCODING")
for _module in (DCP_MODULE, OLD_PROPS_MODULE):
    _ALLOWED[(_module, "TensorProperties")] = _stub(_module, "TensorProperties", _Opaque)
_ALLOWED[(OLD_PROPS_MODULE, "MEM_FORMAT_ENCODING")] = _stub(OLD_PROPS_MODULE, "MEM_FORMAT_ENCODING")
for _n in ("_StorageInfo", "_StoragePrefix"):
    _ALLOWED[(FS_MODULE, _n)] = _stub(FS_MODULE, _n)
_ALLOWED[("torch", "Size")] = tuple  # torch.Size pickles as (torch.Size, (tuple,)); a tuple is all we need
for _module in ("pathlib",):
    for _n in ("PosixPath", "PurePosixPath", "WindowsPath", "PureWindowsPath"):
        _ALLOWED[(_module, _n)] = _stub(_module, _n)
_SAFE_BUILTINS = {
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "list"): list,
    ("builtins", "dict"): dict,
    ("builtins", "tuple"): tuple,
    ("builtins", "object"): object,  # only as copyreg._reconstructor's base
    ("collections", "OrderedDict"): dict,
}


def _get_layout(name):
    """torch >= 2.x pickles a layout as ``torch.serialization._get_layout("torch.strided")``: keep the name."""
    if not (isinstance(name, str) and LAYOUT_NAME.match(name)):
        raise UnknownFormat("torch.serialization._get_layout of %r, which is not a layout name" % (name,))
    return _TorchName(name)


def _reconstructor(cls, base, state):
    """Protocol 0/1 object creation (``copyreg._reconstructor``), limited to the stand-ins."""
    if not (isinstance(cls, type) and issubclass(cls, _Stub)):
        raise UnknownFormat("copyreg._reconstructor of a class outside the allow-list")
    return cls.__new__(cls)


class RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        module = "builtins" if module == "__builtin__" else module
        hit = _ALLOWED.get((module, name)) or _SAFE_BUILTINS.get((module, name))
        if hit is not None:
            return hit
        if module in ("copyreg", "copy_reg") and name == "_reconstructor":  # copy_reg: protocols 0-2
            return _reconstructor
        if module == "torch.serialization" and name == "_get_layout":
            return _get_layout
        if module == "torch" and TORCH_NAME.match(name):
            return _TorchName("torch." + name)
        raise UnknownFormat("the pickle names %s.%s, which is not a torch DCP metadata class" % (module, name))

    def persistent_load(self, pid):
        raise UnknownFormat("the pickle uses persistent ids (a torch.save archive, not a DCP .metadata)")


class DcpManifest:
    """What a ``.metadata`` promises: ``needs`` maps each shard file name to its minimum size."""

    def __init__(self, needs, items):
        self.needs = needs
        self.items = items


def parse(data):
    """``.metadata`` bytes -> :class:`DcpManifest`; raises :class:`InvalidMetadata` or :class:`UnknownFormat`."""
    if not data:
        raise InvalidMetadata("the file is empty")
    if data[:1] == b"\x80" and not data.endswith(b"."):
        # every pickle ends with the STOP opcode: one that does not was cut off while being written
        raise InvalidMetadata("the pickle is truncated (%d bytes, no end marker)" % len(data))
    gc_was_enabled = gc.isenabled()
    # tens of thousands of small acyclic objects, all dropped before the collector is back on: a
    # collection in between would only rescan them (a third of the parse)
    gc.disable()
    try:
        return _manifest(data)
    finally:
        if gc_was_enabled:
            gc.enable()


def _manifest(data):
    try:
        top = RestrictedUnpickler(io.BytesIO(data)).load()
    except UnknownFormat:
        raise
    except (EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
        if data[:1] == b"\x80":
            raise InvalidMetadata("the pickle does not load (%s)" % (str(exc)[:80] or type(exc).__name__)) from None
        raise UnknownFormat("not a pickle (%s)" % (str(exc)[:60] or type(exc).__name__)) from None
    if not (isinstance(top, _Stub) and top._name == DCP_MODULE + ".Metadata"):
        raise UnknownFormat("the pickle holds %s, not a torch DCP Metadata" % getattr(top, "_name", type(top).__name__))
    storage = getattr(top, "storage_data", None)
    if not isinstance(storage, dict):
        raise UnknownFormat("Metadata without a storage_data mapping (an older torch layout)")
    needs = _shard_ends(storage.values())
    if not needs:
        raise InvalidMetadata("its storage_data names no shard file")
    return DcpManifest(needs, len(storage))


_STORAGE_FIELDS = operator.attrgetter("relative_path", "offset", "length")


def _shard_ends(infos):
    """{relative_path: largest offset + length} over ``_StorageInfo`` stand-ins (C-level field reads)."""
    needs = {}
    get = needs.get
    try:
        for path, offset, length in map(_STORAGE_FIELDS, infos):
            end = offset + length
            if end > get(path, -1):
                needs[path] = end
    except (AttributeError, TypeError):  # not a _StorageInfo, or a field of another type
        raise UnknownFormat("storage_data entries are not (relative_path, offset, length)") from None
    if not (set(map(type, needs)) <= {str} and set(map(type, needs.values())) <= {int}):
        raise UnknownFormat("storage_data entries are not (relative_path, offset, length)")
    return needs
