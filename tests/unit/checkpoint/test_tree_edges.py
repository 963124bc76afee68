# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""checkpoint/tree.py: a checkpoint tree as data, and what a diff of two of them says (issue 26)."""

import datetime
import hashlib
import os
import pathlib

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import tree as T
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError


def write(root, rel, data=b"x"):
    path = pathlib.Path(root, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


def test_local_tree_lists_files_with_size_mtime_and_hash_and_every_directory(tmp_path):
    root = str(tmp_path / "ckpt")
    big = os.urandom(T.CHUNK + 5)  # more than one read
    write(root, "global_step_2/actor/b.pt", big)
    write(root, "global_step_2/a.pt", b"")
    write(root, "top.txt", b"abc")
    os.makedirs(os.path.join(root, "global_step_2", "empty"))
    os.symlink("top.txt", os.path.join(root, "link"))
    tree = T.local_tree(root + "/", sha256=True)
    assert (tree["kind"], tree["root"], tree["exists"]) == ("local", root, True)
    assert tree["dirs"] == ["global_step_2", "global_step_2/actor", "global_step_2/empty"]
    assert list(tree["files"]) == ["link", "top.txt", "global_step_2/a.pt", "global_step_2/actor/b.pt"]
    st = os.lstat(os.path.join(root, "top.txt"))
    assert tree["files"]["top.txt"] == {
        "size": 3,
        "mtime_ns": st.st_mtime_ns,
        "sha256": hashlib.sha256(b"abc").hexdigest(),
    }
    assert tree["files"]["global_step_2/actor/b.pt"]["sha256"] == hashlib.sha256(big).hexdigest()
    assert tree["files"]["global_step_2/a.pt"]["sha256"] == hashlib.sha256(b"").hexdigest()
    assert "sha256" not in tree["files"]["link"]  # a link is recorded by its own size and mtime, never followed
    assert tree["files"]["link"]["size"] == len("top.txt")
    assert "sha256" not in T.local_tree(root)["files"]["top.txt"]


def test_a_root_that_is_a_file_is_refused_and_an_absent_one_is_empty(tmp_path):
    path = write(str(tmp_path), "file")
    with pytest.raises(GateError) as exc:
        T.local_tree(path)
    assert str(exc.value) == "%s is not a directory" % path
    assert T.local_tree(str(tmp_path / "none")) == {
        "kind": "local",
        "root": str(tmp_path / "none"),
        "exists": False,
        "files": {},
        "dirs": [],
    }


def test_an_unreadable_directory_is_refused(tmp_path, monkeypatch):
    root = str(tmp_path / "ckpt")
    write(root, "global_step_1/a.pt")

    def walk(top, onerror=None):
        onerror(PermissionError(13, "Permission denied", top + "/global_step_1"))
        return iter(())

    monkeypatch.setattr(T.os, "walk", walk)  # the walk's own error hook, as os.walk calls it
    with pytest.raises(GateError) as exc:
        T.local_tree(root)
    assert str(exc.value) == "cannot read %s/global_step_1: Permission denied" % root


class Source:
    """An S3Source as s3_tree reads it: a root, its URI and the pages of its listing."""

    root = "runs/e1/checkpoints/"

    def __init__(self, pages):
        self._pages = pages

    def uri(self, key):
        return "s3://bucket/" + key

    def pages(self, prefix):
        assert prefix == self.root
        return iter(self._pages)


def test_s3_tree_reads_every_page():
    when = datetime.datetime(2026, 12, 2, 10, 0, tzinfo=datetime.timezone.utc)
    pages = [
        {"Contents": [{"Key": Source.root + "global_step_1/a.pt", "Size": 3, "ETag": '"abc"', "LastModified": when}]},
        {},
        {"Contents": [{"Key": Source.root + "global_step_2/b.pt", "Size": 0, "LastModified": when}]},
    ]
    tree = T.s3_tree(Source(pages))
    assert tree == {
        "kind": "s3",
        "root": "s3://bucket/runs/e1/checkpoints/",
        "exists": True,
        "files": {
            "global_step_1/a.pt": {"size": 3, "etag": "abc", "last_modified": "2026-12-02T10:00:00+00:00"},
            "global_step_2/b.pt": {"size": 0, "etag": "", "last_modified": "2026-12-02T10:00:00+00:00"},
        },
        "dirs": [],
    }
    assert T.s3_tree(Source([{"Contents": []}]))["exists"] is False


def test_step_names_directly_below_the_root():
    tree = {
        "files": {"global_step_3/a.pt": {}, "global_step_1": {}, "x/global_step_9/a.pt": {}},
        "dirs": ["global_step_20", "global_step_20/actor", "other"],
    }
    assert T.step_names(tree) == ["global_step_1", "global_step_20", "global_step_3"]
    assert T.step_names({}) == []


def test_tree_diff_by_attribute_and_the_hash_only_when_both_have_it():
    a = {"files": {"f": {"size": 1, "mtime_ns": 5, "sha256": "x"}}, "dirs": ["d"]}
    assert T.tree_diff(a, a) == {"same": True, "changed": [], "vanished": [], "appeared": []}
    b = {"files": {"f": {"size": 1, "mtime_ns": 5, "sha256": "y"}}, "dirs": ["d"]}
    assert T.tree_diff(a, b)["changed"] == ["f"]
    c = {"files": {"f": {"size": 1, "mtime_ns": 5}}, "dirs": ["d"]}
    assert T.tree_diff(a, c)["same"] and T.tree_diff(c, a)["same"]
    d = {"files": {"f": {"size": 2, "mtime_ns": 5}}, "dirs": ["d"]}
    assert T.tree_diff(a, d) == {"same": False, "changed": ["f"], "vanished": [], "appeared": []}
    e = {"files": {"f": {"size": 1, "mtime_ns": 5, "sha256": "x"}, "g": {}}, "dirs": ["e"]}
    assert T.tree_diff(a, e) == {"same": False, "changed": [], "vanished": ["d"], "appeared": ["e", "g"]}
    assert T.tree_diff(e, a) == {"same": False, "changed": [], "vanished": ["e", "g"], "appeared": ["d"]}
    assert T.tree_diff({}, {})["same"]
    assert T.tree_diff({"files": {}, "dirs": ["d"]}, {}) == {
        "same": False,
        "changed": [],
        "vanished": ["d"],
        "appeared": [],
    }
    assert T.tree_diff({}, {"files": {"f": {}}}) == {"same": False, "changed": [], "vanished": [], "appeared": ["f"]}


def test_tree_summary_counts_files_bytes_and_steps():
    tree = {"root": "/r", "files": {"global_step_1/a": {"size": 3}, "global_step_2/b": {"size": None}, "c": {}}}
    assert T.tree_summary(tree) == {"root": "/r", "files": 3, "bytes": 3, "steps": ["global_step_1", "global_step_2"]}
    assert T.tree_summary({}) == {"root": None, "files": 0, "bytes": 0, "steps": []}


def test_tree_diff_compares_only_the_attributes_both_snapshots_recorded_and_either_way():
    a = {"files": {"f": {"size": 2, "mtime_ns": 5, "sha256": "x"}}}
    b = {"files": {"f": {"size": 2, "sha256": "x"}}}
    assert T.tree_diff(a, b)["same"] and T.tree_diff(b, a)["same"]
    c = {"files": {"f": {"size": 2, "mtime_ns": 5}}}
    d = {"files": {"f": {"size": 2, "etag": "e"}}}
    assert T.tree_diff(c, d)["same"] and T.tree_diff(d, c)["same"]
    smaller = {"files": {"f": {"size": 1, "mtime_ns": 5}}}
    assert T.tree_diff(c, smaller)["changed"] == ["f"] and T.tree_diff(smaller, c)["changed"] == ["f"]


def test_a_directory_whose_name_sorts_before_the_dot(tmp_path):
    root = str(tmp_path / "ckpt")
    write(root, "+run/a.pt")
    write(root, "-old/global_step_1/b.pt")
    tree = T.local_tree(root)
    assert sorted(tree["files"]) == ["+run/a.pt", "-old/global_step_1/b.pt"]
    assert tree["dirs"] == ["+run", "-old", "-old/global_step_1"]
