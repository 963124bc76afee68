"""rlark_checkpoint_integrity on the live sandbox (hostPath): the guarded stop writes the manifest, resume verifies it.

Checked with independent readers: the manifest file and the step's files are read with open()/hashlib, Jobs are
listed with the kubernetes client.
"""

import hashlib
import json
import os
import time

import pytest
from independent import custom_objects
from playbook_support import Workload, all_output, to_object_storage
from s3_support import s3_client

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"


def sha256_of(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def step_files(step_dir):
    """{path relative to the step: sha256} of every file of the step."""
    out = {}
    for here, _dirs, files in os.walk(step_dir):
        for name in files:
            full = os.path.join(here, name)
            out[os.path.relpath(full, step_dir)] = sha256_of(full)
    return out


def job_names(sandbox):
    api = custom_objects(sandbox.kubeconfig)
    return sorted(j["metadata"]["name"] for j in api.list_cluster_custom_object(GROUP, VERSION, "jobs")["items"])


def flip_middle_byte(path):
    with open(path, "r+b") as fh:
        fh.seek(os.path.getsize(path) // 2)
        byte = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte[0] ^ 0xFF]))


def migrate_and_stop(sandbox, w, saved=None, migrated_job=None, **integrity):
    """Migrate the workload (or with ``migrated_job``, start it as migrated), wait until ``saved()`` (default: two
    local steps), guarded-stop it with ``integrity``."""
    w.start(migrated_job)
    (saved or (lambda: w.wait_steps(2)))()
    stopped = w.play(
        "guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra=dict(rlark_jobs=[w.name], **integrity)
    )
    assert stopped.rc == 0, stopped


def wait_s3_steps(s3, bucket, prefix, count, timeout=150):
    """Until ``count`` global_step_* prefixes exist under ``prefix`` (read with boto3)."""
    deadline = time.monotonic() + timeout
    while True:
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix, Delimiter="/").get("CommonPrefixes") or ()
        if sum(p["Prefix"][len(prefix) :].startswith("global_step_") for p in listed) >= count:
            return
        assert time.monotonic() < deadline, "fewer than %d S3 steps under %s after %ss" % (count, prefix, timeout)
        time.sleep(0.5)


def test_stop_writes_the_manifest_and_resume_refuses_a_changed_checkpoint(sandbox, tmp_path, migrated_job):
    w = Workload(sandbox, tmp_path)
    try:
        migrate_and_stop(sandbox, w, migrated_job=migrated_job, rlark_checkpoint_integrity="write")

        # The stop record names the manifest; the manifest lists every file of the step with its sha256.
        kept = w.records_of("stop")[-1]["data"]["integrity"]
        step_name = kept["step_dir"]
        manifest_path = os.path.join(w.checkpoints, "rlark-integrity", step_name + ".json")
        assert kept["status"] == "written" and kept["path"] == manifest_path, kept
        assert kept["manifest_sha256"] == sha256_of(manifest_path)
        with open(manifest_path) as fh:
            manifest = json.load(fh)
        step_dir = os.path.join(w.checkpoints, step_name)
        expected = step_files(step_dir)
        assert len(expected) >= 2
        assert {f["path"]: f["sha256"] for f in manifest["files"]} == expected

        # One flipped byte in one file of that step: refused before anything is created.
        victim = max(expected, key=lambda rel: os.path.getsize(os.path.join(step_dir, rel)))
        flip_middle_byte(os.path.join(step_dir, victim))
        args, refused, gate = refused_resume(sandbox, w, step_name, w.name + "-ok")
        assert [(p["id"], p["severity"]) for p in gate["findings"] if p["id"].startswith("integrity")] == [
            ("integrity-mismatch", "error")
        ], gate["findings"]
        assert victim in all_output(refused)

        # The byte restored: the same resume creates the Job.
        flip_middle_byte(os.path.join(step_dir, victim))
        assert step_files(step_dir) == expected
        run = w.play("resume.yml", extra=args)
        assert run.rc == 0, [r.get("msg") for _t, r in run.task_results() if r.get("failed")]
        assert args["rlark_resume_name"] in job_names(sandbox)
    finally:
        w.cleanup()


