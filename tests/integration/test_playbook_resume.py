"""resume.yml on the live sandbox: the new Job writes to its own directory and never touches the old run.

Checked with readers independent of the collection: the original's checkpoint tree is hashed with
os.walk/hashlib (hostPath) or boto3 (the real S3 server) before the resume and again after the NEW
Job has written two checkpoints of its own; Jobs are counted with the kubernetes client.
"""

import hashlib
import json
import os
import re
import threading
import time

import pytest
from independent import custom_objects
from playbook_support import Workload, all_output, failed_messages, to_object_storage, without_server_fields
from s3_support import s3_client

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"
STEP = re.compile(r"^global_step_(\d+)$")


def local_tree_hashes(root):
    """{relative path: sha256} of every file below root, plus every directory (value None)."""
    out = {}
    for here, dirs, files in os.walk(root):
        rel = os.path.relpath(here, root)
        for d in dirs:
            out[os.path.normpath(os.path.join(rel, d))] = None
        for name in files:
            with open(os.path.join(here, name), "rb") as fh:
                out[os.path.normpath(os.path.join(rel, name))] = hashlib.sha256(fh.read()).hexdigest()
    return out


def s3_tree_hashes(s3, bucket, prefix):
    """{key: (size, ETag, sha256 of the body)} of every key below prefix (every page)."""
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix.rstrip("/") + "/"):
        for obj in page.get("Contents") or []:
            body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
            out[obj["Key"]] = (obj["Size"], obj["ETag"], hashlib.sha256(body).hexdigest())
    return out


def step_numbers(names):
    return sorted(int(m.group(1)) for m in (STEP.match(n) for n in names) if m)


def local_steps(root):
    return step_numbers(os.listdir(root)) if os.path.isdir(root) else []


def s3_steps(s3, bucket, prefix):
    names = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix.rstrip("/") + "/"):
        for obj in page.get("Contents") or []:
            names.add(obj["Key"][len(prefix.rstrip("/")) + 1 :].split("/", 1)[0])
    return step_numbers(names)


def wait_for(what, check, timeout=150):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting for %s" % what
        time.sleep(0.5)


@pytest.fixture(scope="module")
def jobs_api(sandbox):
    return custom_objects(sandbox.kubeconfig)


def job_names(jobs_api):
    return sorted(j["metadata"]["name"] for j in jobs_api.list_cluster_custom_object(GROUP, VERSION, "jobs")["items"])


def log_of(sandbox, job):
    path = os.path.join(sandbox.logs_dir, job, "%s-actor-0.log" % job)
    if not os.path.exists(path):
        return ""
    with open(path) as fh:
        return fh.read()


def migrate_and_stop(w, sandbox, steps, migrated_job=None):
    """Migrate (or with ``migrated_job``, start as migrated), wait until ``steps()``, guarded stop."""
    w.start(migrated_job)
    steps()
    stopped = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra={"rlark_jobs": [w.name]})
    assert stopped.rc == 0, stopped
    return json.dumps(without_server_fields(w.info()["job"]), sort_keys=True)


