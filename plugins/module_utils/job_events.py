# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Job phase transitions and checkpoint verdicts as events (the core of the rlark_jobs event source).

Plain Python, blocking, no asyncio: the event source runs ``JobWatcher.run`` and
``CheckpointPoller.poll`` in threads. The watcher lists Jobs, then watches from the list's
resourceVersion with bookmarks; a dropped connection resumes from the last resourceVersion seen,
and an expired one (410 Gone, e.g. after an API server restart) re-lists. Transitions are derived
from the last phase seen per Job uid, so a re-list or a replayed event never repeats a transition
and a change made while disconnected still shows once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import contextlib
import json
import random
import socket
import threading
import time
from urllib.parse import urlencode

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import location as checkpoint_location
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import normalize_options, run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.s3 import S3Source
from ansible_collections.rlark.ops.plugins.module_utils.jobs import JOBS, job_name, job_phase, read_tree
from ansible_collections.rlark.ops.plugins.module_utils.kube import (
    CONNECTION_ERRORS,
    HttpTransport,
    KubeError,
    parse_status,
)

PHASE_CHANGED = "phase_changed"
CHECKPOINT_COMPLETED = "checkpoint_completed"
CHECKPOINT_INCOMPLETE = "checkpoint_incomplete"
S3_KEYS = ("bucket", "prefix", "endpoint_url", "region", "access_key", "secret_key", "session_token")


class Expired(Exception):
    """The watch's resourceVersion is gone from the server's history (410): re-list."""


def _meta(job):
    return job.get("metadata") or {}


