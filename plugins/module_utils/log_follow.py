# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Follow each pod's log to the end of its container while a stop waits for the pods to go (kubeconfig source).

After the stop patch the trainer may still write (the save line of its last checkpoint, its shutdown), and once a
pod is gone nothing of its log is left to read. Reading the whole log again on every poll races that removal: a
read that began before the last lines and a pod gone before the next read lose them. ``follow=true`` streams each
pod's log from the last line already read until the kubelet ends the stream, which it does when the container
ends, so every line the container wrote arrives. The files source needs no follow (its files stay), and the
gateway has none (a window of the last lines).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import os
import re
import threading
import time

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import (
    DATA_PLANE_NAMESPACE,
    Export,
    LineSink,
    LogSourceError,
    export_logs,
    export_path,
    kubeconfig_for,
    pod_log_path,
)
from ansible_collections.rlark.ops.plugins.module_utils.kube import KubeError, client_from_params

FOLLOW_SOURCES = ("kubeconfig",)
# Once the pods went their containers have ended and so have the streams; one still open after this is cut.
DRAIN_SECONDS = 30.0
# What an export's ``followed`` says: the kubelet ended the stream, or it was still open when the wait ended.
TO_END, CUT = "to the container's end", "cut off"
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?(Z|[+-]\d\d:\d\d)$")


def since_time(export):
    """``sinceTime`` continuing ``export``: its last kubelet time in whole seconds (what the API server passes on to
    the kubelet); the lines of that second come again and are merged on their overlap. None: from the start."""
    stamp = export.last_timestamp if export is not None and export.kubelet_stamps else None
    m = _STAMP.match(stamp or "")
    return m.group(1) + m.group(2) if m else None


class _Attempts:
    """A LineSink over a new file for every attempt (``Client.request`` starts its sink over on a retry). The
    longest attempt is kept: every attempt starts at the same ``sinceTime``, and a retry after the pod went gets
    nothing."""

    def __init__(self, follow):
        self.follow = follow
        self.best = None
        self.sink = None

    def reset(self):
        self._settle()
        export = Export(self.follow.pod, "kubeconfig", export_path(self.follow.export_dir, self.follow.pod),
                        cluster=self.follow.cluster, window=True)  # fmt: skip
        self.sink = LineSink(export, kubelet_stamps=True)

    def write(self, chunk):
        before = self.sink.export.lines
        self.sink.write(chunk)
        if self.sink.export.lines != before:
            self.follow.last_line_at = self.follow.clock()

    def lines(self):
        return max(self.best.lines if self.best else 0, self.sink.export.lines if self.sink else 0)

    def _settle(self):
        if self.sink is None:
            return
        export, self.sink = self.sink.close(), None
        if self.best is None or export.lines > self.best.lines:
            export, self.best = self.best, export
        if export is not None:
            with contextlib.suppress(OSError):
                os.unlink(export.path)

    def close(self):
        self._settle()
        return self.best


class PodFollow(threading.Thread):
    """One pod's ``main`` log streamed with ``follow=true`` from ``since`` until its container ends (``ended``)
    or ``cut()`` ends it; ``export`` (window=True) and ``error`` once it has stopped."""

    def __init__(self, client, pod, namespace, export_dir, cluster=None, since=None, clock=time.time):
        super().__init__(name="follow-%s" % pod)
        self.daemon = True  # a stream the kubelet never ends must not keep the controller alive
        self.client = client
        self.pod = pod
        self.namespace = namespace
        self.export_dir = export_dir
        self.cluster = cluster
        self.since = since
        self.clock = clock
        self.attempts = _Attempts(self)
        self.export = None
        self.error = None
        self.ended = False
        self.was_cut = False
        self.last_line_at = None

    def run(self):
        query = [("container", jobspec.MAIN_CONTAINER), ("timestamps", "true"), ("follow", "true")]
        try:
            self.client.request("GET", pod_log_path(self.namespace, self.pod), query + [("sinceTime", self.since)],
                                sink=self.attempts)  # fmt: skip
            self.ended = not self.was_cut
        except Exception as exc:  # a thread's failure (KubeError or other) is reported, never lost
            if not self.was_cut:
                self.error = "the log of pod %s could not be followed to its end: %s" % (self.pod, exc)
        finally:
            self.export = self.attempts.close()

    def lines(self):
        return self.attempts.lines()

    def cut(self):
        self.was_cut = True
        self.client.interrupt()


