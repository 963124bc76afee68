# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stop a Job with its logs complete: read right before the patch, then the tail until the pods go.

RLark keeps only the last 1000 lines of a Running pod and nothing once the pod is gone, and the
trainer keeps writing between the checkpoint gate and the moment its pod is removed (the save line
of the recorded checkpoint included). So the logs are read immediately before the stop patch; after
it a source that can follow (kubeconfig: log_follow.py) streams each pod's log until its container
ends, and the others are read again on every poll until no Pod CR of the Job remains. Each read is
merged onto what was already read, so a source that returns only a window of recent lines loses
nothing that was seen once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import datetime
import os
import tempfile
import time

from ansible_collections.rlark.ops.plugins.module_utils.findings import finding
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import (
    GATEWAY_TAIL_LINES,
    Export,
    LineSink,
    LogSourceError,
)
from ansible_collections.rlark.ops.plugins.module_utils.jobs import read_tree, set_stopped, stop_state
from ansible_collections.rlark.ops.plugins.module_utils.log_follow import CUT, DRAIN_SECONDS, TO_END
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact_result
from ansible_collections.rlark.ops.plugins.module_utils.waiter import Waiter, WaitTimeout

# The head log a result carries inline (its lost-work count, -v output); the whole log is in its export file.
HEAD_LOG_TAIL = 1 << 18


