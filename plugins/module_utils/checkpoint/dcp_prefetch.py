# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a DCP ``.metadata`` in a forked child while the walk of its step goes on.

Unpickling a large ``.metadata`` holds the interpreter for as long as stat-ing the thousands of
shards beside it; a thread cannot overlap the two, a child process on another core can. The walk
starts a :class:`Prefetch` as soon as a directory listing shows a ``.metadata``, then stats the
shards; the payload check takes the child's answer (a ``{shard: minimum size}`` map, sent back with
``marshal``). Any trouble (no ``fork``, other threads running, the child failing) gives ``None``
and the caller reads and parses the file itself, so the verdict never depends on the child.
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


def parsed_or_none(path):
    """(OK, needs, size) or (INVALID, reason, size) for the file at ``path``; None when the caller must look."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(D.METADATA_LIMIT + 1)
    except OSError:
        return None  # the payload check reads it again and reports why it cannot
    if len(data) > D.METADATA_LIMIT:
        return None
    try:
        return (OK, D.parse(data).needs, len(data))
    except D.InvalidMetadata as exc:
        return (INVALID, str(exc), len(data))
    except D.UnknownFormat:
        return None  # the fallback salvages shard names from the bytes: it needs them itself


class Prefetch:
    """One forked reader of one ``.metadata``; :meth:`result` waits for it, :meth:`close` discards it."""

    def __init__(self, pid, fd):
        self.pid = pid
        self.fd = fd
        self.done = False
        self.answer = None

    @classmethod
    def start(cls, path):
        """A running prefetch of ``path``, or None where forking is not safe or possible."""
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
                payload = marshal.dumps(parsed_or_none(path))
                while payload:
                    payload = payload[os.write(write_fd, payload) :]
            finally:
                os._exit(0)  # never back into the parent's code, no atexit handlers, no buffered output
        os.close(write_fd)
        return cls(pid, read_fd)

    def result(self):
        """The child's answer (see :func:`parsed_or_none`); None when it gave none."""
        if self.done:
            return self.answer
        chunks = []
        try:
            while True:
                chunk = os.read(self.fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:
            chunks = []
        self._reap(kill=False)
        try:
            answer = marshal.loads(b"".join(chunks)) if chunks else None
        except (EOFError, ValueError, TypeError):
            answer = None
        if not (isinstance(answer, tuple) and len(answer) == 3 and answer[0] in (OK, INVALID)):
            answer = None
        self.answer = answer
        return answer

    def close(self):
        """Stop a child whose answer nobody asked for (the step failed on its structure first)."""
        if not self.done:
            self._reap(kill=True)

    def _reap(self, kill):
        self.done = True
        os.close(self.fd)
        if kill:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def close_all(prefetches):
    for pending in prefetches.values():
        pending.close()
