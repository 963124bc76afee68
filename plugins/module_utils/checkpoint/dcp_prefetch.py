# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read DCP ``.metadata`` files in a forked child while the gate does other work.

Unpickling a large ``.metadata`` holds the interpreter for as long as stat-ing the thousands of
shards beside it; a thread cannot overlap the two, a child process on another core can. A reader
starts at one of two moments:

- the head start (:meth:`Prefetch.start_step`): before a step is walked, a child opens the markers
  RLinf's layouts can put in it (:data:`MARKER_DIRS`), so it unpickles while the step is listed,
  stat-ed and judged;
- the walk: a directory listing shows a ``.metadata`` that no head start covers.

The child answers, per file, ``(OK, {shard: minimum size}, size)`` or ``(INVALID, reason, size)``
together with the (inode, size, mtime) of the bytes it read, sent back with ``marshal``. The payload
check takes an answer only when that identity is what the walk stat-ed. Any trouble (no ``fork``,
other threads running, the child failing, a file replaced in between) gives ``None`` and the caller
reads and parses the file itself, so the verdict never depends on the child.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import marshal
import os
import signal
import threading

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_metadata as D

OK = "ok"
INVALID = "invalid"
DCP_MARKER = ".metadata"

# Every directory RLinf's layouts put a DCP commit marker in (layouts.py: ``_dcp`` under an FSDP model
# component, ``megatron_component`` in torch_dist iteration directories); a test keeps the two in step.
MARKER_DIRS = (
    "actor/dcp_checkpoint",
    "critic/dcp_checkpoint",
    "actor/actor_policy/dcp_checkpoint",
    "actor/critic/dcp_checkpoint",
    "actor/value/dcp_checkpoint",
    "actor/sac_components/alpha/dcp_checkpoint",
)
ITER_COMPONENTS = ("actor", "critic")


def marker_candidates(step):
    """Paths (relative to ``global_step_<step>``) of the DCP markers such a step may hold."""
    rels = [d + "/" + DCP_MARKER for d in MARKER_DIRS]
    if step is not None:
        rels.extend("%s/iter_%07d/%s" % (comp, step, DCP_MARKER) for comp in ITER_COMPONENTS)
    return rels


def identity(st):
    """What tells two versions of a file apart: (inode, size, mtime in ns)."""
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def read_marker(path):
    """(answer, identity of the bytes read) for the marker at ``path``; None when the caller must look itself."""
    try:
        with open(path, "rb") as fh:
            before = identity(os.fstat(fh.fileno()))
            data = fh.read(D.METADATA_LIMIT + 1)
            after = identity(os.fstat(fh.fileno()))
    except OSError:
        return None  # absent, or the payload check reads it again and reports why it cannot
    if before != after or len(data) != after[1] or len(data) > D.METADATA_LIMIT:
        return None  # written to while read, or over the limit: the payload check decides with its own read
    try:
        return (OK, D.parse(data).needs, len(data)), after
    except D.InvalidMetadata as exc:
        return (INVALID, str(exc), len(data)), after
    except D.UnknownFormat:
        return None  # the fallback salvages shard names from the bytes: it needs them itself


def _well_formed(got):
    return (
        isinstance(got, tuple)
        and len(got) == 2
        and isinstance(got[0], tuple)
        and len(got[0]) == 3
        and got[0][0] in (OK, INVALID)
        and isinstance(got[1], tuple)
        and len(got[1]) == 3
    )


class Prefetch:
    """One forked reader of one or more ``.metadata`` files; :meth:`result` waits for it, :meth:`close` discards it."""

    def __init__(self, pid, fd, paths):
        self.pid = pid
        self.fd = fd
        self.paths = frozenset(paths)
        self.step_path = None  # the step directory a head start reads ahead for
        self.done = False  # the answers are in (or will never come)
        self.reaped = False
        self.answers = {}  # path -> (answer, identity), for the files the child could read

    @classmethod
    def start_step(cls, step_path, step):
        """The head start of step directory ``step_path`` (step number ``step``, or None), or None."""
        pending = cls.start(*(step_path + "/" + rel for rel in marker_candidates(step)))
        if pending is not None:
            pending.step_path = step_path
        return pending

    @classmethod
    def start(cls, *paths):
        """A running reader of ``paths``, or None where forking is not safe or possible."""
        if not hasattr(os, "fork") or threading.active_count() > 1:
            return None  # a fork of a threaded process may copy a lock another thread holds
        try:
            read_fd, write_fd = os.pipe()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            return None
        if pid == 0:  # pragma: no cover - the child reports only through the pipe
            try:
                os.close(read_fd)
                answers = {}
                for path in paths:
                    got = read_marker(path)
                    if got is not None:
                        answers[path] = got
                payload = marshal.dumps(answers)
                while payload:
                    payload = payload[os.write(write_fd, payload) :]
                os.close(write_fd)  # the end of the answer now, not after the exit of a process this large
            finally:
                os._exit(0)  # never back into the parent's code, no atexit handlers, no buffered output
        os.close(write_fd)
        return cls(pid, read_fd, paths)

    def result(self, path, seen):
        """The child's answer for ``path`` (see :func:`read_marker`) if it read the version ``seen``, else None."""
        if not self.done:
            self._collect()
        got = self.answers.get(path)
        if got is None or got[1] != tuple(seen):
            return None
        return got[0]

    def close(self):
        """Stop a child whose answers nobody asked for (the step failed on its structure first), and reap it."""
        if not self.done:
            self._finish()
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
        self._reap(block=True)

    def _collect(self):
        chunks = []
        try:
            while True:
                chunk = os.read(self.fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:
            chunks = []
        self._finish()
        self._reap(block=False)  # a child with a large heap takes a while to exit: close() waits for the rest
        try:
            answers = marshal.loads(b"".join(chunks)) if chunks else {}
        except (EOFError, ValueError, TypeError):
            answers = {}
        if isinstance(answers, dict):
            self.answers = {path: got for path, got in answers.items() if path in self.paths and _well_formed(got)}

    def _finish(self):
        self.done = True
        os.close(self.fd)

    def _reap(self, block):
        if self.reaped:
            return
        try:
            pid, _status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            pid = self.pid  # reaped elsewhere
        self.reaped = pid == self.pid


class Claim:
    """A marker the walk found and a reader covers, with the identity the walk stat-ed."""

    __slots__ = ("path", "reader", "seen")

    def __init__(self, reader, path, seen):
        self.reader = reader
        self.path = path
        self.seen = seen

    def result(self):
        return self.reader.result(self.path, self.seen)

    def close(self):
        self.reader.close()


def close_all(prefetches):
    for pending in prefetches.values():
        pending.close()