def test_resume_from_an_older_step_never_touches_the_original(sandbox, tmp_path, jobs_api):
    w = Workload(sandbox, tmp_path)
    try:
        original = migrate_and_stop(w, sandbox, lambda: w.wait_steps(3))
        orig_steps = w.steps()
        assert len(orig_steps) >= 3, orig_steps

        # A checkpoint cut off in the middle of its DCP shards is refused before anything exists.
        partial = os.path.join(w.checkpoints, "global_step_999", "actor", "dcp_checkpoint")
        os.makedirs(partial)
        with open(os.path.join(partial, "__0_0.distcp"), "wb") as fh:
            fh.write(b"PK\x03\x04 cut off")
        before_jobs = job_names(jobs_api)
        refused = w.play("resume.yml", extra={"rlark_resume_source": w.name, "rlark_resume_step": 999})
        assert refused.rc != 0 and "not complete" in all_output(refused), refused
        assert job_names(jobs_api) == before_jobs, "a refused resume created a Job"

        # Check mode says what it would do and is no verification failure; it creates nothing.
        step = orig_steps[-2]  # an OLDER step while a newer one exists
        new = w.name + "-again"
        w.created.append(new)
        args = {"rlark_resume_source": w.name, "rlark_resume_step": step, "rlark_resume_name": new}
        checked = w.play("resume.yml", extra=args, check=True)
        assert checked.rc == 0, checked
        assert "would create %s from step %d (checks passed)" % (new, step) in all_output(checked)
        assert "verified: False" not in all_output(checked)
        assert job_names(jobs_api) == before_jobs

        tree_before = local_tree_hashes(w.checkpoints)
        run = w.play("resume.yml", extra=args)
        assert run.rc == 0, run
        resume_dir = "/data/rlinf/logs/%s/checkpoints/global_step_%d" % (w.name, step)
        # The new Job has written two checkpoints (its third save has started), wherever it writes them.
        wait_for("the new Job's third save", lambda: log_of(sandbox, new).count("Saving checkpoint at step") >= 3)

        # The original's tree: byte-identical, and no new file or directory in it.
        assert local_tree_hashes(w.checkpoints) == tree_before
        assert local_steps(w.checkpoints) == sorted(orig_steps + [999])

        # Its checkpoints are in its own directory, continuing after N.
        new_root = os.path.join(sandbox.nodes_dir, "a100-01", "data", "rlinf", "logs", new, "checkpoints")
        new_steps = local_steps(new_root)
        assert len(new_steps) >= 2 and new_steps[0] == (step // 3 + 1) * 3, new_steps  # next multiple of 3 above N
        log = log_of(sandbox, new)
        assert "Resuming training from checkpoint directory %s." % resume_dir in log
        assert re.findall(r"Global Step: (\d+)/", log)[0] == str(step + 1)
        assert "Training from scratch" not in log
        out = all_output(run)
        # The plan is printed before acting: step, checkpoint path, new Job and its own directory.
        assert "Resuming %s from step %d: checkpoint %s" % (w.name, step, resume_dir) in out
        assert "new Job %s writes to its own directory /data/rlinf/logs/%s/checkpoints" % (new, new) in out

        verify = w.records_of("verify", job=new)[-1]["data"]
        assert verify["ok"] and verify["resume"]["first_step"] == step + 1, verify
        assert verify["next_checkpoint"]["checkpoint"].startswith(
            os.path.join(sandbox.nodes_dir, "a100-01", "data", "rlinf", "logs", new)
        ), verify["next_checkpoint"]
        record = w.records_of("resume")[-1]["data"]
        assert record["resume_dir"] == resume_dir and record["new_job"] == new
        assert set(record["original_tree"]["files"]) == {k for k, v in tree_before.items() if v is not None}
        proof = w.records_of("resume-proof")[-1]["data"]
        assert proof["diff"]["same"] is True and proof["findings"] == []

        after = w.info()
        assert json.dumps(without_server_fields(after["job"]), sort_keys=True) == original
        assert after["job"]["spec"]["stopped"] is True and after["pods"] == []
        marks = jobs_api.get_cluster_custom_object(GROUP, VERSION, "jobs", new)["metadata"]
        assert marks["labels"]["rlark.ops/resumed-from"] == w.name
        assert marks["annotations"]["rlark.ops/resume-step"] == str(step)

        # A second run, with the same arguments or with the defaults: nothing new, changed=0, names the Job.
        jobs_now = job_names(jobs_api)
        for again_args in (args, {"rlark_resume_source": w.name}):
            again = w.play("resume.yml", extra=again_args)
            assert again.rc == 0, again
            assert again.stats["localhost"]["changed"] == 0, again.stats
            assert "already resumed as %s from step %d" % (new, step) in all_output(again)
            assert job_names(jobs_api) == jobs_now
    finally:
        w.cleanup()


def test_a_write_into_the_original_stops_only_the_new_job(sandbox, tmp_path, jobs_api, migrated_job):
    w = Workload(sandbox, tmp_path)
    try:
        original = migrate_and_stop(w, sandbox, lambda: w.wait_steps(2), migrated_job)
        step = w.steps()[0]
        new = w.name + "-tamper"
        w.created.append(new)
        stray = os.path.join(w.checkpoints, "global_step_%d" % step, "actor", "stray.pt")

        def tamper():
            # Once the new Job trains, something else writes into the original's tree.
            wait_for("the new Job to train", lambda: "Global Step:" in log_of(sandbox, new), timeout=300)
            with open(stray, "wb") as fh:
                fh.write(b"not from the original run")

        writer = threading.Thread(target=tamper, daemon=True)
        writer.start()
        run = w.play(
            "resume.yml", extra={"rlark_resume_source": w.name, "rlark_resume_step": step, "rlark_resume_name": new}
        )
        writer.join(timeout=5)
        assert run.rc != 0, run
        out = all_output(run)
        assert "resume-original-changed" in out and "global_step_%d/actor/stray.pt" % step in out, out[-3000:]
        proof = w.records_of("resume-proof")[-1]["data"]
        assert [(f["id"], f["severity"]) for f in proof["findings"]] == [("resume-original-changed", "error")]
        assert proof["diff"]["appeared"] == ["global_step_%d/actor/stray.pt" % step], proof["diff"]
        assert "failed verification and was stopped" in out
        stopped = jobs_api.get_cluster_custom_object(GROUP, VERSION, "jobs", new)
        assert stopped["spec"]["stopped"] is True
        assert json.dumps(without_server_fields(w.info()["job"]), sort_keys=True) == original
        assert os.path.exists(stray), "nothing is deleted or restored"
    finally:
        w.cleanup()


def test_resume_on_object_storage_never_touches_the_original_prefix(sandbox, tmp_path, jobs_api):
    w = Workload(sandbox, tmp_path, mutate=to_object_storage)
    s3 = s3_client(sandbox)
    prefix = "logs/%s/checkpoints" % w.name
    try:
        migrate_and_stop(
            w, sandbox, lambda: wait_for("three S3 steps", lambda: len(s3_steps(s3, sandbox.s3_bucket, prefix)) >= 3)
        )
        orig_steps = s3_steps(s3, sandbox.s3_bucket, prefix)
        step = orig_steps[-2]
        new = w.name + "-r"
        w.created.append(new)
        before = s3_tree_hashes(s3, sandbox.s3_bucket, prefix)
        run = w.play(
            "resume.yml", extra={"rlark_resume_source": w.name, "rlark_resume_step": step, "rlark_resume_name": new}
        )
        assert run.rc == 0, run
        new_prefix = "logs/%s/checkpoints" % new
        new_steps = wait_for(
            "three steps under the new prefix",
            lambda: (
                len(s3_steps(s3, sandbox.s3_bucket, new_prefix)) >= 3 and s3_steps(s3, sandbox.s3_bucket, new_prefix)
            ),
        )
        assert new_steps[0] > step
        assert s3_tree_hashes(s3, sandbox.s3_bucket, prefix) == before  # same keys, sizes, ETags and bytes
        proof = w.records_of("resume-proof")[-1]["data"]
        assert proof["diff"]["same"] is True and proof["original_tree"]["files"] == len(before)
    finally:
        w.cleanup()


def failed(run):
    """Every failed task's msg, as the operator sees them, as one text."""
    return "\n".join(failed_messages(run))


def test_a_resumed_job_resumes_again_and_a_step_asked_for_is_never_ignored(sandbox, tmp_path, jobs_api, migrated_job):
    """Issue 32, items 2 and 3, through resume.yml with the launch manifest and deployment profile given."""
    w = Workload(sandbox, tmp_path)
    try:
        migrate_and_stop(w, sandbox, lambda: w.wait_steps(2), migrated_job)
        steps = w.steps()
        before_jobs = job_names(jobs_api)
        # Item 3: a step that does not exist is no step, not an incomplete one.
        missing = w.play("resume.yml", extra={"rlark_resume_source": w.name, "rlark_resume_step": 999})
        shown = failed(missing)
        assert missing.rc != 0 and shown.count("no step 999 under %s (newest %d)" % (w.checkpoints, steps[-1])) == 1
        assert "not complete" not in shown and shown.count("rlark_resume_step") == 1, shown
        assert job_names(jobs_api) == before_jobs

        # Item 3: RLinf's directory name is a step; the resume is <source>-r<N>.
        first = "%s-r%d" % (w.name, steps[0])
        w.created.append(first)
        run = w.play(
            "resume.yml", extra={"rlark_resume_source": w.name, "rlark_resume_step": "global_step_%d" % steps[0]}
        )
        assert run.rc == 0, run
        assert jobs_api.get_cluster_custom_object(GROUP, VERSION, "jobs", first)["metadata"]["annotations"][
            "rlark.ops/resume-step"
        ] == str(steps[0])

        # Item 2: another step with that resume's name fails naming both steps.
        other = {"rlark_resume_source": w.name, "rlark_resume_step": steps[1]}
        named = w.play("resume.yml", extra=dict(other, rlark_resume_name=first))
        shown = failed(named)
        asked = "%s is already resumed as %s from step %d; step %d was asked" % (w.name, first, steps[0], steps[1])
        assert named.rc != 0 and shown.count(asked) == 1, shown

        # The resume is stopped (a long training's next step, and its GPUs are free again).
        stopped = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra={"rlark_jobs": [first]})
        assert stopped.rc == 0, stopped
        # Item 2: without a name, the step asked for is created (check mode: every check, nothing created).
        checked = w.play("resume.yml", extra=other, check=True)
        assert checked.rc == 0, failed(checked) or checked
        assert "would create %s-r%d from step %d (checks passed)" % (w.name, steps[1], steps[1]) in all_output(checked)

        # Item 2: the resumed Job resumes again with the same launch manifest (check mode: the review of the copy).
        again = w.play("resume.yml", extra={"rlark_resume_source": first}, check=True)
        assert again.rc == 0, failed(again) or again
        assert "would create %s-r" % first in all_output(again)
        assert "job-differs-from-records" not in all_output(again)
    finally:
        w.cleanup()
