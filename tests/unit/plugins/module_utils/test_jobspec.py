# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""jobspec.py: one head rule for every caller, a walk that tolerates any malformed level."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import jobspec, resume, stop_record
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import location as ckpt_locate


def _task(name, head=None, containers=None, replicas=None):
    task = {"name": name, "kubernetes": {"workload": {"template": {"spec": {"containers": containers or []}}}}}
    if head is not None:
        task["head"] = head
    if replicas is not None:
        task["kubernetes"]["workload"]["replicas"] = replicas
    return task


def test_head_is_the_first_template_with_head_set_like_rlark():
    job = {"spec": {"tasks": [_task("w"), _task("h1", head=True), _task("h2", head=True)]}}
    assert jobspec.head_index(job) == 1
    assert jobspec.head_task(job)["name"] == "h1"


@pytest.mark.parametrize("job", [{"spec": {"tasks": [_task("w"), _task("x", head=False)]}}, {}, None])
def test_no_head_template_means_no_head_for_every_caller(job):
    # RLark sets no ray-head annotation without a head: true template; no caller may guess one.
    assert jobspec.head_index(job) is None
    assert jobspec.head_task(job) == {}
    assert ckpt_locate.head_template(job) == {}
    assert ckpt_locate.checkpoint_root(job)[0] is None


def test_stop_record_and_resume_agree_on_the_head():
    script = "python main.py runner.logger.log_path=/ckpt runner.logger.experiment_name=e"
    job = {"metadata": {"name": "j"}, "spec": {"tasks": [_task("w"), dict(_task("h", head=True), runScript=script)]}}
    copied, _found = resume.copy_job(job, "j-2", resume_dir="/ckpt/e/checkpoints/global_step_4")
    assert "runner.resume_dir" in copied["spec"]["tasks"][1]["runScript"]
    assert "runScript" not in copied["spec"]["tasks"][0]
    assert ckpt_locate.head_template(job)["name"] == "h"
    assert jobspec.head_task(job) is job["spec"]["tasks"][1]
    record = stop_record.build({"job": job})
    assert script in str(record)


@pytest.mark.parametrize(
    "task",
    [None, {}, {"kubernetes": None}, {"kubernetes": {"workload": []}}, {"kubernetes": {"workload": {"template": "x"}}}],
)
def test_malformed_levels_read_as_empty(task):
    assert jobspec.pod_spec(task) == {}
    assert jobspec.containers(task) == []
    assert jobspec.main_container(task) == {}
    assert jobspec.volumes(task) == []
    assert jobspec.replicas(task) == 1


def test_main_container_is_named_main_else_the_first():
    task = _task("h", containers=[{"name": "side"}, {"name": "main", "image": "i"}], replicas=0)
    assert jobspec.main_container(task)["image"] == "i"
    assert jobspec.replicas(task) == 0
    assert jobspec.main_container(_task("h", containers=[{"name": "a"}]))["name"] == "a"
    init = dict(task)
    init["kubernetes"]["workload"]["template"]["spec"]["initContainers"] = [{"name": "init"}]
    assert [c["name"] for c in jobspec.containers(init, init=True)] == ["side", "main", "init"]


def test_api_version_is_the_one_the_client_talks_to():
    from ansible_collections.rlark.ops.plugins.module_utils import kube, render

    assert jobspec.API_VERSION == "rlinf.io/v1alpha1"
    assert kube.API_PREFIX == "/apis/rlinf.io/v1alpha1"
    assert render.API_VERSION == jobspec.API_VERSION


def test_live_object_names_and_labels():
    pod = {"metadata": {"labels": {"rlark.io/task-name": "demo-actor", "rlark.io/local-pod-name": "demo-actor-0"}}}
    assert (jobspec.pod_task_name(pod), jobspec.pod_local_name(pod)) == ("demo-actor", "demo-actor-0")
    for broken in ({}, {"metadata": None}, {"metadata": {"labels": None}}, None):
        assert (jobspec.pod_task_name(broken), jobspec.pod_local_name(broken)) == (None, None)
    assert jobspec.task_object_name("demo", "actor") == "demo-actor"
    assert jobspec.agent_claim_name("demo", "actor", "ckpt") == "pvc-demo-actor-ckpt"
