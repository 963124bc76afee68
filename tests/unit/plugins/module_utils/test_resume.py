# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""resume.py: copies keep every pod field; the resume override is single and well-formed."""

import copy
import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import resume
from rlark_fake_api import job

STEP = "/data/rlinf/logs/exp/checkpoints/global_step_200"


@pytest.mark.parametrize(
    "script,expected",
    [
        (
            "python train.py runner.max_steps=10 runner.resume_dir=/old/global_step_5",
            "python train.py runner.max_steps=10 ++runner.resume_dir=" + STEP,
        ),
        (
            "python train.py +runner.resume_dir=/a ++runner.resume_dir='/b c' x=1 runner.resume_dir=\"/c\"",
            "python train.py ++runner.resume_dir=" + STEP + " x=1",
        ),
        (
            "python train.py '++runner.resume_dir=/old' runner.save_interval=5",
            "python train.py ++runner.resume_dir=" + STEP + " runner.save_interval=5",
        ),
        (
            "cd /w && python main.py --config-name ppo actor.lr=1e-5 \\\n  runner.max_steps=9 2>&1 | tee /logs/x",
            "cd /w && python main.py --config-name ppo actor.lr=1e-5 \\\n  runner.max_steps=9 ++runner.resume_dir="
            + STEP
            + " 2>&1 | tee /logs/x",
        ),
        (
            "python -u examples/train.py --config-name a",
            "python -u examples/train.py ++runner.resume_dir=" + STEP + " --config-name a",
        ),
    ],
)
def test_set_resume_override(script, expected):
    assert resume.set_resume_override(script, STEP) == expected


def test_override_is_shell_quoted_when_needed():
    out = resume.set_resume_override("python t.py a.b=1", "/d a/global_step_1")
    assert out == "python t.py a.b=1 '++runner.resume_dir=/d a/global_step_1'"


def test_no_place_for_the_override():
    assert resume.set_resume_override("bash run.sh", STEP) is None


@pytest.mark.parametrize(
    "value,ids",
    [
        (STEP, []),
        ("global_step_3", []),
        (STEP + "/", ["resume-dir-trailing-slash"]),
        ("/x/checkpoints", ["resume-dir-not-step"]),
        ("/x/global_step_3/actor", ["resume-dir-not-step"]),
        ("/x/global_step_", ["resume-dir-not-step"]),
    ],
)
def test_resume_dir_findings(value, ids):
    assert [f["id"] for f in resume.resume_dir_findings(value)] == ids


