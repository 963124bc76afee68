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


def make(original, store, step_name, listing, batch_files=16, check_mode=False, progress=None):
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
    total = sum(listing[rel][0] for rel in todo)
    copied_bytes = pending_bytes = pending = 0
    state["complete"] = False
    for index, rel in enumerate(todo, 1):
        size, mtime = listing[rel]
        try:
            with original.open(step_name, rel) as fh:
                digest, count = store.put(step_name, rel, fh)
        except (OSError, GateError) as exc:
            store.write_progress(step_name, state)
            raise GateError(
                "backup of %s stopped at %s (%d of %d files copied, %d were already there): %s. What was copied is "
                "recorded in %s/rlark-backup/%s.json: run again to continue"
                % (step_name, rel, index - 1, len(todo), report["skipped"], getattr(exc, "strerror", None) or exc,
                   store.location(), step_name)
            ) from None  # fmt: skip
        if count != size:
            store.write_progress(step_name, state)
            raise GateError(
                "%s/%s changed while it was copied (%d bytes read, %d listed): the step is being written; do not "
                "stop the Job now" % (step_name, rel, count, size)
            )
        done[rel] = {"size": size, "sha256": digest, "source_mtime": mtime, "copied_at": round(time.time(), 3)}
        copied_bytes += size
        pending += 1
        pending_bytes += size
        if pending >= batch_files or pending_bytes >= BATCH_BYTES or index == len(todo):
            store.write_progress(step_name, state)
            pending = pending_bytes = 0
            if progress:
                progress(
                    "backup of %s to %s: %d/%d files, %s of %s copied%s"
                    % (step_name, store.location(step_name), index, len(todo), _gib(copied_bytes), _gib(total),
                       " (%d already there)" % report["skipped"] if report["skipped"] else "")
                )  # fmt: skip
    state.update(complete=True, completed_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    store.write_progress(step_name, state)
    report.update(
        bytes_copied=copied_bytes,
        seconds=round(time.time() - start, 3),
        hashes={rel: entry.get("sha256") for rel, entry in done.items() if rel in listing},
    )
    return report
