"""Resume continuity on the live sandbox: the old run's logged metrics are the oracle for the resumed Job.

The simulated trainer logs RLinf's per-step metric tables as a function of (seed, trained steps); its fault
switches make a resume silently restart (SIM_TRAINER_FAULT=ignore-resume-dir) or load another step
(load-other-step). Outcomes are read independently: Jobs with the kubernetes client, checkpoint trees with
os.walk/hashlib, logs and records as plain files.
"""

import hashlib
import json
import os
import re

import pytest
from independent import custom_objects
from playbook_support import Workload, all_output
from test_playbook_resume import local_tree_hashes, log_of, wait_for

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"
TABLE_STEP = re.compile(r"│\s*Global Step:\s*(\d+)/")


@pytest.fixture(scope="module")
def jobs_api(sandbox):
    return custom_objects(sandbox.kubeconfig)


def with_env(**env):
    def mutate(manifest, _profile):
        role = next(r for r in manifest["roles"] if r.get("head"))
        role["env"] = [e for e in role.get("env") or [] if e["name"] not in env]
        role["env"] += [{"name": k, "value": str(v), "source": "continuity test"} for k, v in env.items()]

    return mutate


def job_fingerprint(jobs_api, name):
    """sha256 of the Job's spec and its metadata.generation, as the API server returns them."""
    job = jobs_api.get_cluster_custom_object(GROUP, VERSION, "jobs", name)
    blob = json.dumps({"spec": job["spec"], "generation": job["metadata"]["generation"]}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def tables(text):
    """{step: the table's metric rows} by plain text: the rows between a step's header and its bottom border,
    without the clock row and the Time section (timings differ between any two runs)."""
    out, rows, step, skip = {}, None, None, False
    for line in text.splitlines():
        found = TABLE_STEP.search(line)
        if found:
            step, rows, skip = int(found.group(1)), [], False
            continue
        if rows is None:
            continue
        if "╰" in line:
            out[step], rows = rows, None
        elif "├" in line:
            skip = " Time " in line
        elif not skip and "Step Time:" not in line:
            rows.append(line)
    return out


def migrate_and_stop(w, sandbox, steps, pick=None, migrated_job=None):
    """Migrate (or with ``migrated_job``, start as migrated), wait, guarded stop; with ``pick`` (an index into the
    checkpoints), the step to resume from and the name of the Job that resume will create."""
    w.start(migrated_job)
    steps()
    stopped = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra={"rlark_jobs": [w.name]})
    assert stopped.rc == 0, stopped
    if pick is None:
        return None
    step = w.steps()[pick]
    w.created.append("%s-r%d" % (w.name, step))
    return step, w.created[-1]


def resumed_job(jobs_api, w):
    """The Job a resume without rlark_resume_step created, found with the kubernetes client: (step, name).

    The resume takes the newest complete checkpoint; the directory listing may also hold a save the stop cut
    short, so the step is read from the one new Job's name, not from the listing.
    """
    prefix = w.name + "-r"
    jobs = jobs_api.list_cluster_custom_object(GROUP, VERSION, "jobs")["items"]
    names = [j["metadata"]["name"] for j in jobs if j["metadata"]["name"].startswith(prefix)]
    w.created.extend(n for n in names if n not in w.created)
    assert len(names) == 1, names
    return int(names[0][len(prefix) :]), names[0]


def new_root(sandbox, new):
    return os.path.join(sandbox.nodes_dir, "a100-01", "data", "rlinf", "logs", new, "checkpoints")


def test_a_correct_resume_is_continuity_exact(sandbox, tmp_path, jobs_api, migrated_job):
    w = Workload(sandbox, tmp_path)
    try:
        # An older step: the old run logged the steps after it.
        step, new = migrate_and_stop(w, sandbox, lambda: w.wait_steps(2), pick=-2, migrated_job=migrated_job)
        lost = w.records_of("stop")[-1]["data"]["lost_work"]
        assert lost["steps_after_checkpoint"] >= 0 and lost["seconds_from"], lost
        run = w.play("resume.yml", extra={"rlark_resume_source": w.name, "rlark_resume_step": step})
        assert run.rc == 0, run
        continuity = w.records_of("verify", job=new)[-1]["data"]["resume"]["continuity"]
        assert continuity["verdict"] == "continuity-exact", continuity
        assert continuity["compared_steps"][0] == step + 1
        assert "continuity: continuity-exact" in all_output(run)
        # Independently: the old run's exported head log and the new Job's log hold the same tables.
        old_log = next(
            os.path.join(d, f)
            for d, _dirs, files in os.walk(os.path.join(w.records, w.name))
            for f in files
            if f == "log-%s-actor-0.log" % w.name
        )
        with open(old_log) as fh:
            old = tables(fh.read())
        mine = tables(log_of(sandbox, new))
        both = sorted(s for s in old if s > step and s in mine)
        assert both and both == continuity["compared_steps"], (both, continuity)
        assert all(old[s] == mine[s] for s in both)
        sentinel = w.records_of("resume-sentinel", job=new)[-1]
        assert sentinel["outcome"] == "continues" and sentinel["data"]["first_step"] == step + 1
        # verify.yml alone judges the same continuity when told the original (its stop record is the reference).
        resume_dir = "/data/rlinf/logs/%s/checkpoints/global_step_%d" % (w.name, step)
        again = w.play(
            "verify.yml", extra={"rlark_job_name": new, "rlark_resume_dir": resume_dir, "rlark_resume_source": w.name}
        )
        assert again.rc == 0, again
        assert "continuity: continuity-exact" in all_output(again)
        assert w.records_of("verify", job=new)[-1]["data"]["resume"]["continuity"]["verdict"] == "continuity-exact"
    finally:
        w.cleanup()