def full_source():
    src = job(phase="Stopped", stopped=True)
    src["metadata"].update(
        {
            "resourceVersion": "42",
            "uid": "u",
            "generation": 3,
            "creationTimestamp": "t",
            "managedFields": [{}],
            "ownerReferences": [{"kind": "Workflow"}],
            "finalizers": ["x"],
            "labels": {"rlinf.io/workflow": "wf", "team": "rl"},
            "annotations": {"note": "keep"},
        }
    )
    pod = src["spec"]["tasks"][0]["kubernetes"]["workload"]["template"]["spec"]
    pod["containers"][0].update(
        {
            "command": ["bash", "-c"],
            "args": ["x"],
            "resources": {
                "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": 8},
                "limits": {"memory": "64Gi"},
            },
            "readinessProbe": {"exec": {"command": ["true"]}},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "subPath": "rlinf"}],
            "env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
        }
    )
    pod["containers"].append({"name": "sidecar", "image": "busybox:1.36"})
    pod["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    pod["volumes"] = [{"name": "data", "hostPath": {"path": "/data"}}]
    src["spec"]["tasks"][0]["kubernetes"]["workload"]["pvcStorageMap"] = {"ckpt": "rlark-s3"}
    src["spec"]["tasks"][0]["runScript"] = (
        "python train.py runner.max_steps=10 runner.logger.log_path=/data/logs runner.logger.experiment_name=demo"
    )
    src["status"] = {"phase": "Stopped"}
    return src


def test_copy_keeps_everything_but_name_and_override():
    src = full_source()
    original = copy.deepcopy(src)
    new, found = resume.copy_job(src, "demo-r1", resume_dir=STEP)
    assert src == original  # the source is never modified
    assert [f["id"] for f in found] == []
    assert new["metadata"] == {
        "name": "demo-r1",
        "labels": {"team": "rl", "rlark.ops/resumed-from": "demo"},
        "annotations": {
            "note": "keep",
            "rlark.ops/resumed-from": "demo",
            "rlark.ops/resume-step": "200",
            "rlark.ops/resume-dir": STEP,
        },
    }
    assert "status" not in new
    assert new["spec"]["stopped"] is False
    expected = copy.deepcopy(original["spec"])
    expected["stopped"] = False
    # Its own experiment directory, so it never writes into the original's checkpoints.
    expected["tasks"][0]["runScript"] = (
        "python train.py runner.max_steps=10 runner.logger.log_path=/data/logs "
        "++runner.logger.experiment_name=demo-r1 ++runner.resume_dir=" + STEP
    )
    assert new["spec"] == expected


def test_copy_is_not_marked_as_stopped_by_the_sources_guarded_stop():
    src = full_source()
    src["metadata"].setdefault("annotations", {})["rlark.ops/guarded-stop-run"] = "20261202T070000Z-guarded-stop-a"
    new, found = resume.copy_job(src, "demo-r1", resume_dir=STEP)
    assert found == [] and "rlark.ops/guarded-stop-run" not in new["metadata"]["annotations"]
    assert new["metadata"]["annotations"]["note"] == "keep"


def test_copy_stopped_is_explicit_and_names_are_validated():
    new, found = resume.copy_job(job(), "demo-copy", stopped=True)
    assert new["spec"]["stopped"] is True and found == []
    _entries, found = resume.copy_job(job(), "x" * 48)
    assert "task-name-too-long" in [f["id"] for f in found]
    _entries, found = resume.copy_job(job(), "Bad_Name")
    assert "job-name-invalid" in [f["id"] for f in found]
    _entries, found = resume.copy_job(job(), "demo")
    assert "copy-same-name" in [f["id"] for f in found]


def test_copy_warns_about_agent_pvcs():
    _entries, found = resume.copy_job(job(pvc=True), "demo-r1")
    assert {f["id"] for f in found} == {"copy-agent-pvc"}
    assert all(f["severity"] == "warning" for f in found)
    assert "pvc-demo-actor-ckpt" in found[0]["message"] and "new, empty claim" in found[0]["message"]


def test_resume_without_head_or_site_is_an_error():
    src = job()
    for t in src["spec"]["tasks"]:
        t.pop("head", None)
    _entries, found = resume.copy_job(src, "demo-r1", resume_dir=STEP)
    assert [f["id"] for f in found] == ["resume-no-head"]
    src = job()
    src["spec"]["tasks"][0]["runScript"] = "bash /opt/run.sh"
    _entries, found = resume.copy_job(src, "demo-r1", resume_dir=STEP)
    assert [f["id"] for f in found] == ["resume-no-override-site"]


OVERRIDE_FORMS = st.sampled_from(
    [
        "runner.resume_dir=/a/global_step_1",
        "+runner.resume_dir=/b/global_step_2",
        "++runner.resume_dir=/c/global_step_3",
        "'++runner.resume_dir=/d x/global_step_4'",
        'runner.resume_dir="/e/global_step_5"',
    ]
)
OTHER_TOKENS = st.sampled_from(
    ["runner.max_steps=9", "actor.lr=1e-5", "--config-name ppo", "2>&1", "| tee log", "\\\n "]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(OVERRIDE_FORMS, OTHER_TOKENS), max_size=8))
def test_exactly_one_resume_override_whatever_the_script_had(tokens):
    script = "cd /w && python train.py " + " ".join(tokens)
    out = resume.set_resume_override(script, STEP)
    assert out.count("runner.resume_dir") == 1
    assert "++runner.resume_dir=" + STEP in out
    # Everything that was not an override survives in order.
    kept = [t.strip() for t in tokens if "resume_dir" not in t]
    rest = out.replace("++runner.resume_dir=" + STEP, "")
    position = 0
    for token in kept:
        position = rest.index(token, position)


def test_a_copy_placed_on_another_node_changes_only_its_head_selector():
    src = full_source()
    original = copy.deepcopy(src)
    plain, _found = resume.copy_job(src, "demo-r1", resume_dir=STEP)
    placed, found = resume.copy_job(src, "demo-r1", resume_dir=STEP, head_node_selector={"kubernetes.io/hostname": "b"})
    assert src == original and [f["id"] for f in found] == []
    head = resume.jobspec.head_index(placed)
    assert placed["spec"]["tasks"][head]["nodeSelector"] == {"kubernetes.io/hostname": "b"}
    placed["spec"]["tasks"][head]["nodeSelector"] = plain["spec"]["tasks"][head].get("nodeSelector")
    if placed["spec"]["tasks"][head]["nodeSelector"] is None:
        del placed["spec"]["tasks"][head]["nodeSelector"]
    assert placed == plain
