# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The guarded stop of one Job as a crash-consistent transaction.

records checked → gate → verdict → logs read → ``pending`` record (durable) → stop patch carrying the run
id → logs tailed until no Pod CR remains → record replaced by its outcome. Whatever fails after the patch
(the API server, the records filesystem, the deadline), the Job is never reported ``refused``: the
outcome is ``stopped-unconfirmed`` or ``failed`` with what is known, and the next guarded stop of the Job
completes the record (recovery.py). Everything outside Python only wires this.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import os
import shutil
import tempfile
import time

from ansible_collections.rlark.ops.plugins.module_utils import stop_record
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup, integrity
from ansible_collections.rlark.ops.plugins.module_utils.findings import Refused, finding
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop import journal as wal
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop.outcomes import outcome
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop.policy import judge, markers_reason
from ansible_collections.rlark.ops.plugins.module_utils.guarded_stop.recovery import Recovery
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import LogSourceError
from ansible_collections.rlark.ops.plugins.module_utils.jobs import set_stopped, terminal_refusal
from ansible_collections.rlark.ops.plugins.module_utils.kube import KubeError
from ansible_collections.rlark.ops.plugins.module_utils.stop_logs import (
    HEAD_LOG_TAIL,
    LogTail,
    export_summary,
    truncation_finding,
    utc_iso,
    wait_pods_gone,
)
from ansible_collections.rlark.ops.plugins.module_utils.task_identity import duplicate_findings
from ansible_collections.rlark.ops.plugins.module_utils.waiter import Waiter, WaitTimeout

# A scheduler's run must end: the whole transaction (patch, pods gone, logs, record) within this by default.
DEFAULT_DEADLINE = 900
RERUN = "re-run the guarded stop of the Job to complete the record"


class Throttled:
    """The API client's retry lines as progress, at most one per ``every`` seconds: a stop waiting on a lost
    API server says so while it waits, within its deadline."""

    def __init__(self, progress, deadline, every=10.0, clock=time.monotonic):
        self.progress, self.deadline, self.every, self.clock, self.last = progress, deadline, every, clock, None

    def __call__(self, line):
        now = self.clock()
        if self.progress is not None and (self.last is None or now - self.last >= self.every):
            self.last = now
            self.progress("waiting for the API server (rlark_stop_deadline %d s): %s" % (self.deadline, line))