def seconds_since(timestamp, now=None):
    """Seconds from an RFC 3339 ``...Z`` timestamp (as the API server writes them) to ``now``."""
    if not timestamp:
        return None
    try:
        then = calendar.timegm(time.strptime(timestamp[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None
    return max(0.0, (time.time() if now is None else now) - then)


def job_summary(job):
    """The Job fields every event carries."""
    meta = _meta(job)
    status = job.get("status") or {}
    return {
        "job": meta.get("name"),
        "uid": meta.get("uid"),
        "labels": dict(meta.get("labels") or {}),
        "phase": status.get("phase") or "",
        "stopped": bool((job.get("spec") or {}).get("stopped")),
        "start_time": status.get("startTime"),
        "running_seconds": seconds_since(status.get("startTime")),
    }


def event(kind, job, **extra):
    body = {"type": kind}
    body.update(job_summary(job))
    body.update(extra)
    return {"rlark": body}


class PhaseTracker:
    """Last phase seen per Job uid; turns observations into ``phase_changed`` events exactly once."""

    def __init__(self):
        self.known = {}  # uid -> {"job": name, "phase": phase or None}

    def observe(self, job, quiet=False):
        uid = _meta(job).get("uid") or job_name(job)
        phase = job_phase(job)
        previous = (self.known.get(uid) or {}).get("phase")
        # A Job without a phase yet (just created) has nothing to report; keep what we knew.
        self.known[uid] = {"job": job_name(job), "phase": phase or previous}
        if quiet or not phase or phase == previous:
            return []
        return [event(PHASE_CHANGED, job, previous_phase=previous, resource_version=_meta(job).get("resourceVersion"))]

    def forget(self, job):
        self.known.pop(_meta(job).get("uid") or job_name(job), None)

    def resync(self, jobs, quiet=False):
        """A full list: report what changed since the last observation, forget deleted Jobs."""
        out = []
        seen = set()
        for job in sorted(jobs, key=lambda j: _meta(j).get("creationTimestamp") or ""):
            seen.add(_meta(job).get("uid") or job_name(job))
            out.extend(self.observe(job, quiet=quiet))
        for uid in [u for u in self.known if u not in seen]:
            del self.known[uid]
        return out


class WatchStream(HttpTransport):
    """One streaming watch request on its own connection; ``close`` from another thread unblocks it."""

    def open(self, path, headers, timeout):
        self.conn = self._connect(timeout)
        self.conn.request("GET", self.base_path + path, headers=headers)
        return self.conn.getresponse()

    def close(self):
        conn = self.conn
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked in another thread
        super().close()


class JobWatcher:
    """Lists and watches Jobs; ``run(emit)`` calls ``emit(event)`` for every phase transition until ``stop``."""

    def __init__(
        self,
        client,
        label_selector=None,
        initial_events=False,
        watch_seconds=290,
        list_timeout=60.0,
        backoff_cap=5.0,
        log=None,
    ):
        self.client = client
        self.label_selector = label_selector or None
        self.initial_events = initial_events
        self.watch_seconds = int(watch_seconds)
        self.list_timeout = list_timeout
        self.backoff_cap = backoff_cap
        self.log = log or (lambda message: None)
        self.wake = threading.Event()  # backoff sleeps end at once on stop()
        self.tracker = PhaseTracker()
        self.resource_version = None
        self.listed_once = False
        self.stopping = False
        self.stream = None
        self.jobs = {}  # uid -> latest Job object
        self.snapshot = []  # list(self.jobs.values()), replaced whole so other threads can read it
        self.relists = 0
        self.reconnects = 0
        self.watching_since = None  # monotonic time the current (or last) watch was established

    def stop(self):
        self.stopping = True
        self.wake.set()
        stream = self.stream
        if stream is not None:
            stream.close()

    def run(self, emit):
        failures = 0
        while not self.stopping:
            try:
                if self.resource_version is None:
                    self.relist(emit)
                self.watch_once(emit)
                failures = 0
            except Expired:
                self.log("watch expired at resourceVersion %s (410 Gone): listing again" % self.resource_version)
                self.resource_version = None
            except (KubeError, ValueError) + CONNECTION_ERRORS as exc:
                if self.stopping:
                    break
                # A watch that ran for a while before it broke starts the backoff again from its first step.
                if self.watching_since is not None and time.monotonic() - self.watching_since >= self.backoff_cap:
                    failures = 0
                failures += 1
                self.reconnects += 1
                delay = min(self.backoff_cap, 0.25 * (2 ** min(failures, 6))) * random.uniform(0.8, 1.0)
                self.log("watch interrupted (%s); reconnecting in %.1fs" % (exc, delay))
                self.wake.wait(delay)

    def relist(self, emit):
        self.client.deadline = self.client.clock() + self.list_timeout
        items, resource_version = self.client.list(JOBS, label_selector=self.label_selector)
        quiet = not self.listed_once and not self.initial_events
        for item in self.tracker.resync(items, quiet=quiet):
            emit(item)
        self.jobs = {_meta(j).get("uid"): j for j in items}
        self.snapshot = list(self.jobs.values())
        self.resource_version = resource_version
        self.listed_once = True
        self.relists += 1
        self.log("listed %d Job(s) at resourceVersion %s; watching" % (len(items), resource_version))

    def _query(self):
        query = [
            ("watch", "1"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", self.resource_version),
            ("timeoutSeconds", str(self.watch_seconds)),
        ]
        if self.label_selector:
            query.append(("labelSelector", self.label_selector))
        return query

    def watch_once(self, emit):
        path = JOBS + "?" + urlencode(self._query())
        stream = WatchStream(self.client.settings)
        self.stream = stream
        try:
            response = stream.open(path, self.client._headers(), self.watch_seconds + 30)
            if response.status != 200:
                error = parse_status(response.status, response.read(), "GET", JOBS)
                if response.status == 410:
                    raise Expired(str(error))
                raise error
            self.watching_since = time.monotonic()
            while not self.stopping:
                line = response.readline()
                if not line:
                    return  # the server ended the watch (timeoutSeconds): watch again from resource_version
                if line.strip():
                    self.handle(json.loads(line.decode("utf-8")), emit)
        finally:
            self.stream = None
            stream.close()
            if self.watching_since is not None and time.monotonic() - self.watching_since < self.backoff_cap:
                self.watching_since = None  # a watch that broke at once does not reset the backoff

    def handle(self, item, emit):
        kind = item.get("type")
        obj = item.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Expired(obj.get("message") or "410 Gone")
            raise parse_status(obj.get("code") or 500, json.dumps(obj).encode("utf-8"), "WATCH", JOBS)
        resource_version = _meta(obj).get("resourceVersion")
        if kind in ("ADDED", "MODIFIED"):
            for out in self.tracker.observe(obj):
                emit(out)
            self.jobs[_meta(obj).get("uid")] = obj
            self.snapshot = list(self.jobs.values())
        elif kind == "DELETED":
            self.tracker.forget(obj)
            self.jobs.pop(_meta(obj).get("uid"), None)
            self.snapshot = list(self.jobs.values())
        if resource_version:
            self.resource_version = resource_version


class CheckpointPoller:
    """Runs the checkpoint gate on a Job's checkpoint location and reports new verdicts once each.

    ``checkpoint_completed`` for every newer complete step (the newest complete one when several
    completed between two polls); ``checkpoint_incomplete`` once for a newest step that is incomplete
    although nothing was written to it for the gate's ``quiet_seconds`` (a save that died). A Job that
    left Running is polled until nothing has been written for ``quiet_seconds``, so a save cut off by
    the stop is reported too.
    """

    def __init__(
        self,
        client,
        gate_options=None,
        checkpoint_root=None,
        object_storage=None,
        host_path_template=None,
        node_gate=None,
        log=None,
        read_timeout=60.0,
    ):
        self.client = client
        self.gate_options = dict(gate_options or {}, step="latest")
        self.quiet_seconds = normalize_options(self.gate_options)["quiet_seconds"]
        self.checkpoint_root = checkpoint_root or None
        self.object_storage = object_storage or {}
        self.host_path_template = host_path_template
        self.node_gate = node_gate  # node_gate.NodeGate: hostPath checkpoints gated on the node's inventory host
        self.log = log or (lambda message: None)
        self.read_timeout = read_timeout
        self.completed = {}  # uid -> newest complete step reported
        self.incomplete = {}  # uid -> incomplete step reported
        self.said = {}  # uid -> last "cannot inspect" reason logged
        self.writing = set()  # uids whose newest step was written to within quiet_seconds at the last poll

    def _note(self, uid, reason):
        if self.said.get(uid) != reason:
            self.said[uid] = reason
            self.log(reason)

    def source_for(self, job, location):
        name = job_name(job)
        if location["kind"] == "hostPath":
            if not self.host_path_template:
                raise GateError(
                    "Job %s keeps its checkpoints on hostPath %s of node %s: set the source's inventory (the one with "
                    "that node's host, as for the playbooks) or host_path_template"
                    % (name, location["host_path"], location["node"])
                )
            return LocalSource(
                self.host_path_template.format(node=location["node"], host_path=location["host_path"].rstrip("/"))
            )
        target = {k: v for k, v in (location["s3"] or {}).items() if k in S3_KEYS}
        return S3Source(**target)

    def judge(self, job, location):
        """(gate result, the time its mtimes compare with): on the node's host, or read from here."""
        if location["kind"] == "hostPath" and not self.host_path_template and self.node_gate is not None:
            # The module's quiet-window findings used the node's clock; mtimes compare with ours (NTP assumed).
            return self.node_gate.gate(location["node"], location["host_path"], self.gate_options), time.time()
        source = self.source_for(job, location)
        return run_gate(source, self.gate_options), source.now()

    def poll(self, job):
        """Events for one Job (blocking: reads its Tasks and Pod CRs, lists the checkpoint location)."""
        uid = _meta(job).get("uid") or job_name(job)
        self.client.deadline = self.client.clock() + self.read_timeout
        tree = read_tree(self.client, job_name(job), job=job)
        location = checkpoint_location.locate(
            tree, explicit_root=self.checkpoint_root, object_storage=self.object_storage
        )
        if not location["ok"]:
            self._note(uid, "Job %s: checkpoints not watched: %s" % (job_name(job), location["reason"]))
            return []
        try:
            result, now = self.judge(job, location)
        except GateError as exc:
            self.writing.discard(uid)
            self._note(uid, "Job %s: no checkpoint verdict yet: %s" % (job_name(job), exc))
            return []
        self.said.pop(uid, None)
        newest_write = max([s["newest_mtime"] for s in result["steps"] if s["newest_mtime"] is not None] or [None])
        if newest_write is not None and now - newest_write < self.quiet_seconds:
            self.writing.add(uid)
        else:
            self.writing.discard(uid)
        out = []
        latest = result["latest_complete_step"]
        if latest is not None and latest > self.completed.get(uid, -1):
            self.completed[uid] = latest
            out.append(
                event(
                    CHECKPOINT_COMPLETED,
                    job,
                    step=latest,
                    checkpoint=result["checkpoint"],
                    runner=result["runner"],
                    backend=result["backend"],
                    location_kind=location["kind"],
                )
            )
        newest = next((s for s in result["steps"] if s["step"] == result["newest_step"]), None)
        if (
            newest is not None
            and newest["step"] != latest
            and newest["verdict"] == "incomplete"
            and newest["newest_mtime"] is not None
            and now - newest["newest_mtime"] >= self.quiet_seconds
            and self.incomplete.get(uid) != newest["step"]
        ):
            self.incomplete[uid] = newest["step"]
            out.append(
                event(
                    CHECKPOINT_INCOMPLETE,
                    job,
                    step=newest["step"],
                    checkpoint=newest["checkpoint"],
                    reasons=newest["reasons"][:6],
                    latest_complete_step=latest,
                    location_kind=location["kind"],
                )
            )
        return out

    def wants(self, uid, phase, polled_phase):
        """Poll a Running Job; after it left Running, until nothing has been written for quiet_seconds."""
        return phase == "Running" or polled_phase == "Running" or uid in self.writing

    def forget(self, uid):
        for table in (self.completed, self.incomplete, self.said):
            table.pop(uid, None)
        self.writing.discard(uid)