class LogFollow:
    """The followed pods of one Job; ``end(grace)`` waits up to ``grace`` seconds for their streams, cuts the rest
    and returns ``{pod: PodFollow}`` (export, ended, error, last_line_at)."""

    def __init__(self, follows, clients):
        self.follows = follows
        self.clients = clients

    def start(self):
        for follow in self.follows:
            follow.start()
        return self

    def lines(self, pod):
        return sum(f.lines() for f in self.follows if f.pod == pod)

    def end(self, grace, clock=time.monotonic):
        deadline = clock() + max(0.0, grace)
        for follow in self.follows:
            follow.join(max(0.0, deadline - clock()))
        for follow in self.follows:
            if follow.is_alive():
                follow.cut()
        done = {}
        for follow in self.follows:
            follow.join(5.0)
            if not follow.is_alive():  # a thread stuck even after its cut leaves its files; it reports nothing
                done[follow.pod] = follow
        for base, forks in self.clients:
            for fork in forks:
                base.absorb(fork)
            base.close()
        return done


def follow_logs(source, pod_names, export_dir, since=None, clusters=None, kubeconfigs=None, default=None,
                namespace=None, timeout=600.0):  # fmt: skip
    """A started LogFollow of ``pod_names``, each from the last kubelet time of its export in ``since``
    (``{pod: Export}``); None for a source that cannot follow. Raises LogSourceError as the reads do."""
    if source not in FOLLOW_SOURCES or not pod_names:
        return None
    namespace = namespace or DATA_PLANE_NAMESPACE
    bases = {}
    follows = []
    try:
        for pod in pod_names:
            cluster, kubeconfig = kubeconfig_for(pod, clusters, kubeconfigs, default)
            if kubeconfig not in bases:
                try:
                    base = client_from_params({"kubeconfig": kubeconfig}, timeout=timeout)
                except KubeError as exc:
                    raise LogSourceError("cannot load data-plane kubeconfig %s: %s" % (kubeconfig, exc)) from None
                base.request_timeout = timeout  # a quiet trainer is no failed read: the stream waits for it
                bases[kubeconfig] = (base, [])
            base, forks = bases[kubeconfig]
            forks.append(base.fork())
            start = since_time((since or {}).get(pod))
            follows.append(PodFollow(forks[-1], pod, namespace, export_dir, cluster, start))
    except LogSourceError:
        for base, _forks in bases.values():
            base.close()
        raise
    return LogFollow(follows, list(bases.values())).start()


def log_reader(source, job_name, export_dir, pod_names, follow_timeout=600.0, **options):
    """``read(since=None, follow=False)`` over one Job's logs, for stop_logs.LogTail: export_logs, or with ``follow``
    follow_logs. ``options`` are export_logs's (logs_dir, gateway_url, kubeconfig, kubeconfigs, clusters, namespace);
    ``follow_timeout`` bounds the streams (the stop's wait)."""

    def read(since=None, follow=False):
        if follow:
            return follow_logs(
                source, pod_names, export_dir, since=since, clusters=options.get("clusters"),
                kubeconfigs=options.get("kubeconfigs"), default=options.get("kubeconfig"),
                namespace=options.get("namespace"), timeout=follow_timeout,
            )  # fmt: skip
        return export_logs(source, job_name, export_dir, pod_names=pod_names, since=since, **options)

    return read


__all__ = [
    "CUT",
    "DRAIN_SECONDS",
    "FOLLOW_SOURCES",
    "TO_END",
    "LogFollow",
    "PodFollow",
    "follow_logs",
    "log_reader",
    "since_time",
]
