# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checkpoints on the local file system (a node's hostPath): one scandir walk, standard library only.

The walk visits each ``global_step_*`` directory once with ``os.scandir`` on directory file
descriptors (so each ``stat`` is an ``fstatat`` relative to its directory, as ``find`` does) and
aggregates per step while it goes. Payload files are opened only when the gate asks for them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import itertools
import operator
import os
import stat
import time

from ansible_collections.rlark.ops.plugins.module_utils import step_names
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.dcp_prefetch import (
    DCP_MARKER,
    Claim,
    Prefetch,
    identity,
)
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.step_listing import (
    ITER_MARKERS,
    REPLAY_KEPT,
    StepFacts,
    keeps_all,
    shallow_facts,
)

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _describe_oserror(path, exc):
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied reading %s" % path
    if exc.errno == errno.ENOENT:
        return "%s does not exist" % path
    if exc.errno == errno.ENOTDIR:
        return "%s is not a directory" % path
    return "cannot read %s: %s" % (path, exc.strerror or exc)


class LocalSource:
    """A checkpoints root (``.../checkpoints``) or one ``global_step_N`` directory on this host."""

    kind = "local"

    def __init__(self, path):
        self.head = None  # a dcp_prefetch.Prefetch reading a step's markers ahead of its walk
        self.path = os.path.abspath(os.path.expanduser(path))
        try:
            st = os.stat(self.path)
        except OSError as exc:
            raise GateError("checkpoint path: " + _describe_oserror(self.path, exc)) from None
        if not stat.S_ISDIR(st.st_mode):
            raise GateError(
                "checkpoint path %s is a file, not a directory: pass the checkpoints root or a global_step_N directory"
                % self.path
            )
        if not os.access(self.path, os.R_OK | os.X_OK):
            raise GateError("checkpoint path: permission denied reading %s" % self.path)
        base = os.path.basename(self.path.rstrip("/"))
        self.single_step = base if step_names.is_step_like(base) else None
        self.root = os.path.dirname(self.path) if self.single_step else self.path
        self.others = []  # names in the root that are not global_step_* directories

    def describe(self):
        return self.path

    def location(self, step_name):
        return os.path.join(self.root, step_name)

    def step_names(self):
        if self.single_step:
            return [self.single_step]
        names = []
        self.others = []
        try:
            with os.scandir(self.root) as it:
                for entry in it:
                    if step_names.is_step_like(entry.name) and entry.is_dir():
                        names.append(entry.name)
                    else:
                        self.others.append(entry.name)
        except OSError as exc:
            raise GateError("checkpoint path: " + _describe_oserror(self.root, exc)) from None
        return names

    def scan(self):
        """Yield one :class:`StepFacts` per ``global_step_*`` directory, each walked exactly once."""
        for name in self.step_names():
            yield walk_step(self.location(name), name)

    def head_start(self, name):
        """Have a child read the DCP markers step ``name`` may hold while the gate does the rest (dcp_prefetch)."""
        path = self.location(name)
        if self.head is not None:
            if self.head.step_path == path:
                return
            self.head.close()
        self.head = Prefetch.start_step(path, step_names.step_number(name))

    def end_head_start(self):
        """Reap the head start's child: its answers were taken, or nobody needs them any more."""
        if self.head is not None:
            self.head.close()
            self.head = None

    def walk(self, name):
        """One step for the newest-first gate: its ``.metadata`` files are parsed in a child meanwhile."""
        path = self.location(name)
        head = self.head if self.head is not None and self.head.step_path == path else None
        return walk_step(path, name, prefetch=True, head=head)

    def probe(self, name):
        return shallow_facts(self, name)

    def list_dir(self, name, rel):
        """(file names, directory names) of one directory of a step; nothing when it cannot be read."""
        files, dirs = [], []
        try:
            with os.scandir(os.path.join(self.root, name, rel) if rel else self.location(name)) as it:
                for entry in it:
                    try:
                        (dirs if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
                    except OSError:
                        continue
        except OSError:
            pass  # the walk of a chosen step reports unreadable parts; a probe only looks for evidence
        return files, dirs

    def list_files(self, name):
        """[(relative path, size)] of every regular file of a step (for the integrity manifest)."""
        out = []
        stack = [""]
        base = self.location(name)
        while stack:
            rel = stack.pop()
            with os.scandir(os.path.join(base, rel) if rel else base) as it:
                for entry in it:
                    child = rel + "/" + entry.name if rel else entry.name
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(child)
                    elif entry.is_file(follow_symlinks=False):
                        out.append((child, entry.stat(follow_symlinks=False).st_size))
        return out

    def open_file(self, name, rel):
        return open(os.path.join(self.root, name, rel), "rb", buffering=0)

    def iter_dir_names(self, name, rel):
        """The format-deciding names of a Megatron iter directory: markers by stat, then the first shard/mp_rank."""
        path = os.path.join(self.root, name, rel)
        files = next(([m] for m in ITER_MARKERS if os.path.lexists(os.path.join(path, m))), [])  # one decides
        dirs = []
        if files:
            return files, dirs
        try:
            with os.scandir(path) as it:
                for entry in it:
                    if entry.name.startswith("mp_rank_"):
                        dirs.append(entry.name)
                        break
                    if entry.name.endswith(".distcp"):
                        files.append(entry.name)
                        break
        except OSError:
            pass
        return files, dirs

    def now(self):
        return time.time()

    def read_tail(self, step_name, rel, nbytes):
        path = os.path.join(self.root, step_name, rel)
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            fh.seek(max(0, size - nbytes))
            return fh.read(nbytes), size

    def read_all(self, step_name, rel, limit):
        path = os.path.join(self.root, step_name, rel)
        with open(path, "rb") as fh:
            return fh.read(limit)


_NAME = operator.attrgetter("name")
_SIZE = operator.attrgetter("st_size")
_MTIME = operator.attrgetter("st_mtime")
_IS_SHARD = operator.methodcaller("endswith", ".distcp")


def walk_step(step_path, name, prefetch=False, head=None):
    """One pass over a step directory: count every file, keep the interesting ones.

    With ``prefetch``, each DCP ``.metadata`` is claimed from ``head`` (the head start of this step)
    or, when that does not cover it, handed to a new forked reader as soon as its directory is listed,
    so that it is unpickled while the shards beside it are stat-ed (``facts.prefetched``).
    """
    facts = StepFacts(name)
    facts.index = {}
    facts.newest = float("-inf")  # any real time is newer, 1969 included
    stack = [""]
    while stack:
        rel = stack.pop()
        path = step_path + "/" + rel if rel else step_path
        try:
            # scandir on a descriptor makes DirEntry.stat an fstatat relative to it (no path walk)
            fd = os.open(path, _DIR_FLAGS)
        except OSError as exc:
            facts.errors.append(_describe_oserror(path, exc))
            continue
        try:
            with os.scandir(fd) as it:
                listing = list(it)
            if prefetch and DCP_MARKER in map(_NAME, listing):
                _claim_marker(facts, path, rel, listing, head)
            try:
                dirs, names, stats = _split(listing)
            except OSError:  # an entry vanished or cannot be read: go one by one to name it
                dirs, names, stats = _split_one_by_one(listing, path, facts.errors)
        except OSError as exc:
            facts.errors.append(_describe_oserror(path, exc))
            continue
        finally:
            os.close(fd)
        prefix = rel + "/" if rel else ""
        stack.extend(map(prefix.__add__, dirs))
        _count(facts, rel, prefix, dirs, names, stats)
    facts.dirs = set(facts.index)
    facts.dirs.discard("")
    if not facts.files:
        facts.newest = None
    return facts


def _claim_marker(facts, path, rel, listing, head):
    entry = next(e for e in listing if e.name == DCP_MARKER)
    try:
        seen = identity(entry.stat())  # cached: the walk's own stat of it, a moment later, reuses it
    except OSError:
        return  # the walk names what it cannot read
    marker = path + "/" + DCP_MARKER
    reader = head if head is not None and marker in head.paths else Prefetch.start(marker)
    if reader is not None:
        facts.prefetched[rel + "/" + DCP_MARKER if rel else DCP_MARKER] = Claim(reader, marker, seen)


def _split(listing):
    """(directory names, other names, their stats): the per-file work runs in C (``map``), not per entry here."""
    dirs, others = [], []
    for entry in listing:
        (dirs if entry.is_dir(follow_symlinks=False) else others).append(entry)
    return list(map(_NAME, dirs)), list(map(_NAME, others)), list(map(os.DirEntry.stat, others))


def _split_one_by_one(listing, path, errors):
    dirs, names, stats = [], [], []
    for entry in listing:
        try:
            if entry.is_dir(follow_symlinks=False):
                dirs.append(entry.name)
                continue
            st = entry.stat()
        except OSError as exc:
            errors.append(_describe_oserror(path + "/" + entry.name, exc))
            continue
        names.append(entry.name)
        stats.append(st)
    return dirs, names, stats


def _count(facts, rel, prefix, dirs, names, stats):
    """Add one directory's files to the step's totals and keep what the rules look at."""
    if not names:
        facts.index[rel] = set(dirs)
        return
    sizes = list(map(_SIZE, stats))
    mtimes = list(map(_MTIME, stats))
    facts.files += len(names)
    facts.bytes += sum(sizes)
    newest = max(mtimes)
    if newest > facts.newest:
        facts.newest = newest
    if keeps_all(prefix):
        kept = names
        facts.entries.update(zip(map(prefix.__add__, names), mtimes))
        shards = dict(itertools.compress(zip(names, sizes), map(_IS_SHARD, names)))
        if shards:
            facts.sizes[rel] = shards
    else:  # a replay buffer's rank directory: its trajectories are counted, not kept
        kept = [n for n in names if n.endswith(REPLAY_KEPT)]
        facts.entries.update((prefix + n, t) for n, t in zip(names, mtimes) if n.endswith(REPLAY_KEPT))
    if ".tmp\0" in "\0".join(kept) + "\0":  # one C-level search instead of a test per name
        facts.leftovers.extend(prefix + n for n in kept if n.endswith(".tmp"))
    # files of Megatron mp_rank_* directories are looked up by path only: no name index needed
    facts.index[rel] = set(dirs) if "/mp_rank_" in "/" + rel else set(dirs).union(kept)