def test_a_restart_from_scratch_is_stopped_before_its_first_save(sandbox, tmp_path, jobs_api):
    w = Workload(sandbox, tmp_path, mutate=with_env(SIM_TRAINER_FAULT="ignore-resume-dir"))
    try:
        migrate_and_stop(w, sandbox, lambda: w.wait_steps(2))
        before_job = job_fingerprint(jobs_api, w.name)
        before_tree = local_tree_hashes(w.checkpoints)
        run = w.play("resume.yml", extra={"rlark_resume_source": w.name})
        assert run.rc != 0, run
        step, new = resumed_job(jobs_api, w)
        assert step in w.steps(), (step, w.steps())
        out = all_output(run)
        assert "resume-restarted-from-scratch" in out and "was not touched" in out
        sentinel = w.records_of("resume-sentinel", job=new)[-1]
        assert [(f["id"], f["severity"]) for f in sentinel["data"]["findings"]] == [
            ("resume-restarted-from-scratch", "error")
        ]
        assert (sentinel["data"]["first_step"], sentinel["data"]["expected_first_step"]) == (1, step + 1)
        assert sentinel["data"]["saved_before_decision"] is False
        assert jobs_api.get_cluster_custom_object(GROUP, VERSION, "jobs", new)["spec"]["stopped"] is True
        # Stopped before its first save: no checkpoint in its own directory, no save line in its log.
        root = new_root(sandbox, new)
        assert not os.path.isdir(root) or not [d for d in os.listdir(root) if d.startswith("global_step_")]
        assert "Saving checkpoint at step" not in log_of(sandbox, new)
        # The original: the same spec and generation, and a byte-identical checkpoint tree.
        assert job_fingerprint(jobs_api, w.name) == before_job
        assert local_tree_hashes(w.checkpoints) == before_tree
    finally:
        w.cleanup()


def test_a_resume_that_loads_another_step_breaks_continuity(sandbox, tmp_path, jobs_api):
    w = Workload(sandbox, tmp_path, mutate=with_env(SIM_TRAINER_FAULT="load-other-step"))
    try:
        # The trainer loads the step below the one named instead.
        step, new = migrate_and_stop(w, sandbox, lambda: w.wait_steps(3), pick=-2)
        before_tree = local_tree_hashes(w.checkpoints)
        run = w.play("resume.yml", extra={"rlark_resume_source": w.name, "rlark_resume_step": step})
        assert run.rc != 0, run
        verify = w.records_of("verify", job=new)[-1]["data"]
        continuity = verify["resume"]["continuity"]
        assert continuity["verdict"] == "continuity-broken", continuity
        first = continuity["first_difference"]
        assert first["step"] == step + 1 and first["metric"].startswith(("Rollout/", "Training/Actor/")), first
        broken = [f for f in verify["findings"] if f["id"] == "continuity-broken"]
        assert [(f["severity"], f["step"], f["metric"]) for f in broken] == [("error", step + 1, first["metric"])]
        out = all_output(run)
        assert "at step %d: %s was" % (step + 1, first["metric"]) in out
        assert jobs_api.get_cluster_custom_object(GROUP, VERSION, "jobs", new)["spec"]["stopped"] is True
        assert local_tree_hashes(w.checkpoints) == before_tree
    finally:
        w.cleanup()


def test_a_stop_exactly_at_the_checkpoint_is_unverifiable_not_a_pass(sandbox, tmp_path, jobs_api):
    # The old run hangs after logging step 6 (its second save): its log ends exactly at the checkpoint.
    w = Workload(sandbox, tmp_path, mutate=with_env(SIM_STALL_AFTER_STEP=6))
    try:
        migrate_and_stop(
            w, sandbox, lambda: wait_for("step 6 logged", lambda: "Global Step: 6/" in log_of(sandbox, w.name), 120)
        )
        lost = w.records_of("stop")[-1]["data"]["lost_work"]
        assert lost["steps_after_checkpoint"] == 0 and lost["continuity_window"] is None, lost
        run = w.play("resume.yml", extra={"rlark_resume_source": w.name})
        assert run.rc == 0, run
        assert resumed_job(jobs_api, w) == (6, "%s-r6" % w.name)
        new = "%s-r6" % w.name
        verify = w.records_of("verify", job=new)[-1]["data"]
        assert verify["resume"]["continuity"]["verdict"] == "continuity-unverifiable"
        assert [(f["id"], f["severity"]) for f in verify["findings"] if f["id"].startswith("continuity")] == [
            ("continuity-unverifiable", "warning")
        ]
        assert "continuity: continuity-unverifiable" in all_output(run)
    finally:
        w.cleanup()
