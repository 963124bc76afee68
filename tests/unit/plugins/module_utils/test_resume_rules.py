# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resume copies, their review view and their marks, pinned where careless changes slipped through (issue 26)."""

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import resume
from rlark_fake_api import job

STEP = "/data/rlinf/logs/exp/checkpoints/global_step_200"
LOGGER = "python train.py runner.max_steps=10 runner.logger.log_path=/data/logs runner.logger.experiment_name=demo"


def with_script(script, name="demo"):
    src = job(name=name)
    src["spec"]["tasks"][0]["runScript"] = script
    return src


# ------------------------------------------------------------------ where a copy writes
def test_experiment_key_by_where_the_checkpoint_root_comes_from():
    assert resume.experiment_key(with_script(LOGGER)) == "runner.logger.experiment_name"
    script = "python train.py runner.output_dir=/o runner.experiment_name=e"
    assert resume.experiment_key(with_script(script)) == "runner.experiment_name"
    # A root given only as a directory gets its experiment key added beside it.
    assert resume.experiment_key(with_script("python train.py runner.output_dir=/o")) == "runner.experiment_name"
    assert resume.experiment_key(with_script("python train.py runner.logger.log_path=/l")) == (
        "runner.logger.experiment_name"
    )
    assert resume.experiment_key(with_script("python train.py runner.max_steps=1")) is None


def test_a_copy_that_cannot_get_its_own_output_says_where():
    _new, found = resume.copy_job(with_script("python train.py runner.max_steps=1"), "demo-r1", resume_dir=STEP)
    assert [(f["id"], f["path"]) for f in found] == [("resume-output-unknown", "spec.tasks[0].runScript")]
    _new, found = resume.copy_job(with_script("bash run.sh"), "demo-r1", resume_dir=STEP)
    assert [(f["id"], f["path"]) for f in found] == [("resume-no-override-site", "spec.tasks[0].runScript")]


def test_resume_dir_message_quotes_the_value():
    [found] = resume.resume_dir_findings("/x/checkpoints")
    assert found["message"] == "resume_dir '/x/checkpoints' does not end in global_step_<N>."


def test_same_name_is_compared_by_value():
    name = "".join(["de", "mo"])  # an equal name that is not the same object (as decoded from JSON)
    _new, found = resume.copy_job(job(), name)
    assert [f["id"] for f in found] == ["copy-same-name"]


def test_a_named_claim_is_shared_not_renewed():
    src = job(pvc=True)
    for task in src["spec"]["tasks"]:
        task["kubernetes"]["workload"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = "ck"
    _new, found = resume.copy_job(src, "demo-r1")
    assert found[0]["message"] == (
        "Volume 'ckpt' of task 'actor' uses claim 'ck', which the agent may have created for the source: the copy "
        "shares it only while it exists in the same cluster, and deleting the source deletes it."
    )


# ------------------------------------------------------------------ what the review sees of a copy
def copy_of(src, extra=""):
    new, found = resume.copy_job(src, "demo-r1", resume_dir=STEP)
    assert [f["id"] for f in found] == []
    new["spec"]["tasks"][0]["runScript"] += extra
    return new


def test_review_view_of_an_intended_copy_is_the_source_script():
    src = with_script(LOGGER + " runner.save_interval=5")
    view = resume.review_view(copy_of(src), src)
    assert view["job"]["spec"]["tasks"][0]["runScript"] == src["spec"]["tasks"][0]["runScript"]
    assert view["job"]["metadata"]["name"] == "demo"
    assert (view["resume_dirs"], view["experiment_key"], view["experiment"]) == (
        [STEP],
        "runner.logger.experiment_name",
        "demo-r1",
    )


def test_review_view_of_a_copy_changed_otherwise_keeps_the_change_without_resume_dir():
    src = with_script(LOGGER)
    for extra in (" zz.after=1", " aa.before=1"):  # sorting after and before the intended script
        copy_job = copy_of(src, extra)
        script = resume.review_view(copy_job, src)["job"]["spec"]["tasks"][0]["runScript"]
        assert extra in script and "resume_dir" not in script and "experiment_name=demo-r1" in script


def test_review_view_without_a_head_in_the_copy_or_the_source():
    headless = job()
    for task in headless["spec"]["tasks"]:
        task.pop("head", None)
    assert resume.review_view(copy.deepcopy(headless), job()) == {
        "job": headless,
        "resume_dirs": [],
        "experiment_key": None,
        "experiment": None,
    }
    view = resume.review_view(copy_of(with_script(LOGGER)), headless)
    assert "resume_dir" not in view["job"]["spec"]["tasks"][0]["runScript"]
    assert view["resume_dirs"] == [STEP]


# ------------------------------------------------------------------ marks a resume Job carries
def test_resume_marks_from_label_or_annotation():
    new = copy_of(with_script(LOGGER))
    assert resume.resume_marks(new) == {"name": "demo-r1", "source": "demo", "step": 200, "resume_dir": STEP}
    label_only = {"metadata": {"name": "r", "labels": {resume.RESUMED_FROM: "demo"}}}
    assert resume.resume_marks(label_only) == {"name": "r", "source": "demo", "step": None, "resume_dir": None}
    ann_only = {"metadata": {"name": "r", "annotations": {resume.RESUMED_FROM: "demo", resume.RESUME_STEP: "x"}}}
    assert resume.resume_marks(ann_only)["source"] == "demo" and resume.resume_marks(ann_only)["step"] is None
    assert resume.resume_marks(job()) is None
    assert resume.resume_marks(None) is None


def test_messages_of_a_bad_resume_dir_and_of_a_script_without_a_site():
    [found] = resume.resume_dir_findings(STEP + "/")
    assert found["message"] == (
        "resume_dir %r ends with '/'; RLinf derives the step from the last path component." % (STEP + "/")
    )
    _new, found = resume.copy_job(with_script("bash run.sh"), "demo-r1", resume_dir=STEP)
    assert (
        found[0]["message"] == "The head runScript has no Hydra override or *.py argument to add runner.resume_dir to."
    )


def test_only_the_same_name_is_refused_not_one_that_sorts_before_it():
    for name in ("abc", "demo-r1", "zzz"):
        _new, found = resume.copy_job(job(), name)
        assert found == [], name


def test_review_view_of_a_copy_of_a_resume_without_an_experiment_key():
    # The source already resumed (its own resume_dir) and says nothing of where it writes: the copy's
    # override replaces the source's in place, and the review judges the source's script unchanged.
    src = with_script("python train.py runner.max_steps=1 runner.resume_dir=/old/global_step_5")
    new, found = resume.copy_job(src, "demo-r1", resume_dir=STEP)
    assert [f["id"] for f in found] == ["resume-output-unknown"]
    view = resume.review_view(new, src)
    assert view["experiment_key"] is None
    assert view["job"]["spec"]["tasks"][0]["runScript"] == src["spec"]["tasks"][0]["runScript"]