class GuardedStop:
    """One guarded stop. ``gate(wait) -> gate result`` runs the checkpoint gate where the data lives (``wait``:
    after_step, newest_complete, wait_timeout, wait_sleep, and integrity "off" to skip it); ``read_logs(dest_dir)``
    is the log source. ``run()`` returns the outcome for the summary, with ``gate`` and ``stop`` details."""

    def __init__(self, client, resource, run_id, policy, gate, read_logs, records, head_pod, **options):
        self.client = client
        self.resource = resource
        self.job = resource.get("job") or {}
        self.name = (self.job.get("metadata") or {}).get("name") or options.get("name")
        self.run_id = run_id
        self.policy = policy
        self.gate = gate
        self.read_logs = read_logs
        self.records = records  # {dir, mode, identity}
        self.head_pod = head_pod
        self.check_mode = bool(options.get("check_mode"))
        self.manifest = options.get("manifest") or {}
        self.location = options.get("location") or {}
        self.selection = options.get("selection") or {}
        self.identity = options.get("identity") or {}
        self.expected_log_bytes = int(options.get("expected_log_bytes") or 0)
        self.wait = options.get("wait", True)
        self.wait_timeout = float(options.get("wait_timeout", 600))
        self.interval = float(options.get("interval", 1.0))
        self.deadline = float(options.get("deadline") or DEFAULT_DEADLINE)
        self.progress = options.get("progress")
        self.clocks = {k: options[k] for k in ("clock", "sleep") if k in options}  # tests
        self.gate_result = {}
        self.verdict = {}
        self.stop = {"run_id": run_id, "annotation": {wal.ANNOTATION: run_id}}

    # -- what the summary and the record say -------------------------------------------------------
    def _username(self):
        return self.identity.get("username") or ""

    def _outcome(self, what, reason="", findings=None, record=""):
        return outcome(
            self.name, what, reason, self.verdict, record, self._username(), findings,
            gate=self.gate_result, stop=self.stop,
        )  # fmt: skip

    def refused(self, reason, findings=None):
        if self.check_mode:
            reason = "would refuse: %s" % reason
        return self._outcome("refused", reason, findings)

    def record_data(self, what, reason, tail=None):
        data = stop_record.build(self.resource, self.manifest, self.location, self.verdict.get("gate"))
        stop = dict(self.stop)
        if tail is not None:
            export_summary(stop, tail, self.head_pod, self.policy.accept_truncated_logs)
            head = tail.exports.get(self.head_pod)
            stop["head_log"] = head.tail(HEAD_LOG_TAIL) if head else ""
        fields = stop_record.outcome_fields(what, reason, self.identity, self.selection, stop, self.verdict.get("step"))
        data.update(fields)
        data["transaction"] = {
            k: self.stop.get(k)
            for k in ("run_id", "annotation", "verdict_at", "pending_at", "patched_at", "pods_gone_at", "deadline")
        }
        if self.gate_result.get("integrity"):
            data["integrity"] = integrity.summary(self.gate_result["integrity"])
        if self.gate_result.get("backup"):
            data["backup"] = backup.summary(self.gate_result["backup"])
        return data

    # -- the steps ---------------------------------------------------------------------------------
    def judge_checkpoint(self):
        """Run the gate as the policy says; the verdict on the checkpoint alone."""
        wait = self.policy.first_wait()
        self.gate_result = self.gate(wait)
        if self.policy.when == "next_checkpoint":
            if self.check_mode:
                latest = self.gate_result.get("latest_complete_step")
                self.verdict = judge(self.gate_result, dict(wait, newest_complete=False))
                self.verdict["waits_after"] = latest
                return self.verdict
            ran = judge(self.gate_result, dict(wait, newest_complete=False))
            if not ran["ok"] and self.gate_result.get("failed"):
                self.verdict = ran
                return ran
            wait = self.policy.next_wait(self.gate_result)
            self.gate_result = self.gate(wait)
        self.verdict = judge(self.gate_result, wait)
        self.stop["verdict_at"] = utc_iso(self.gate_result.get("judged_at") or time.time())
        return self.verdict

    def run(self):
        if not self.job:
            missing = finding("job-not-found", "Job %r does not exist, so it cannot stop." % self.name, path="name")
            return self.refused("Job %s does not exist." % self.name, [missing])
        if (self.job.get("spec") or {}).get("stopped"):
            return Recovery(self).run()
        terminal = terminal_refusal(self.job, "stop")
        if terminal:  # RLark ignores it: nothing to gate, record or patch
            return self.refused(terminal["message"], [terminal])
        problem = wal.records_problem(self.records["dir"], self.expected_log_bytes, self.check_mode)
        if problem:
            return self.refused(problem["message"], [problem])
        if self.check_mode:  # reads the gate only: no log export, nothing written
            verdict = self.judge_checkpoint()
            return (
                self._would_stop()
                if verdict["ok"]
                else self.refused(verdict["reason"], self.gate_result.get("findings"))
            )
        os.makedirs(self.records["dir"], exist_ok=True)
        export_dir = tempfile.mkdtemp(prefix=".rlark-stop-%s-" % self.name, dir=self.records["dir"])
        try:
            # The logs are read in full before the gate, so that after its verdict only what was written since
            # is read (files source): the time from the verdict to the patch does not grow with the log.
            tail = LogTail(self.read_logs(export_dir), export_dir, incremental=True, follow=True)
            refusal = self._read_logs(tail)
            if refusal:
                return refusal
            verdict = self.judge_checkpoint()
            if not verdict["ok"]:
                return self.refused(verdict["reason"], self.gate_result.get("findings"))
            return self._stop(tail)
        finally:
            shutil.rmtree(export_dir, ignore_errors=True)  # published logs are hard links: they stay

    def _read_logs(self, tail):
        """Read the logs (strict: logs that cannot be read refuse the stop, nothing half-done); a refusal or None."""
        try:
            tail.poll(strict=True)
        except LogSourceError as exc:
            return self.refused("Cannot read the logs of Job %s: %s" % (self.name, exc))
        except OSError as exc:
            found = self._records_finding(exc)
            return self.refused(found["message"], [found])
        return None

    def _would_stop(self):
        if self.policy.when == "next_checkpoint":
            after = self.verdict.get("waits_after")
            reason = "would wait for the next checkpoint after step %s, then stop" % (
                "none" if after is None else after
            )
        else:
            reason = "would stop at step %s" % self.verdict.get("step")
        return self._outcome("would stop", reason)

    def _stop(self, tail):
        refusal = self._read_logs(tail)
        if refusal:
            return refusal
        truncated = tail.truncated()
        self.stop.update(export_summary({}, tail, self.head_pod, self.policy.accept_truncated_logs))
        self.stop.pop("head_log", None)
        for export in self.stop["log_exports"]:
            export.pop("path", None)  # temporary files, gone when this call ends
        if truncated and not self.policy.accept_truncated_logs:
            found = truncation_finding(truncated, tail.exports[truncated[0]].source)
            return self.refused("Not stopped: %s (%s)." % (found["message"], found["hint"]), [found])
        duplicates = duplicate_findings(self.job, self.resource.get("tasks") or [])
        if duplicates:  # a stop may reach only one copy (rlark-platform.md): refused before anything is written
            return self.refused("Job %s has a Task in two clusters' namespaces" % self.name, duplicates)
        live = {"job": self.job, "tasks": self.resource.get("tasks"), "pods": self.resource.get("pods")}
        reason = markers_reason(self.policy.done_markers, tail.text(self.head_pod), live)
        if reason:
            return self.refused(reason)
        journal = wal.StopJournal(
            self.records["dir"], self.name, self.run_id, self.records["mode"], self.records["identity"]
        )
        self.stop["pending_at"] = utc_iso(time.time())
        self.stop["deadline"] = "%d s (rlark_stop_deadline)" % self.deadline
        try:
            journal.begin(self.record_data(wal.PENDING, "", tail), self._exports(tail))
        except (OSError, ValueError) as exc:
            self._discard(journal)
            found = self._records_finding(exc)
            return self.refused(found["message"], [found])
        return self._patch_and_finish(journal, tail)

    def _patch_and_finish(self, journal, tail):
        self.client.deadline = self.client.clock() + self.deadline  # one deadline from here to the record
        self.client.log = Throttled(self.progress, self.deadline, clock=self.clocks.get("clock", time.monotonic))
        try:
            sent = set_stopped(self.client, self.name, True, annotations={wal.ANNOTATION: self.run_id})
        except Refused as exc:  # nothing was patched: no stop record
            self._discard(journal)
            return self.refused(str(exc), exc.findings)
        except KubeError as exc:
            why = "the stop patch was sent and not confirmed (%s); %s" % (exc, RERUN)
            return self._finish(journal, tail, wal.UNCONFIRMED, why)
        self.stop["patched_at"] = utc_iso(time.time())
        ours = ((sent["job"].get("metadata") or {}).get("annotations") or {}).get(wal.ANNOTATION) == self.run_id
        if sent["action"] != "stopped" and not ours:
            self._discard(journal)
            return self._outcome(
                "already stopped", "stopped meanwhile by someone else (no %s annotation)" % self.run_id
            )
        what, reason = wal.STOPPED, ""
        if self.wait:
            what, reason = self._wait_gone(tail)
        return self._finish(journal, tail, what, reason)

    def _wait_gone(self, tail):
        budget = max(1.0, min(self.wait_timeout, self.client.deadline - self.client.clock()))
        waiter = Waiter(budget, interval=self.interval, progress=self.progress, **self.clocks)
        try:
            # The patch was accepted: an API error now is the server's trouble, not a verdict. Poll on.
            wait_pods_gone(self.client, self.name, tail, self.head_pod, waiter, transient=KubeError)
        except WaitTimeout as exc:
            return wal.FAILED, "%s The logs read until then are kept." % exc
        except KubeError as exc:
            return wal.UNCONFIRMED, "the Job was stopped; then the API server failed (%s); %s" % (exc, RERUN)
        except Refused as exc:  # a Task copy appeared after the patch: stopped, but not all of it
            return wal.FAILED, "%s %s" % (exc, "; ".join(f["message"] for f in exc.findings))
        finally:
            self.stop["wait_log"] = waiter.log
        self.stop["pods_gone_at"] = utc_iso(time.time())
        return wal.STOPPED, ""

    def _finish(self, journal, tail, what, reason):
        tail.poll()
        try:
            journal.finish(what, self.record_data(what, reason, tail), self._exports(tail))
        except (OSError, ValueError) as exc:
            what = wal.UNCONFIRMED
            reason = "%s; the stop record %s could not be completed (%s): %s" % (
                reason or "the Job was stopped",
                journal.path,
                getattr(exc, "strerror", None) or exc,
                RERUN,
            )
        return self._outcome(what, reason, record=journal.path)

    @staticmethod
    def _exports(tail):
        return [{"pod": pod, "path": export.path} for pod, export in sorted(tail.exports.items())]

    @staticmethod
    def _discard(journal):
        """A refusal before any patch leaves no record behind (nor the run directory it created)."""
        with contextlib.suppress(OSError):
            os.unlink(journal.path)
        for name in journal.logs:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(journal.directory, name))
        with contextlib.suppress(OSError):
            os.rmdir(journal.directory)

    def _records_finding(self, exc):
        return finding(
            "records-write-failed",
            "rlark_records_dir %s: could not write the stop record or its logs before the stop (%s); nothing "
            "was patched" % (self.records["dir"], getattr(exc, "strerror", None) or exc),
            path="rlark_records_dir",
            hint=wal.HINT,
        )


__all__ = ["DEFAULT_DEADLINE", "GuardedStop", "Throttled"]
