# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stop record as a write-ahead log: ``pending`` on disk before the patch, its outcome after it.

A guarded stop writes ``<records_dir>/<job>/<run id>/stop.yml`` with outcome ``pending`` (the verdict,
the step, the selection, who, and the logs exported so far) and makes it durable (file and directory
fsync) before it sends the stop patch. Afterwards the same record is replaced, atomically, by its
outcome: ``stopped``, ``stopped-unconfirmed`` (the patch was sent, then the API server or the records
filesystem failed), ``failed`` (the pods did not go in time) or ``refused`` (the patch was not applied).
A record left ``pending`` or ``stopped-unconfirmed`` is completed by the next guarded stop of the Job
(recovery.py). Exported logs are published as hard links of the export files, so a published
``log-<pod>.log`` is always a whole file and the last complete export survives any crash.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import os
import shutil
import tempfile

from ansible_collections.rlark.ops.plugins.module_utils.findings import finding
from ansible_collections.rlark.ops.plugins.module_utils.labels import STOPPED_BY_RUN
from ansible_collections.rlark.ops.plugins.module_utils.log_records import log_file_name
from ansible_collections.rlark.ops.plugins.module_utils.manifest import InputError, parse_text
from ansible_collections.rlark.ops.plugins.module_utils.records import (
    DEFAULT_MODE,
    _create_exclusive,
    _make_dirs,
    fsync_dir,
    record_dir,
    record_document,
    replace_record,
    write_index,
)

# The annotation the stop patch carries (labels.py): the run that stopped the Job.
ANNOTATION = STOPPED_BY_RUN
RECORD = "stop.yml"
PENDING = "pending"
STOPPED = "stopped"
UNCONFIRMED = "stopped-unconfirmed"
FAILED = "failed"
REFUSED = "refused"
# Records that a later guarded stop of the Job completes.
OPEN = (PENDING, UNCONFIRMED)
# Room a stop needs beyond its logs: the record itself, the index, the logs written while the pods go.
ROOM_MARGIN = 8 << 20
# A log source that cannot tell a log's size before reading it (kubeconfig, gateway): assumed per pod.
UNKNOWN_LOG_BYTES = 8 << 20
HINT = "set rlark_records_dir to a writable directory with room for the stop record and the exported logs"


def _existing(path):
    """``path`` or its nearest existing ancestor (the records directory may not exist yet)."""
    path = os.path.abspath(os.path.expanduser(path))
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _mib(size):
    return "%.1f MiB" % (size / float(1 << 20))


def records_problem(records_dir, expected_bytes=0, check_mode=False):
    """The finding that refuses a stop before its gate when the records location cannot take the record and
    the logs (``records-unwritable``, ``records-no-room``), else None. Leaves nothing behind."""
    where = _existing(records_dir)
    if not os.path.isdir(where):
        return finding(
            "records-unwritable",
            "rlark_records_dir %s cannot hold records: %s is not a directory" % (records_dir, where),
            path="rlark_records_dir",
            hint=HINT,
        )
    try:
        if check_mode:
            if not os.access(where, os.W_OK | os.X_OK):
                raise PermissionError("no write permission on %s" % where)
        else:
            handle, probe = tempfile.mkstemp(prefix=".rlark-probe-", dir=where)
            os.close(handle)
            os.unlink(probe)
        stats = os.statvfs(where)
    except OSError as exc:
        return finding(
            "records-unwritable",
            "rlark_records_dir %s is not writable (%s)" % (records_dir, exc.strerror or exc),
            path="rlark_records_dir",
            hint=HINT,
        )
    free = stats.f_bavail * stats.f_frsize
    need = int(expected_bytes) + ROOM_MARGIN
    if free < need:
        return finding(
            "records-no-room",
            "rlark_records_dir %s has %s free; the stop record and its logs need about %s (logs %s + %s margin)"
            % (records_dir, _mib(free), _mib(need), _mib(expected_bytes), _mib(ROOM_MARGIN)),
            path="rlark_records_dir",
            hint=HINT + ", or free space there",
        )
    return None