def utc_iso(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


GAP = "[rlark.ops: lines between two reads were not available from the log source]"


def overlap(old, new):
    """How many lines at the start of ``new`` repeat the last lines of ``old``: the longest suffix of ``old``
    that is a prefix of ``new`` (KMP over line ids, linear in the lines compared)."""
    if not old or not new:
        return 0
    ids = {}
    seq = [ids.setdefault(line, len(ids)) for line in new] + [-1] + [ids.get(line, -2) for line in old[-len(new) :]]
    prefix = [0] * len(seq)
    for i in range(1, len(seq)):
        k = prefix[i - 1]
        while k and seq[i] != seq[k]:
            k = prefix[k - 1]
        prefix[i] = k + 1 if seq[i] == seq[k] else 0
    return prefix[-1]


def merge_log(previous, current):
    """``previous`` plus the lines of ``current`` that come after their overlap.

    ``current`` may be the whole history (a file) or a window of the last lines (the gateway); the
    longest suffix of ``previous`` that is a prefix of ``current`` is the overlap.
    """
    if not previous:
        return current or ""
    if not current or current == previous or previous.endswith(current):
        return previous
    if current.startswith(previous):
        return current
    old = previous.splitlines()
    new = current.splitlines()
    size = overlap(old, new)
    # No overlap: the window moved past everything read before (more than a window was written).
    return "\n".join(old + ([] if size else [GAP]) + new[size:]) + "\n"


def _drop_replaced(new, *exports):
    """Remove the files of the exports ``new`` replaced (it may be one of them)."""
    for stale in {e.path for e in exports if e is not None} - {new.path}:
        with contextlib.suppress(OSError):
            os.unlink(stale)


class LogTail:
    """Each pod's log exported to a file under ``export_dir``, grown by every read, and when its last line was read.

    ``read() -> {pod: Export or text}``: a full-history Export (files, kubeconfig) replaces the kept
    file when it has at least as many lines; a window (the gateway, or text) is merged onto it by
    appending the lines after the overlap. With ``incremental`` the source is called
    ``read(since={pod: Export})`` and continues the kept exports (the files source reads only what was
    written since). With ``follow``, ``start_follow`` calls ``read(since=..., follow=True)``, which
    returns a started log_follow.LogFollow (None: the source cannot follow); polls read nothing until
    ``end_follow`` merges the followed lines, nor after it when every stream ended with its container.
    Only file paths and counters stay in memory.
    """

    def __init__(self, read, export_dir, clock=time.time, incremental=False, follow=False):
        self.read = read
        self.export_dir = export_dir
        self.clock = clock
        self.incremental = incremental
        self.follow = follow
        self.following = None
        self.complete = False  # set by end_follow when every stream ended with its container
        self.exports = {}
        self.last_line_seen = {}
        self.errors = []

    def _note(self, message):
        if message not in self.errors:
            self.errors.append(message)

    def _as_export(self, pod, got):
        if isinstance(got, Export):
            return got
        handle, path = tempfile.mkstemp(prefix=".%s." % pod, suffix=".log", dir=self.export_dir)
        os.close(handle)
        sink = LineSink(Export(pod, "text", path, window=True))
        sink.write((got or "").encode("utf-8"))
        return sink.close()

    def _append_window(self, kept, got):
        """A new export: ``kept`` plus the lines of the window ``got`` after their overlap (both redacted
        already). Only the end of ``kept`` that a window can repeat is read."""
        with open(got.path, "rb") as fh:
            new = fh.read().splitlines()
        with open(kept.path, "rb") as fh:
            fh.seek(max(0, kept.bytes - got.bytes - 1))
            old = fh.read().splitlines()[1:] if kept.bytes > got.bytes + 1 else fh.read().splitlines()
        size = overlap(old, new)
        added = new[size:] if size else [GAP.encode("utf-8")] + new
        merged = Export(kept.pod, got.source, got.path + ".merged", got.cluster, window=True)
        with open(kept.path, "rb") as src, open(merged.path, "wb") as out:
            for chunk in iter(lambda: src.read(1 << 16), b""):
                out.write(chunk)
            text = b"".join(line + b"\n" for line in added) if added else b""
            out.write(text)
        merged.lines, merged.bytes = kept.lines + len(added), kept.bytes + len(text)
        merged.first_timestamp = kept.first_timestamp or got.first_timestamp
        merged.last_timestamp = got.last_timestamp or kept.last_timestamp
        merged.truncated = kept.truncated or got.truncated
        merged.kubelet_stamps = kept.kubelet_stamps or got.kubelet_stamps
        os.unlink(got.path)
        return merged

    def _keep(self, pod, got):
        kept = self.exports.get(pod)
        if kept is None:
            return got
        if got.window:
            return self._append_window(kept, got) if got.lines else kept
        if got.lines < kept.lines:
            self._note(
                "%s: the log source returned %d line(s), fewer than the %d read before; the earlier read is kept"
                % (pod, got.lines, kept.lines)
            )
            return kept
        return got

    def start_follow(self):
        """Follow the pods from their last line read (a source that cannot follow goes on being polled)."""
        if not self.follow or self.following is not None:
            return
        try:
            self.following = self.read(since=dict(self.exports), follow=True)
        except (LogSourceError, OSError) as exc:
            self._note(str(exc))

    def end_follow(self, grace):
        """Wait up to ``grace`` seconds for the followed streams to end, cut the rest, and merge what they carried."""
        following, self.following = self.following, None
        if following is None:
            return
        ended = following.end(grace)
        # Every pod followed until its container ended: no later read can add a line (and the pods are gone).
        self.complete = bool(ended) and all(f.ended for f in ended.values()) and set(ended) >= set(self.exports)
        for pod, follow in sorted(ended.items()):
            if follow.error:
                self._note(follow.error)
            got = follow.export
            if got is None:
                continue
            kept = self.exports.get(pod)
            if kept is None or not kept.lines:
                new = got
            elif got.lines:
                new = self._append_window(kept, got)
            else:
                new = kept
            _drop_replaced(new, kept, got)
            new.followed = TO_END if follow.ended else CUT
            if new is not kept and follow.last_line_at is not None:
                self.last_line_seen[pod] = follow.last_line_at
            self.exports[pod] = new

    def poll(self, strict=False):
        """Read once and merge; after the stop a failed read (a pod going away) is noted, not raised. While the
        pods are followed there is nothing to read: their streams carry every line."""
        if self.following is not None or self.complete:
            return self.exports
        now = self.clock()
        try:
            read = (self.read(since=dict(self.exports)) if self.incremental else self.read()) or {}
        except (LogSourceError, OSError) as exc:  # OSError: the export's file system is full or gone
            if strict:
                raise
            self._note(str(exc))
            return self.exports
        for pod, got in read.items():
            got = self._as_export(pod, got)
            kept = self.exports.get(pod)
            new = self._keep(pod, got)
            _drop_replaced(new, kept, got)
            if kept is None or (new.lines, new.bytes) != (kept.lines, kept.bytes):
                self.last_line_seen[pod] = now
            self.exports[pod] = new
        return self.exports

    def lines(self, pod):
        export = self.exports.get(pod)
        return (export.lines if export else 0) + (self.following.lines(pod) if self.following else 0)

    def text(self, pod):
        export = self.exports.get(pod)
        return export.text() if export else ""

    def truncated(self):
        return sorted(pod for pod, export in self.exports.items() if export.truncated)


def truncation_finding(pods, source):
    return finding(
        "log-export-truncated",
        "the %s log source returned only the last %d lines of pod(s) %s: their export is not complete"
        % (source, GATEWAY_TAIL_LINES, ", ".join(pods)),
        path="logs",
        hint="read the logs with rlark_log_source=kubeconfig (or files), or accept a truncated export with "
        "-e rlark_accept_truncated_logs=true (the stop record then says so)",
        pods=pods,
    )


def stop_with_logs(
    client,
    name,
    read,
    head_pod,
    check_mode=False,
    wait=True,
    timeout=600,
    interval=1.0,
    progress=None,
    ready=None,
    export_dir=None,
    accept_truncated=False,
    follow=False,
    **clocks,
):
    """Read the logs, stop Job ``name`` (``spec.stopped`` only), then tail them until no Pod CR remains.

    ``read() -> {pod: Export or text}`` is the log source (with ``follow``, also ``read(since=, follow=True)``,
    see LogTail); the exports are files in ``export_dir``
    (a new temporary directory when not given), listed in ``log_exports``. Returns the result dict of
    rlark_stop_with_logs; ``failed`` with ``msg`` when the pods did not go within ``timeout`` (the
    logs read so far are kept). Before the patch, a truncated export (the gateway's 1000-line limit)
    refuses the stop with finding ``log-export-truncated`` unless ``accept_truncated``; ``ready(head_log)
    -> reason`` judges the head log read then: a non-empty reason sends no stop and returns ``msg``
    without ``patched_at``. ``clocks`` (``clock``, ``sleep``) go to the Waiter (tests). Raises
    ``findings.Refused`` and ``kube.KubeError`` as the stop does.
    """
    export_dir = export_dir or tempfile.mkdtemp(prefix="rlark-stop-logs-")
    tail = LogTail(read, export_dir, follow=follow)
    result = {"changed": False, "head_pod": head_pod, "wait_log": [], "log_exports": [], "export_dir": export_dir}
    if not check_mode:
        tail.poll(strict=True)  # logs that cannot be read refuse the stop: nothing half-done
        truncated = tail.truncated()
        if truncated and not accept_truncated:
            source = tail.exports[truncated[0]].source
            found = truncation_finding(truncated, source)
            result.update(msg="Not stopped: %s (%s)." % (found["message"], found["hint"]), findings=[found])
            return export_summary(result, tail, head_pod)
        reason = ready(tail.text(head_pod)) if ready else ""
        if reason:
            result.update(msg=reason)
            return export_summary(result, tail, head_pod)
    outcome = set_stopped(client, name, True, check_mode=check_mode)
    result.update(changed=outcome["changed"], action=outcome["action"], patched_at=utc_iso(time.time()))
    if check_mode:
        result["msg"] = "check mode: the stop was sent as a server-side dry run; no log was read"
        return result
    if wait:
        waiter = Waiter(timeout, interval=interval, progress=progress, **clocks)
        try:
            wait_pods_gone(client, name, tail, head_pod, waiter)
            result["pods_gone_at"] = utc_iso(time.time())
        except WaitTimeout as exc:
            result.update(failed=True, msg="%s The logs read until then are kept." % exc)
        result["wait_log"] = waiter.log
        result["waited_seconds"] = round(waiter.clock() - waiter.started, 1)
    tail.poll()
    return export_summary(result, tail, head_pod, accept_truncated)


def wait_pods_gone(client, name, tail, head_pod, waiter, transient=()):
    """Poll until ``jobs.stop_state`` says done, reading the logs on every poll; raises WaitTimeout, Refused
    (duplicate Tasks) and the client's errors. An error of a ``transient`` class (a restarted API server answers
    403 until its authorizer has synced) only says so in the progress and polls again; if the wait then times
    out, that error is raised instead of WaitTimeout."""
    last = {}
    tail.start_follow()
    drain = 0.0  # a wait that ends without the pods gone cuts the streams at once: the containers still run

    def gone():
        try:
            tree = read_tree(client, name)
        except transient as exc:
            last["error"] = exc
            return False, "the API server answered: %s" % exc, None
        last.pop("error", None)
        tail.poll()
        done, summary = stop_state(name, tree)
        return done, "%s; %d line(s) of %s read" % (summary, tail.lines(head_pod), head_pod), tree

    try:
        done = waiter.wait(gone, "the Pod CRs of Job %s to go while reading their logs" % name)
        drain = max(1.0, min(DRAIN_SECONDS, client.remaining()))
        return done
    except WaitTimeout:
        if "error" in last:
            raise last["error"] from None
        raise
    finally:
        tail.end_follow(drain)


def incomplete(export):
    """An export that misses lines: a window at its limit, a sentence instead of lines, a stream cut off."""
    return export["truncated"] or bool(export.get("unavailable")) or export.get("followed") == CUT


def export_summary(result, tail, head_pod, accept_truncated=False):
    """The exports' record fields and paths, and the head log's tail (the files stay; the record copies them)."""
    exports = []
    for _pod, export in sorted(tail.exports.items()):
        fields = dict(export.fields(), path=export.path)
        if export.truncated:
            fields["truncation_accepted"] = bool(accept_truncated)
        exports.append(fields)
    head = tail.exports.get(head_pod)
    result.update(
        log_exports=exports,
        logs_complete=bool(exports) and not any(incomplete(e) for e in exports),
        log_errors=tail.errors,
        head_log=head.tail(HEAD_LOG_TAIL) if head else "",
        last_line_seen_at={pod: utc_iso(at) for pod, at in sorted(tail.last_line_seen.items())},
    )
    head_seen = tail.last_line_seen.get(head_pod)
    result["head_last_line_seen_at"] = utc_iso(head_seen) if head_seen else None
    return redact_result(result)  # the logs are shown with -v: a secret echoed by the workload stays hidden


__all__ = [
    "LogTail",
    "export_summary",
    "merge_log",
    "stop_with_logs",
    "truncation_finding",
    "utc_iso",
    "wait_pods_gone",
]
