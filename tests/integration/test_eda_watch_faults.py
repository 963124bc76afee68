"""The rlark_jobs event source through 20 forced disconnects and one expiry past etcd's compaction.

The source (``main(queue, args)``, as test_eda_source.py runs it) reaches the sandbox's real apiserver
through a TCP forwarder the test controls. Three Jobs are stopped and started in turn while, before each
change, either the apiserver is killed and restarted (10 times) or every connection of the source is cut
(10 times); once more the source is kept away while a Job changes, etcd is compacted past the revision it
holds and the apiserver restarted, so its resume gets 410 Gone and it must re-list and diff. Each change
is made while the source is cut off or reconnecting and confirmed in the API, and the next fault comes
once the source has reported it (a phase that came and went while nobody watched is in no list), so the
steady phases every Job went through are known: the source must report each of them once, in order
(0 dropped, 0 duplicated), and never the same transition twice.
"""

import base64
import contextlib
import json
import secrets
import socket
import threading
import time
import urllib.request

import pytest
from independent import custom_objects
from kubernetes import client
from test_eda_source import SourceRun, training_job

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"
DISCONNECTS = 20
STEADY = {True: "Stopped", False: "Running"}


class Forwarder:
    """127.0.0.1:<port> -> the apiserver, byte for byte (TLS passes through); ``drop`` cuts every connection."""

    def __init__(self, host, port):
        self.upstream = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.pairs = []
        self.lock = threading.Lock()
        self.paused = False
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                down, _addr = self.listener.accept()
            except OSError:
                return
            if self.paused:
                down.close()
                continue
            try:
                up = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                down.close()
                continue
            up.settimeout(None)
            with self.lock:
                self.pairs.append((down, up))
            for a, b in ((down, up), (up, down)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        with contextlib.suppress(OSError):
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def drop(self):
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for s in pair:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
        return len(pairs)

    def close(self):
        self.closed = True
        self.listener.close()
        self.drop()


def etcd_compact(sandbox):
    """Compact etcd at its current revision (its HTTP gateway); returns that revision."""
    base = "http://127.0.0.1:%d/v3/kv/" % sandbox.state["ports"]["etcd"]

    def post(path, body):
        req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    revision = int(post("range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"])
    post("compaction", {"revision": str(revision), "physical": True})
    return revision


@pytest.fixture
def api(sandbox):
    return custom_objects(sandbox.kubeconfig)


def wait_phase(api, name, phase, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(client.ApiException, OSError):
            job = api.get_cluster_custom_object(GROUP, VERSION, "jobs", name)
            if (job.get("status") or {}).get("phase") == phase:
                return
        time.sleep(0.1)
    raise AssertionError("Job %s did not reach %s in %ss" % (name, phase, timeout))


def set_stopped(api, name, stopped):
    """Stop or start a Job (retries while a restarted apiserver comes up)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            api.patch_cluster_custom_object(GROUP, VERSION, "jobs", name, {"spec": {"stopped": stopped}})
            return
        except (client.ApiException, OSError):
            assert time.monotonic() < deadline, "could not patch %s" % name
            time.sleep(0.2)


def steady_sequence(events, job):
    """The phases the source reported for ``job``, transient ones (Pending, Stopping...) left out."""
    return [e["phase"] for _m, _w, e in events if e["job"] == job and e["phase"] in STEADY.values()]


def test_no_transition_dropped_or_duplicated_across_20_disconnects_and_a_compaction(sandbox, api):
    label = "watch-" + secrets.token_hex(3)
    names = ["%s-%d" % (label, i) for i in range(3)]
    host, port = sandbox.server.split("//")[1].split(":")
    forwarder = Forwarder(host, int(port))
    source = SourceRun(
        {
            "host": "https://127.0.0.1:%d" % forwarder.port,
            "api_key": sandbox.admin_token,
            "ca_cert": sandbox.ca_cert,
            "label_selector": "rlark-test=" + label,
            "watch_seconds": 20,
        }
    )
    expected = {name: [] for name in names}
    faults = {"apiserver restarts": 0, "dropped connections": 0, "compaction expiries": 0}
    try:
        source.wait(source.listed, 60, "the first list")
        for name in names:
            api.create_cluster_custom_object(GROUP, VERSION, "jobs", training_job(name, label, name, "a100-03"))
            wait_phase(api, name, "Running")
            expected[name].append("Running")
        stopped = dict.fromkeys(names, False)
        for i in range(DISCONNECTS):
            name = names[i % len(names)]
            if i % 2 == 0:
                sandbox.kill("apiserver")
                sandbox.restart()
                faults["apiserver restarts"] += 1
            else:
                assert forwarder.drop() > 0, "the source had no connection to cut"
                faults["dropped connections"] += 1
            stopped[name] = not stopped[name]
            set_stopped(api, name, stopped[name])  # while the source reconnects (backoff after the fault)
            wait_phase(api, name, STEADY[stopped[name]])
            expected[name].append(STEADY[stopped[name]])
            # The next fault only once the source has reported this change (a list cannot show a phase
            # that came and went while nobody watched, so the oracle waits for each to be seen).
            source.wait(lambda n=name: steady_sequence(source.of("phase_changed"), n) == expected[n], 120, name)

        # Away longer than etcd keeps history: a change, etcd compacted past it, the apiserver restarted.
        forwarder.paused = True
        forwarder.drop()
        name = names[0]
        stopped[name] = not stopped[name]
        set_stopped(api, name, stopped[name])
        wait_phase(api, name, STEADY[stopped[name]])
        expected[name].append(STEADY[stopped[name]])
        etcd_compact(sandbox)
        sandbox.kill("apiserver")
        sandbox.restart()
        relists = source.listed()
        forwarder.paused = False
        faults["compaction expiries"] += 1

        def caught_up():
            return all(steady_sequence(source.of("phase_changed"), n) == expected[n] for n in names)

        try:
            source.wait(caught_up, 120, "every steady phase of every Job")
        except AssertionError:
            got = {n: [(e["previous_phase"], e["phase"]) for _m, _w, e in source.of("phase_changed", n)] for n in names}
            raise AssertionError("expected steady phases %s; the source reported %s" % (expected, got)) from None
        assert source.listed() > relists, "the source did not re-list after the expiry: %s" % source.lines[-20:]
    finally:
        source.stop()
        forwarder.close()
        for name in names:
            with contextlib.suppress(client.ApiException):
                api.delete_cluster_custom_object(GROUP, VERSION, "jobs", name)

    events = [e for _m, _w, e in source.of("phase_changed")]
    for name in names:
        mine = [e for e in events if e["job"] == name]
        transitions = [(e["previous_phase"], e["phase"]) for e in mine]
        # No transition reported twice in a row, none without a change, each from the phase reported before it.
        assert all(prev != phase for prev, phase in transitions), transitions
        assert all(mine[k]["previous_phase"] == mine[k - 1]["phase"] for k in range(1, len(mine))), transitions
        assert len({e["resource_version"] for e in mine}) == len(mine), "an event was repeated: %s" % transitions
        assert steady_sequence(source.of("phase_changed"), name) == expected[name]
    assert faults == {"apiserver restarts": 10, "dropped connections": 10, "compaction expiries": 1}
    print("\nwatch faults: %s; %d transitions, source log: %s relists" % (faults, len(events), source.listed()))
