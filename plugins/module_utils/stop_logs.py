# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stop a Job with its logs complete: read right before the patch, then the tail until the pods go.

RLark keeps only the last 1000 lines of a Running pod and nothing once the pod is gone, and the
trainer keeps writing between the checkpoint gate and the moment its pod is removed (the save line
of the recorded checkpoint included). So the logs are read immediately before the stop patch and
again on every poll until no Pod CR of the Job remains; each read is merged onto what was already
read, so a source that returns only a window of recent lines loses nothing that was seen once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import time

from ansible_collections.rlark.ops.plugins.module_utils.joblogs import LogSourceError
from ansible_collections.rlark.ops.plugins.module_utils.jobs import read_tree, set_stopped, task_replicas
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact_result
from ansible_collections.rlark.ops.plugins.module_utils.waiter import Waiter, WaitTimeout


def utc_iso(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


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
    for size in range(min(len(old), len(new)), 0, -1):
        if old[-size:] == new[:size]:
            return "\n".join(old + new[size:]) + "\n"
    # No overlap: the window moved past everything read before (more than a window was written).
    return "\n".join(old + ["[rlark.ops: lines between two reads were not available from the log source]"] + new) + "\n"


class LogTail:
    """Merged logs per pod and, per pod, the wall-clock time its last line was first read."""

    def __init__(self, read, clock=time.time):
        self.read = read
        self.clock = clock
        self.logs = {}
        self.last_line_seen = {}
        self.errors = []

    def poll(self, strict=False):
        """Read once and merge; after the stop a failed read (a pod going away) is noted, not raised."""
        now = self.clock()
        try:
            read = self.read() or {}
        except LogSourceError as exc:
            if strict:
                raise
            if str(exc) not in self.errors:
                self.errors.append(str(exc))
            return self.logs
        for pod, text in read.items():
            merged = merge_log(self.logs.get(pod, ""), text)
            if merged != self.logs.get(pod):
                self.logs[pod] = merged
                self.last_line_seen[pod] = now
        return self.logs

    def lines(self, pod):
        return len(self.logs.get(pod, "").splitlines())


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
    **clocks,
):
    """Read the logs, stop Job ``name`` (``spec.stopped`` only), then tail them until no Pod CR remains.

    ``read() -> {pod: text}`` is the log source. Returns the result dict of rlark_stop_with_logs;
    ``failed`` with ``msg`` when the pods did not go within ``timeout`` (the logs read so far are kept).
    ``ready(head_log) -> reason`` judges the logs read right before the patch: a non-empty reason
    sends no stop and returns ``msg`` without ``patched_at``. ``clocks`` (``clock``, ``sleep``) go to
    the Waiter (tests). Raises ``jobs.Refused`` and
    ``kube.KubeError`` as the stop does.
    """
    tail = LogTail(read)
    result = {"changed": False, "logs": {}, "head_pod": head_pod, "wait_log": []}
    if not check_mode:
        tail.poll(strict=True)  # logs that cannot be read refuse the stop: nothing half-done
        reason = ready(tail.logs.get(head_pod, "")) if ready else ""
        if reason:
            result.update(msg=reason, logs=tail.logs, head_log=tail.logs.get(head_pod, ""))
            return result
    outcome = set_stopped(client, name, True, check_mode=check_mode)
    result.update(changed=outcome["changed"], action=outcome["action"], patched_at=utc_iso(time.time()))
    if check_mode:
        result["msg"] = "check mode: the stop was sent as a server-side dry run; no log was read"
        return result
    if wait:
        waiter = Waiter(timeout, interval=interval, progress=progress, **clocks)

        def gone():
            tree = read_tree(client, name)
            tail.poll()
            scaling = [t for t in tree["tasks"] if task_replicas(t) != 0]
            pods = len(tree["pods"])
            summary = "%d Pod CR(s) remaining, %d task(s) not at replicas 0; %d line(s) of %s read" % (
                pods,
                len(scaling),
                tail.lines(head_pod),
                head_pod,
            )
            return tree["job"] is None or (not scaling and pods == 0), summary, tree

        try:
            waiter.wait(gone, "the Pod CRs of Job %s to go while reading their logs" % name)
            result["pods_gone_at"] = utc_iso(time.time())
        except WaitTimeout as exc:
            result.update(failed=True, msg="%s The logs read until then are kept." % exc)
        result["wait_log"] = waiter.log
        result["waited_seconds"] = round(waiter.clock() - waiter.started, 1)
    tail.poll()
    result["logs"] = tail.logs
    result["log_errors"] = tail.errors
    result["head_log"] = tail.logs.get(head_pod, "")
    result["last_line_seen_at"] = {pod: utc_iso(at) for pod, at in sorted(tail.last_line_seen.items())}
    head_seen = tail.last_line_seen.get(head_pod)
    result["head_last_line_seen_at"] = utc_iso(head_seen) if head_seen else None
    return redact_result(result)  # the logs are shown with -v: a secret echoed by the workload stays hidden


__all__ = ["LogTail", "merge_log", "stop_with_logs", "utc_iso"]
