"""The collection's "running as designed" never passes while a Task has fewer pods than its replicas.

RLark's Job reads Running as soon as any Task is, while its agent may not have placed the other Tasks' pods
(docs/sandbox.md, divergence 11). Here rlark-sim's agent is held back from one Task (sim switch
``agent-hold``) while the Job already reads Running: rlark_job_running (what the verify role waits with)
must keep waiting, and report the Task that is short of pods.
"""

import job_test_support as support
import pytest
import sim_support
from independent import get_job, job_tasks
from job_test_support import demo_job, run_module, unique, wait_until

pytestmark = pytest.mark.sandbox
cleanup = support.cleanup


def test_job_running_is_not_running_as_designed_while_a_task_has_no_pods(sandbox, cleanup):
    name = unique()
    cleanup.append(name)
    with sim_support.agent_held(sandbox, name + "-rollout"):
        created = run_module(sandbox, "rlark_job", {"definition": demo_job(name)})
        assert created["changed"] and not created.get("failed"), created.get("msg")
        wait_until(lambda: ((get_job(sandbox, name) or {}).get("status") or {}).get("phase") == "Running")
        held = run_module(sandbox, "rlark_job_running", {"name": name, "timeout": 4, "interval": 1})
        assert held["running"] is False and held["timed_out"] is True, held
        rollout = held["state"]["observed"]["rollout"]
        assert (rollout["pods"], rollout["replicas"], rollout["phase"]) == (0, 2, None)
        assert "Task %s-rollout has 0 Pod CR(s), expected 2." % name in [
            f["message"] for f in held["state"]["findings"]
        ]
        assert not any(line.endswith("every pod runs as designed") for line in held["wait_log"])
        # the condition held all along: still Running, still no pod for the held Task
        assert get_job(sandbox, name)["status"]["phase"] == "Running"
        assert not (
            next(t for t in job_tasks(sandbox, name) if t["metadata"]["name"] == name + "-rollout").get("status")
        )
    released = run_module(sandbox, "rlark_job_running", {"name": name, "timeout": 180, "interval": 1})
    assert released["running"] is True, released.get("wait_log")
    assert released["state"]["observed"]["rollout"]["pods"] == 2
