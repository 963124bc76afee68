"""The informer cache of rlark-sim: API list order, its secondary index, relisting after an API server crash
(no API server needed)."""

import threading

import requests
from rlark_sim.kube import Informer
from rlark_sim.workload import pod_task_key


def pod(ns, name, task, rv="1"):
    return {"metadata": {"namespace": ns, "name": name, "resourceVersion": rv, "labels": {"rlark.io/task-name": task}}}


def test_snapshot_order_and_index_follow_puts_and_forgets():
    inf = Informer(None, "/unused", index_fn=pod_task_key)
    inf.put(pod("rlark-h100", "b", "t1"))
    inf.put(pod("rlark-a100", "z", "t1"))
    inf.put(pod("rlark-a100", "a", "t1"))
    assert [p["metadata"]["name"] for p in inf.snapshot()] == ["a", "z", "b"]
    assert [p["metadata"]["name"] for p in inf.by_index(("rlark-a100", "t1"))] == ["a", "z"]
    inf.put(pod("rlark-a100", "a", "t2", rv="2"))  # relabelled: moves to the other bucket
    assert [p["metadata"]["name"] for p in inf.by_index(("rlark-a100", "t1"))] == ["z"]
    assert [p["metadata"]["name"] for p in inf.by_index(("rlark-a100", "t2"))] == ["a"]
    inf.put(pod("rlark-a100", "a", "t1", rv="1"))  # older than what we hold: ignored
    assert inf.get("rlark-a100", "a")["metadata"]["labels"]["rlark.io/task-name"] == "t2"
    inf.forget("rlark-a100", "z")
    assert inf.by_index(("rlark-a100", "t1")) == []
    assert ("rlark-a100", "t1") not in inf.index


class CrashingApi:
    """An API server that dies mid-watch, refuses connections once, then comes back with other objects."""

    def __init__(self):
        self.lists = [{"items": [pod("ns", "a", "t")], "metadata": {"resourceVersion": "5"}}]
        self.lists.append(requests.ConnectionError("connection refused"))
        self.lists.append({"items": [pod("ns", "b", "t", rv="9")], "metadata": {"resourceVersion": "9"}})
        self.watches = 0
        self.back = threading.Event()

    def list(self, _path, params=None):
        answer = self.lists.pop(0) if len(self.lists) > 1 else self.lists[0]
        if isinstance(answer, requests.ConnectionError):
            raise requests.ConnectionError(*answer.args)
        return answer

    def watch_lines(self, _path, params, _timeout):
        self.watches += 1
        if self.watches == 1:
            yield {"type": "MODIFIED", "object": pod("ns", "a", "t2", rv="6")}
            raise requests.exceptions.ChunkedEncodingError("connection broken: the apiserver was killed")
        self.back.set()
        threading.Event().wait(30)  # a quiet watch on the restarted apiserver
        return
        yield


def test_informer_relists_after_the_apiserver_died_mid_watch():
    api = CrashingApi()
    inf = Informer(api, "/pods", name="pods").start()
    try:
        assert api.back.wait(20), "no new watch after the apiserver came back"
        assert [p["metadata"]["name"] for p in inf.snapshot()] == ["b"]  # what the new list says, nothing stale
        assert inf.seen_rv == 9
    finally:
        inf.stop()


class DeletingApi:
    """A watch that delivers one Job's deletion, then stays quiet."""

    def __init__(self):
        self.deleted = threading.Event()

    def list(self, _path, params=None):
        return {"items": [pod("", "bg", "t", rv="3")], "metadata": {"resourceVersion": "3"}}

    def watch_lines(self, _path, params, _timeout):
        yield {"type": "DELETED", "object": pod("", "bg", "t", rv="7")}
        self.deleted.set()
        threading.Event().wait(30)
        return
        yield


def test_a_write_answered_after_the_watch_saw_the_deletion_does_not_resurrect_the_object():
    api = DeletingApi()
    inf = Informer(api, "/jobs", name="jobs").start()
    try:
        assert api.deleted.wait(20)
        assert inf.get("", "bg") is None
        inf.put(pod("", "bg", "t", rv="5"))  # the controller's status write, answered late
        assert inf.get("", "bg") is None
        inf.put(pod("", "bg", "t", rv="8"))  # created again under the same name: a newer object
        assert inf.get("", "bg")["metadata"]["resourceVersion"] == "8"
    finally:
        inf.stop()
