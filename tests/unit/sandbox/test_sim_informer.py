"""The informer cache of rlark-sim: API list order and its secondary index (no API server needed)."""

from rlark_sim.agent import pod_task_key
from rlark_sim.kube import Informer


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
