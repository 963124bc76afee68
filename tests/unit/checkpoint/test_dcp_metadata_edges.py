# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dcp_metadata's edges (issue 26): what the restricted reader accepts, refuses, and how it says why.

The pickles are written by ``dcp_format`` (torch's classes stood in, not the collection's reader) or by hand
where a test needs one opcode; each refusal asserts its exception class and message.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gc
import os
import pickle
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dcp_format as DF
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_metadata as D


def _dumps(obj, protocol=pickle.DEFAULT_PROTOCOL):
    with DF._fake_torch():
        return pickle.dumps(obj, protocol=protocol)


def _meta(storage_data):
    return DF.Metadata({}, None, storage_data, None, "1.0.0")


def _index(i):
    return DF.MetadataIndex("w%d" % i, None, None)


def test_the_limit_is_the_512_mib_the_docs_name():
    assert D.METADATA_LIMIT == 512 * 1024 * 1024


def test_an_empty_item_still_names_its_shard():
    """offset 0, length 0: the shard must exist, of any size."""
    data = _dumps(_meta({_index(0): DF._StorageInfo("__0_0.distcp", 0, 0)}))
    assert D.parse(data).needs == {"__0_0.distcp": 0}


def test_a_later_smaller_item_keeps_the_larger_end():
    items = {_index(0): DF._StorageInfo("a", 10, 90), _index(1): DF._StorageInfo("a", 0, 20)}
    assert D.parse(_dumps(_meta(items))).needs == {"a": 100}


def test_an_item_ending_before_the_file_starts_names_no_shard():
    """A negative end (a hostile or broken file) is below the -1 start: nothing is promised, so no commit."""
    data = _dumps(_meta({_index(0): DF._StorageInfo("a", 0, -1)}))
    with pytest.raises(D.InvalidMetadata, match=r"^its storage_data names no shard file$"):
        D.parse(data)


def test_an_item_ending_at_minus_one_is_no_promise_either():
    data = _dumps(_meta({_index(0): DF._StorageInfo("a", 0, -2), _index(1): DF._StorageInfo("b", 0, 3)}))
    assert D.parse(data).needs == {"b": 3}


@pytest.mark.parametrize(
    "info",
    [DF._StorageInfo("a", 0, 1.5), DF._StorageInfo(b"a", 0, 2), DF._StorageInfo("a", "0", 2)],
    ids=["float-length", "bytes-path", "str-offset"],
)
def test_fields_of_another_type_are_an_unknown_format(info):
    with pytest.raises(D.UnknownFormat, match=r"^storage_data entries are not \(relative_path, offset, length\)$"):
        D.parse(_dumps(_meta({_index(0): info})))


def test_an_entry_without_the_fields_is_an_unknown_format():
    with pytest.raises(D.UnknownFormat, match=r"^storage_data entries are not \(relative_path, offset, length\)$"):
        D.parse(_dumps(_meta({_index(0): DF.StorageMeta("x", "y", None, [])})))


def test_a_metadata_without_storage_data_is_an_older_layout():
    with pytest.raises(D.UnknownFormat, match=r"^Metadata without a storage_data mapping \(an older torch layout\)$"):
        D.parse(_dumps(_meta([("a", 0, 1)])))


@pytest.mark.parametrize(
    "top,name",
    [
        (DF.StorageMeta("x", "y", None, []), DF.META + ".StorageMeta"),  # sorts after Metadata
        (DF._StorageInfo("a", 0, 1), DF.FS + "._StorageInfo"),  # sorts before it
    ],
)
def test_a_pickle_of_another_allowed_class_is_not_a_metadata(top, name):
    with pytest.raises(D.UnknownFormat) as err:
        D.parse(_dumps(top))
    assert str(err.value) == "the pickle holds %s, not a torch DCP Metadata" % name


def test_a_pickle_of_plain_data_is_not_a_metadata():
    with pytest.raises(D.UnknownFormat, match=r"^the pickle holds dict, not a torch DCP Metadata$"):
        D.parse(pickle.dumps({"storage_data": {}}))


def test_the_items_count_every_storage_entry():
    items = {_index(i): DF._StorageInfo("a", 0, 1) for i in range(3)}
    manifest = D.parse(_dumps(_meta(items)))
    assert manifest.items == 3 and manifest.needs == {"a": 1}


@pytest.mark.parametrize(
    "module,name",
    [
        ("copyreg", "__newobj__"),
        ("copyreg", "add_extension"),  # sorts after _reconstructor
        ("torch.serialization", "_load"),
        ("os", "getcwd"),
        ("A", "list"),  # sorts before __builtin__
        ("os", "_get_layout"),
        ("zipimport", "_get_layout"),  # a module sorting after torch.serialization
        ("torch.serialization", "_default_restore_location"),  # a name sorting before _get_layout
        ("zipimport", "zipimporter"),  # sorts after torch, a lower-case name
    ],
)
def test_callables_beside_the_allowed_ones_are_refused(module, name):
    data = b"\x80\x02c%s\n%s\nq\x00." % (module.encode(), name.encode())
    with pytest.raises(D.UnknownFormat) as err:
        D.parse(data)
    assert str(err.value) == "the pickle names %s.%s, which is not a torch DCP metadata class" % (module, name)


