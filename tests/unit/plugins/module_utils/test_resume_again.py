# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 32, item 2: resuming a resumed Job is a normal step, and a step asked for is never ignored."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import render, resume, resume_decision, review
from migration_inputs import example

ROOT = "/data/rlinf/logs/%s/checkpoints/global_step_%d"


def review_of_copy(copy_job, source, manifest, profile, resume_dir, name):
    """What the resume role reviews (resume.yml, "Review the copy like a new submission")."""
    view = resume.review_view(copy_job, source, manifest, profile)
    found = review.review_job(view["job"], manifest, profile)
    found += resume_decision.resume_override_findings(view, resume_dir, name)
    return [f for f in found if f["severity"] == "error"]


def stopped_copy(source, name, resume_dir):
    new, found = resume.copy_job(source, name, stopped=True, resume_dir=resume_dir)
    assert [f for f in found if f["severity"] == "error"] == []
    return new


def test_a_resume_of_a_resumed_job_passes_the_review_with_its_launch_manifest():
    manifest, profile = example("sandbox")
    original = render.render_job(manifest, profile, "demo")
    original["spec"]["stopped"] = True
    first_dir = ROOT % ("demo", 6)
    first = stopped_copy(original, "demo-r6", first_dir)
    assert review_of_copy(first, original, manifest, profile, first_dir, "demo-r6") == []

    second_dir = ROOT % ("demo-r6", 12)
    second, _found = resume.copy_job(first, "demo-r6-r12", resume_dir=second_dir)
    # Before the fix: job-differs-from-records on the head runScript ("instead of editing it by hand").
    assert review_of_copy(second, first, manifest, profile, second_dir, "demo-r6-r12") == []
    third_dir = ROOT % ("demo-r6-r12", 18)
    third, _found = resume.copy_job(stopped_copy(first, "demo-r6-r12", second_dir), "demo-r18", resume_dir=third_dir)
    assert review_of_copy(third, second, manifest, profile, third_dir, "demo-r18") == []


def test_a_resume_of_a_resumed_job_that_changes_more_is_still_refused():
    manifest, profile = example("sandbox")
    original = render.render_job(manifest, profile, "demo")
    first = stopped_copy(original, "demo-r6", ROOT % ("demo", 6))
    second_dir = ROOT % ("demo-r6", 12)
    second, _found = resume.copy_job(first, "demo-r6-r12", resume_dir=second_dir)
    second["spec"]["tasks"][0]["runScript"] += " runner.max_steps=5"
    errors = review_of_copy(second, first, manifest, profile, second_dir, "demo-r6-r12")
    assert [f["id"] for f in errors] == ["job-differs-from-records"], errors


def resume_job(name, step, source="demo"):
    copy_job, _found = resume.copy_job(
        {
            "metadata": {"name": source},
            "spec": {"tasks": [{"name": "actor", "head": True, "runScript": "python t.py"}]},
        },
        name,
        resume_dir=ROOT % (source, step),
    )
    return copy_job


def test_a_step_that_differs_from_the_named_resume_fails_with_both_steps():
    plan = resume.resume_plan("demo", 12, "demo-r6", [resume_job("demo-r6", 6)])
    assert plan["already"]["name"] == "demo-r6"
    refusal = plan["refusal"]
    assert refusal.count("demo is already resumed as demo-r6 from step 6; step 12 was asked") == 1, refusal
    assert refusal.count("rlark_resume_name") == 1 and refusal.count("rlark_resume_step") == 1, refusal


@pytest.mark.parametrize(
    "step,name,already",
    [
        (12, "", None),  # no resume of step 12 yet: it is created (demo-r12)
        ("global_step_12", "", None),
        ("12", "demo-r12-b", None),  # a new name: created
        (6, "", "demo-r6"),  # the same step again: nothing new
        ("global_step_6", "", "demo-r6"),
        ("latest", "", "demo-r6"),
        ("latest", "demo-r6", "demo-r6"),
        (6, "demo-r6", "demo-r6"),
    ],
)
def test_a_step_asked_for_is_created_or_found_never_ignored(step, name, already):
    plan = resume.resume_plan("demo", step, name, [resume_job("demo-r6", 6), resume_job("other-r3", 3, "other")])
    assert plan["refusal"] == ""
    assert (plan["already"] or {}).get("name") == already
    assert plan["step"] == (step if step == "latest" else int(str(step).rsplit("_", 1)[-1]))


def test_a_step_that_is_no_step_is_refused_naming_the_variable():
    plan = resume.resume_plan("demo", "step-12", "", [])
    assert plan["refusal"].count("rlark_resume_step=step-12 is not a step") == 1, plan
