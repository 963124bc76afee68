# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A guarded stop of an already stopped Job: complete the record a crashed or cut-off stop left open.

The stop patch names its run in an annotation (journal.ANNOTATION). When that run's stop record under
``rlark_records_dir`` is still ``pending`` or ``stopped-unconfirmed``, this run waits (within its deadline)
until no Pod CR remains, exports what the log source still has (never replacing a fuller log the first
run published), and replaces the record with its outcome, saying what it recovered. A complete record,
or a Job stopped by someone else, is "already stopped".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import tempfile
import time

from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop import journal as wal
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop.outcomes import outcome
from ansible_collections.rlark.ops.plugins.module_utils.kube import KubeError
from ansible_collections.rlark.ops.plugins.module_utils.log_records import log_file_name
from ansible_collections.rlark.ops.plugins.module_utils.stop_logs import (
    LogTail,
    export_summary,
    utc_iso,
    wait_pods_gone,
)
from ansible_collections.rlark.ops.plugins.module_utils.waiter import Waiter, WaitTimeout


def stopped_by(job):
    """The guarded-stop run whose patch stopped ``job`` ('' when none of ours did)."""
    return ((job.get("metadata") or {}).get("annotations") or {}).get(wal.ANNOTATION) or ""


class Recovery:
    """``run()`` for a Job whose ``spec.stopped`` is already true (see the module doc)."""

    def __init__(self, stop):
        self.stop = stop  # the GuardedStop of this run: client, records, logs, deadline, progress
        self.run_id = stopped_by(stop.job)

    def _already(self, reason, record=""):
        return outcome(self.stop.name, "already stopped", reason, record=record, stopped_by=self.run_id)

    def run(self):
        if not self.run_id:
            return self._already("spec.stopped was already true; nothing to do")
        journal = wal.StopJournal(
            self.stop.records["dir"], self.stop.name, self.run_id, self.stop.records["mode"],
            self.stop.records["identity"],
        )  # fmt: skip
        record = wal.read_record(journal.path)
        if not record:
            return self._already(
                "stopped by guarded-stop run %s, whose stop record is not under rlark_records_dir %s"
                % (self.run_id, self.stop.records["dir"])
            )
        left = record.get("outcome")
        if left not in wal.OPEN:
            return self._already(
                "stopped by run %s; its stop record is complete (%s)" % (self.run_id, left), journal.path
            )
        if self.stop.check_mode:
            return outcome(
                self.stop.name, "would stop", "would complete the %s stop record of run %s" % (left, self.run_id)
            )
        export_dir = tempfile.mkdtemp(prefix=".rlark-stop-%s-" % self.stop.name, dir=self.stop.records["dir"])
        try:
            return self._complete(journal, record, LogTail(self.stop.read_logs(export_dir), export_dir, follow=True))
        finally:
            shutil.rmtree(export_dir, ignore_errors=True)

    def _complete(self, journal, record, tail):
        client = self.stop.client
        client.deadline = client.clock() + self.stop.deadline
        data = dict(record.get("data") or {})
        what, reason = wal.STOPPED, ""
        waiter = Waiter(
            self.stop.wait_timeout, interval=self.stop.interval, progress=self.stop.progress, **self.stop.clocks
        )
        try:
            wait_pods_gone(client, self.stop.name, tail, self.stop.head_pod, waiter, transient=KubeError)
            data["pods_gone_at"] = data.get("pods_gone_at") or utc_iso(time.time())
        except WaitTimeout as exc:
            what, reason = wal.FAILED, str(exc)
        except KubeError as exc:
            what, reason = wal.UNCONFIRMED, "the API server failed again (%s)" % exc
        tail.poll()
        exports = [e for e in self._exports(tail) if self._fuller(journal, e)]
        logs = export_summary({}, tail, self.stop.head_pod, self.stop.policy.accept_truncated_logs)
        data["recovery"] = {
            "by_run": self.stop.run_id,
            "at": utc_iso(time.time()),
            "left_as": record.get("outcome"),
            "left_because": data.get("reason"),
            "logs_exported_now": [e["pod"] for e in exports],
            "logs_kept_from_the_stop": sorted(set(journal_logs(journal)) - {log_file_name(e["pod"]) for e in exports}),
            "log_read_errors": logs["log_errors"],
        }
        if exports:
            kept = {e["pod"]: e for e in (data.get("logs") or {}).get("exports") or []}
            for fields in logs["log_exports"]:
                kept[fields["pod"]] = dict(
                    {k: v for k, v in fields.items() if k != "path"}, file=log_file_name(fields["pod"])
                )
            data["logs"] = dict(data.get("logs") or {}, exports=[kept[p] for p in sorted(kept)])
        data["outcome"] = what
        data["reason"] = reason or "completed by guarded-stop run %s: no Pod CR left" % self.stop.run_id
        try:
            journal.finish(what, data, exports)
        except (OSError, ValueError) as exc:
            return outcome(
                self.stop.name, wal.UNCONFIRMED,
                "could not complete the stop record of run %s (%s)" % (self.run_id, exc), record=journal.path,
            )  # fmt: skip
        if what != wal.STOPPED:
            return outcome(self.stop.name, what, reason, record=journal.path, stopped_by=self.run_id)
        return outcome(
            self.stop.name, "stopped",
            "recovered: completed the %s stop record of run %s" % (record.get("outcome"), self.run_id),
            {"step": data.get("global_step"), "checkpoint": (data.get("checkpoint") or {}).get("gate_checkpoint")},
            record=journal.path, stopped_by=self.run_id, recovered=True,
        )  # fmt: skip

    @staticmethod
    def _exports(tail):
        return [{"pod": pod, "path": e.path, "bytes": e.bytes} for pod, e in sorted(tail.exports.items())]

    @staticmethod
    def _fuller(journal, export):
        """Publish a log read now only when it holds at least what the stop itself published."""
        try:
            kept = os.path.getsize(os.path.join(journal.directory, log_file_name(export["pod"])))
        except OSError:
            return True
        return export["bytes"] >= kept


def journal_logs(journal):
    try:
        return [n for n in os.listdir(journal.directory) if n.startswith("log-") and n.endswith(".log")]
    except OSError:
        return []


__all__ = ["Recovery", "stopped_by"]