@pytest.mark.parametrize("module", ["copyreg", "copy_reg"])
def test_the_protocol_0_reconstructor_makes_only_stand_ins(module):
    """copyreg._reconstructor(object, object, None) would build a plain object: refused by name."""
    data = b"c%s\n_reconstructor\n(c__builtin__\nobject\nc__builtin__\nobject\nNtR." % module.encode()
    with pytest.raises(D.UnknownFormat, match=r"^copyreg\._reconstructor of a class outside the allow-list$"):
        D.parse(data)


def test_the_reconstructor_refuses_what_is_no_class():
    data = b"ccopyreg\n_reconstructor\n(I1\nc__builtin__\nobject\nNtR."
    with pytest.raises(D.UnknownFormat, match=r"^copyreg\._reconstructor of a class outside the allow-list$"):
        D.parse(data)


def test_a_persistent_id_is_a_torch_save_archive():
    with pytest.raises(D.UnknownFormat) as err:
        D.parse(b"\x80\x02X\x01\x00\x00\x00aQ.")
    assert str(err.value) == "the pickle uses persistent ids (a torch.save archive, not a DCP .metadata)"


def test_torch_names_must_look_like_torch_constants():
    with pytest.raises(D.UnknownFormat, match=r"^the pickle names torch\.Float32, which is not"):
        D.parse(b"\x80\x02ctorch\nFloat32\nq\x00.")


def test_a_truncated_protocol_2_pickle_says_how_long_it_is():
    data = DF.metadata_bytes([("__0_0.distcp", 0, 16)])[:-1]
    with pytest.raises(D.InvalidMetadata) as err:
        D.parse(data)
    assert str(err.value) == "the pickle is truncated (%d bytes, no end marker)" % len(data)


@pytest.mark.parametrize("end", [b".", b""])
@pytest.mark.parametrize("first", [b"\x81", b"\xff", b"("])
def test_bytes_that_do_not_load_and_do_not_start_as_a_pickle_are_an_unknown_format(first, end):
    with pytest.raises(D.UnknownFormat, match=r"^not a pickle \("):
        D.parse(first + b"garbage" + end)


def test_bytes_that_are_no_pickle_and_end_without_stop_are_an_unknown_format():
    with pytest.raises(D.UnknownFormat, match=r"^not a pickle \("):
        D.parse(b"RLARKSIM-DCP\x00binary")


class _Raises:
    def __init__(self, exc):
        self.exc = exc

    def __call__(self, _stream):
        return self

    def load(self):
        raise self.exc


@pytest.mark.parametrize("cls", [EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, IndexError])
def test_a_pickle_that_does_not_load_is_invalid_and_keeps_80_characters(monkeypatch, cls):
    monkeypatch.setattr(D, "RestrictedUnpickler", _Raises(cls("x" * 79 + "yz")))
    with pytest.raises(D.InvalidMetadata) as err:
        D.parse(b"\x80\x02.")
    assert str(err.value) == "the pickle does not load (%s)" % ("x" * 79 + "y")


def test_a_key_error_is_invalid_too(monkeypatch):
    monkeypatch.setattr(D, "RestrictedUnpickler", _Raises(KeyError()))
    with pytest.raises(D.InvalidMetadata, match=r"^the pickle does not load \(KeyError\)$"):
        D.parse(b"\x80\x02.")


def test_bytes_that_do_not_load_and_are_no_pickle_keep_60_characters(monkeypatch):
    monkeypatch.setattr(D, "RestrictedUnpickler", _Raises(ValueError("x" * 59 + "yz")))
    with pytest.raises(D.UnknownFormat) as err:
        D.parse(b"(.")
    assert str(err.value) == "not a pickle (%s)" % ("x" * 59 + "y")
    monkeypatch.setattr(D, "RestrictedUnpickler", _Raises(EOFError()))
    with pytest.raises(D.UnknownFormat, match=r"^not a pickle \(EOFError\)$"):
        D.parse(b"(.")


def test_other_errors_are_not_swallowed(monkeypatch):
    monkeypatch.setattr(D, "RestrictedUnpickler", _Raises(RuntimeError("boom")))
    with pytest.raises(RuntimeError):
        D.parse(b"\x80\x02.")


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_it_was(enabled):
    data = DF.metadata_bytes([("__0_0.distcp", 0, 16)])
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        D.parse(data)
        assert gc.isenabled() is enabled
        with pytest.raises(D.InvalidMetadata):
            D.parse(DF.metadata_bytes([]))
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_stand_ins_keep_their_fields_and_nothing_runs():
    stub = D._ALLOWED[(D.DCP_MODULE, "Metadata")]("a", b=1)
    assert stub._args == ("a",) and stub.b == 1 and stub._name == D.DCP_MODULE + ".Metadata"
    assert D._ALLOWED[(D.FS_MODULE, "_StorageInfo")]._name == D.FS_MODULE + "._StorageInfo"
    assert D._ALLOWED[(D.OLD_PROPS_MODULE, "TensorProperties")]._name == D.OLD_PROPS_MODULE + ".TensorProperties"