def read_record(path):
    """The header and data of a stop record (``{}`` when it cannot be read)."""
    try:
        with open(path) as handle:
            data = parse_text(handle.read(), path)
    except (OSError, ValueError, InputError):  # InputError: not YAML (a record cut off or edited by hand)
        return {}
    return data if isinstance(data, dict) else {}


class StopJournal:
    """The stop record of one run on one Job: ``begin`` (pending, durable), ``publish`` logs, ``finish``."""

    def __init__(self, records_dir, job, run_id, mode=DEFAULT_MODE, identity=None):
        self.records_dir = records_dir
        self.job = job
        self.run_id = run_id
        self.mode = mode
        self.identity = identity
        self.directory = record_dir(records_dir, job, run_id)
        self.path = os.path.join(self.directory, RECORD)
        self.logs = []

    def _text(self, outcome, data):
        return record_document("stop", data, self.job, self.run_id, outcome, self.identity)

    def begin(self, data, exports=()):
        """Write the pending record and the logs read so far; durable before this returns."""
        _make_dirs(self.directory, self.mode)
        fsync_dir(os.path.dirname(self.directory))
        _create_exclusive(self.directory, RECORD, self._text(PENDING, data), self.mode)
        self.publish(exports)
        with contextlib.suppress(OSError, ValueError):
            write_index(self.records_dir, self.job, self.mode)  # the index is rebuilt by every later write
        return self.path

    def _stage(self, exports):
        """Hard-link (or copy) each export (``{pod, path}``) into the record directory under a hidden name:
        ``[(staged, log-<pod>.log)]``. Nothing published is replaced yet, so nothing is freed yet."""
        staged = []
        try:
            for export in exports:
                name = log_file_name(export["pod"])
                handle, tmp = tempfile.mkstemp(prefix=".%s." % name, dir=self.directory)
                os.close(handle)
                staged.append((tmp, name))
                os.unlink(tmp)
                try:
                    os.link(export["path"], tmp)  # same file system (the exports live under rlark_records_dir)
                except OSError:
                    shutil.copyfile(export["path"], tmp)
                os.chmod(tmp, self.mode)
        except BaseException:
            self._drop(staged)
            raise
        return staged

    @staticmethod
    def _drop(staged):
        for tmp, _name in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def _commit(self, staged):
        """Each staged log replaces ``log-<pod>.log``: a published log is always a whole file."""
        for tmp, name in staged:
            os.replace(tmp, os.path.join(self.directory, name))
            # The same export published again (no new read after the stop) is a second link to the published
            # file: rename(2) of two links to one file does nothing and would leave the staged name behind.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if staged:
            fsync_dir(self.directory)
        self.logs = sorted(set(self.logs) | {name for _tmp, name in staged})
        return [name for _tmp, name in staged]

    def publish(self, exports):
        """Put each export (``{pod, path}``) in the record directory as ``log-<pod>.log``, whole or not at all."""
        return self._commit(self._stage(exports))

    def finish(self, outcome, data, exports=()):
        """Replace the record with its outcome (atomic, durable), then the logs. The record is written before any
        earlier log is replaced: on a full file system it fails for want of room instead of living on the room
        the replaced logs free."""
        staged = self._stage(exports)
        try:
            replace_record(self.path, self._text(outcome, data), self.mode)
        except BaseException:
            self._drop(staged)
            raise
        self._commit(staged)
        with contextlib.suppress(OSError, ValueError):
            write_index(self.records_dir, self.job, self.mode)
        return self.path


__all__ = [
    "ANNOTATION",
    "FAILED",
    "OPEN",
    "PENDING",
    "REFUSED",
    "STOPPED",
    "UNCONFIRMED",
    "StopJournal",
    "read_record",
    "records_problem",
]