def refused_resume(sandbox, w, step_dir, new):
    """resume.yml -e rlark_checkpoint_integrity=verify of ``step_dir`` as Job ``new``: refused, and no Job made.

    Returns (the extra vars, the run, the result of its last gate task).
    """
    w.created.append(new)
    args = {
        "rlark_resume_source": w.name,
        "rlark_resume_step": int(step_dir.rpartition("_")[2]),
        "rlark_resume_name": new,
        "rlark_checkpoint_integrity": "verify",
    }
    before = job_names(sandbox)
    refused = w.play("resume.yml", extra=args)
    assert refused.rc != 0, refused
    gates = [r for task, r in refused.task_results() if task == "Gate the checkpoint where it lives"]
    assert gates, all_output(refused)[-3000:]
    assert job_names(sandbox) == before, "a refused resume created a Job"
    return args, refused, gates[-1]


def refused_against_the_record(sandbox, w, step_dir, victim, new):
    """The resume is refused for ``victim`` only, with the stop record's manifest as the reference (no file)."""
    gate = refused_resume(sandbox, w, step_dir, new)[2]
    assert gate["integrity"]["path"] is None  # verified against the recorded manifest, not a file
    assert [(p["id"], p["severity"], p["path"]) for p in gate["findings"] if p["id"].startswith("integrity")] == [
        ("integrity-mismatch", "error", victim)
    ], gate["findings"]


def test_the_record_store_keeps_the_manifest_in_the_stop_record_and_resume_verifies_it(sandbox, tmp_path, migrated_job):
    w = Workload(sandbox, tmp_path)
    try:
        migrate_and_stop(
            sandbox,
            w,
            migrated_job=migrated_job,
            rlark_checkpoint_integrity="write",
            rlark_checkpoint_integrity_store="record",
        )

        # Nothing written beside the checkpoints; the record holds the manifest of every file of the step.
        assert not os.path.exists(os.path.join(w.checkpoints, "rlark-integrity"))
        kept = w.records_of("stop")[-1]["data"]["integrity"]
        assert kept["status"] == "returned" and kept["path"] is None, kept
        step_dir = os.path.join(w.checkpoints, kept["step_dir"])
        expected = step_files(step_dir)
        assert {f["path"]: f["sha256"] for f in kept["manifest"]["files"]} == expected

        victim = max(expected, key=lambda rel: os.path.getsize(os.path.join(step_dir, rel)))
        flip_middle_byte(os.path.join(step_dir, victim))
        refused_against_the_record(sandbox, w, kept["step_dir"], victim, w.name + "-rec")
    finally:
        w.cleanup()


def test_on_object_storage_the_stop_record_keeps_the_manifest_and_resume_verifies_it(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path, mutate=to_object_storage)
    s3 = s3_client(sandbox)
    try:
        prefix = "logs/%s/checkpoints/" % w.name
        migrate_and_stop(
            sandbox, w, lambda: wait_s3_steps(s3, sandbox.s3_bucket, prefix, 2), rlark_checkpoint_integrity="write"
        )
        kept = w.records_of("stop")[-1]["data"]["integrity"]
        assert kept["status"] == "returned" and kept["path"] is None, kept
        step_prefix = prefix + kept["step_dir"] + "/"
        objects = {}
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=sandbox.s3_bucket, Prefix=step_prefix):
            for obj in page.get("Contents") or ():
                body = s3.get_object(Bucket=sandbox.s3_bucket, Key=obj["Key"])["Body"].read()
                objects[obj["Key"][len(step_prefix) :]] = body
        assert {f["path"]: f["sha256"] for f in kept["manifest"]["files"]} == {
            rel: hashlib.sha256(body).hexdigest() for rel, body in objects.items()
        }

        # One object rewritten with one byte changed (same size): refused against the recorded manifest.
        victim = max(objects, key=lambda rel: len(objects[rel]))
        changed = bytearray(objects[victim])
        changed[len(changed) // 2] ^= 0xFF
        s3.put_object(Bucket=sandbox.s3_bucket, Key=step_prefix + victim, Body=bytes(changed))
        refused_against_the_record(sandbox, w, kept["step_dir"], victim, w.name + "-s3")
    finally:
        w.cleanup()
