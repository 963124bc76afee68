# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify role's one owner (module_utils/verify_decision.py): each decision the role asks of it."""

from ansible_collections.rlark.ops.plugins.module_utils import render, verify_decision
from migration_inputs import example


def submitted_job():
    manifest, profile = example("sandbox")
    return {"job": render.render_job(manifest, profile, "demo"), "tasks": [], "pods": []}


def test_a_missing_job_is_refused_by_name_and_one_not_submitted_as_designed_with_its_findings():
    missing = verify_decision.submitted({}, {}, "demo")
    assert missing["refusal"].startswith("Job demo does not exist, so there is nothing to verify")
    assert "verify-job-missing" not in missing["refusal"]
    no_tasks = verify_decision.submitted(submitted_job(), {}, "demo")
    assert no_tasks["refusal"].startswith("Job demo exists but is not submitted as designed")
    assert "verify-task-missing" in no_tasks["refusal"] and no_tasks["head_task"] == "actor"


def test_a_job_without_a_head_task_is_refused(monkeypatch):
    monkeypatch.setattr(verify_decision.verify, "job_state", lambda *a: {"submitted": True, "findings": []})
    resource = submitted_job()
    for task in resource["job"]["spec"]["tasks"]:
        task.pop("head", None)
    headless = verify_decision.submitted(resource, {}, "demo")
    assert headless["head_task"] == ""
    assert headless["refusal"].startswith("Job demo has no head task"), headless["refusal"]


def test_resume_mode_waits_for_the_resume_directory_and_stops_on_a_scratch_start():
    signals = {"startup": [{"regex": "Ray started"}], "failure": [{"regex": "Traceback"}]}
    normal = verify_decision.signals(signals, "normal", "/c/global_step_6", None, 6)
    assert normal == {"wait_for": ["Ray started"], "stop_on": ["Traceback"]}
    resumed = verify_decision.signals(signals, "resume", "/c/global_step_6", None, 6)
    assert resumed["wait_for"][0] == "Ray started" and "/c/global_step_6" in resumed["wait_for"][1]
    assert resumed["stop_on"][0] == "Traceback" and len(resumed["stop_on"]) > 1


def test_the_next_checkpoint_is_gated_only_when_the_resume_is_confirmed():
    resume = {"mode": "resume", "resume_dir": "/c/global_step_6", "step": 6}
    judged = verify_decision.running(submitted_job(), {}, "demo", "", {}, resume, True)
    assert judged["resume"]["ok"] is False and judged["gated"] is False
    assert verify_decision.running(submitted_job(), {}, "demo", "", {}, {"mode": "normal"}, True)["resume"] == {}


def test_a_report_that_is_not_verified_says_what_to_set():
    judged = verify_decision.running(submitted_job(), {}, "demo", "", {}, {"mode": "normal"}, True)
    made = verify_decision.report("demo", "normal", {"submitted": True}, judged, {}, {}, {"timeout": 30})
    assert made["report"]["ok"] is False
    assert "Raise rlark_verify_wait_timeout (now 30 s)" in made["refusal"]
