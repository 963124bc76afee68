# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make the backup of one hostPath step: copy it to the backup store, hashing while copying, resumable.

Each file is read once: the bytes go to the store and through sha256 on the way. Files are written under
the step's own name only (``<backup root>/global_step_N/...``), each atomically; nothing else in the
backup location is read, replaced or deleted. A per-step progress manifest
(``<backup root>/rlark-backup/global_step_N.json``, written atomically after every batch) lists the files
already copied with their size, sha256 and the original's mtime: a run after an interruption copies only
what is not listed there (or changed since), and says so in one progress line per batch.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError

SCHEMA = "rlark.ops/backup-progress/v1"
BATCH_BYTES = 256 * 1024 * 1024  # a progress write at least every this many bytes, whatever batch_files says


def _gib(n):
    return "%.2f GiB" % (n / 1024.0**3) if n >= 1024**3 else "%.1f MiB" % (n / 1024.0**2)


def _fresh(step_name, origin):
    return {"schema": SCHEMA, "step_dir": step_name, "source": origin, "complete": False, "files": {}}


def already_copied(entry, size, mtime, present):
    """Whether a progress entry still describes the original file and the copy in the store."""
    return bool(entry) and entry.get("size") == size and entry.get("source_mtime") == mtime and present == size


def default_workers(store):
    """Files copied at once: each is read and hashed in its own thread (hashlib and the I/O release the GIL)."""
    return max(1, min(4, os.cpu_count() or 1))


class _Batches:
    """Progress-manifest writes and progress lines, one per batch of finished files."""

    def __init__(self, store, step_name, state, todo, total, skipped, batch_files, progress):
        self.store, self.step_name, self.state = store, step_name, state
        self.count, self.total, self.skipped = len(todo), total, skipped
        self.batch_files, self.progress = batch_files, progress
        self.done = self.copied_bytes = self.pending = self.pending_bytes = 0

    def finished(self, rel, size, mtime, digest):
        self.state["files"][rel] = {"size": size, "sha256": digest, "source_mtime": mtime,
                                    "copied_at": round(time.time(), 3)}  # fmt: skip
        self.done += 1
        self.copied_bytes += size
        self.pending += 1
        self.pending_bytes += size
        if self.pending >= self.batch_files or self.pending_bytes >= BATCH_BYTES or self.done == self.count:
            self.flush()

    def flush(self):
        self.store.write_progress(self.step_name, self.state)
        if self.pending and self.progress:
            self.progress(
                "backup of %s to %s: %d/%d files, %s of %s copied%s"
                % (self.step_name, self.store.location(self.step_name), self.done, self.count,
                   _gib(self.copied_bytes), _gib(self.total),
                   " (%d already there)" % self.skipped if self.skipped else "")
            )  # fmt: skip
        self.pending = self.pending_bytes = 0


def _copy_all(original, store, step_name, listing, todo, batches, workers):
    """Copy ``todo`` with ``workers`` threads, recording each finished file; raise GateError on the first failure
    once every copy already running has ended (and been recorded when it finished)."""
    from concurrent.futures import CancelledError, ThreadPoolExecutor  # only when copying: the gate stays light

    def copy_one(rel):
        with original.open(step_name, rel) as fh:
            return store.put(step_name, rel, fh)

    failure = None
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [(rel, pool.submit(copy_one, rel)) for rel in todo]
        for rel, future in futures:
            try:
                digest, count = future.result()
            except (OSError, GateError) as exc:
                if failure is None:
                    failure = (rel, getattr(exc, "strerror", None) or exc)
                    for _rel, later in futures:
                        later.cancel()
                continue
            except CancelledError:  # after a failure; anything unexpected propagates, the step never marked complete
                continue
            size, mtime = listing[rel]
            if count != size:
                failure = failure or (rel, "it changed while it was copied (%d bytes read, %d listed)" % (count, size))
                continue
            batches.finished(rel, size, mtime, digest)
    if failure is not None:
        batches.flush()
        raise GateError(
            "backup of %s stopped at %s (%d of %d files copied, %d were already there): %s. What was copied is "
            "recorded in %s/rlark-backup/%s.json: run again to continue"
            % (step_name, failure[0], batches.done, batches.count, batches.skipped, failure[1], store.location(),
               step_name)
        )  # fmt: skip


def make(original, store, step_name, listing, batch_files=16, check_mode=False, progress=None, workers=None):
    """Copy the files of ``listing`` ({rel: (size, mtime)} of the original) that the backup lacks.

    Returns ``{status, copied, skipped, bytes_copied, seconds, hashes}``; ``hashes`` is {rel: sha256} of
    every file of the step as copied now or recorded by an earlier run. Raises GateError when the copy fails
    (what was copied so far stays recorded, so the next run continues).
    """
    start = time.time()
    state = store.read_progress(step_name)
    if not isinstance(state, dict) or state.get("step_dir") != step_name or not isinstance(state.get("files"), dict):
        state = _fresh(step_name, original.location(step_name))
    done = state["files"]
    present = store.list(step_name)
    todo = [
        rel
        for rel in sorted(listing)
        if not already_copied(done.get(rel), listing[rel][0], listing[rel][1], present.get(rel, (None,))[0])
    ]
    report = {
        "status": "would-make" if check_mode else "made",
        "copied": len(todo),
        "skipped": len(listing) - len(todo),
    }
    if check_mode:
        report.update(bytes_copied=0, seconds=0.0, hashes={})
        return report
    state["complete"] = False
    total = sum(listing[rel][0] for rel in todo)
    batches = _Batches(store, step_name, state, todo, total, report["skipped"], batch_files, progress)
    _copy_all(original, store, step_name, listing, todo, batches, workers or default_workers(store))
    state.update(complete=True, completed_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    store.write_progress(step_name, state)
    report.update(
        bytes_copied=batches.copied_bytes,
        seconds=round(time.time() - start, 3),
        hashes={rel: entry.get("sha256") for rel, entry in done.items() if rel in listing},
    )
    return report
