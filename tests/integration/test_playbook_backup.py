"""rlark_checkpoint_backup_* on the live sandbox (hostPath checkpoints): the guarded stop proves the backup.

The backup targets are the sandbox's second bucket (versitygw) and a directory on the node host. Backups are
prepared and damaged with boto3 / plain file writes, outcomes read with boto3, os.walk, hashlib and the
kubernetes client - never with the collection's own readers.
"""

import hashlib
import json
import os
import shutil
import time

import pytest
import yaml
from independent import custom_objects
from kubernetes import client
from playbook_support import Workload, failed_messages
from refusals import task_result
from s3_support import s3_client

pytestmark = pytest.mark.sandbox
GROUP, VERSION = "rlinf.io", "v1alpha1"
STOP_TASK = "Check, record and stop the Job (one transaction)"
LAST_STEP = 6  # runner.max_steps: saves at 3 and 6, then the run stays up and writes nothing more
STEP = "global_step_%d" % LAST_STEP
# dual-01 is a hostname in rlark-a100 and (cordoned) in rlark-h100: the GPU product names the A100 one.
PLACE = {"kubernetes.io/hostname": "dual-01", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}


def finite(manifest, _profile):
    for o in manifest["hydra"]["overrides"]:
        if o["override"].startswith("runner.max_steps="):
            o["override"] = "runner.max_steps=%d" % LAST_STEP


def files_of(top):
    """{rel: bytes} of every file under ``top``."""
    out = {}
    for here, _dirs, names in os.walk(top):
        for name in names:
            with open(os.path.join(here, name), "rb") as fh:
                out[os.path.relpath(os.path.join(here, name), top)] = fh.read()
    return out


def sha(data):
    return hashlib.sha256(data).hexdigest()


def stopped(sandbox, name):
    api = custom_objects(sandbox.kubeconfig)
    jobs = api.list_cluster_custom_object(GROUP, VERSION, "jobs", field_selector="metadata.name=" + name)["items"]
    return bool(jobs[0]["spec"].get("stopped"))


def migrated(w):
    """Migrate, then wait until STEP exists and nothing was written under it for 2 s (the run saves no more).

    Returns (its directory, {rel: bytes} of its files)."""
    assert w.play("migrate.yml").rc == 0
    step = os.path.join(w.checkpoints, STEP)
    deadline = time.monotonic() + 150
    while True:
        times = [os.stat(os.path.join(h, n)).st_mtime for h, _d, ns in os.walk(step) for n in ns]
        if len(times) >= 2 and time.time() - max(times) > 2:
            return step, files_of(step)
        assert time.monotonic() < deadline, "step %d not saved and quiet in time" % LAST_STEP
        time.sleep(0.2)


def stop(sandbox, w, **backup):
    extra = dict(rlark_jobs=[w.name], rlark_checkpoint_integrity="write", rlark_checkpoint_integrity_store="record")
    extra.update(backup)
    run = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator, extra=extra)
    return run, task_result(run, STOP_TASK)


def assert_refused(sandbox, w, run, result, finding_id, path, first_only=False):
    assert run.rc != 0 and result["outcome"]["outcome"] == "refused", result.get("msg")
    backup = [(f["id"], f["severity"], f["path"]) for f in result["findings"] if f["id"].startswith("backup")]
    assert (backup[:1] if first_only else backup) == [(finding_id, "error", path)], result["findings"]
    assert not stopped(sandbox, w.name), "the Job was stopped"
    assert not w.records_of("stop"), "a refusal writes no stop record"


def test_s3_backup_refusals_then_the_collection_makes_it(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path, mutate=finite)
    s3 = s3_client(sandbox)
    bucket = sandbox.s3_backup_bucket
    prefix = "%s/checkpoints/" % w.name
    target = {"bucket": bucket, "prefix": prefix, "endpoint_url": sandbox.s3_endpoint}
    vars_ = dict(rlark_checkpoint_backup_s3=target, rlark_checkpoint_backup_required=True)
    try:
        step_dir, original = migrated(w)

        def key(rel):
            return "%s%s/%s" % (prefix, STEP, rel)

        for rel, data in original.items():
            s3.put_object(Bucket=bucket, Key=key(rel), Body=data)
        victim = max(original, key=lambda rel: len(original[rel]))
        body = original[victim]
        flipped = body[: len(body) // 2] + bytes([body[len(body) // 2] ^ 0xFF]) + body[len(body) // 2 + 1 :]
        for damage, finding_id in (("missing", "backup-missing"), ("short", "backup-incomplete"),
                                   ("flip", "backup-mismatch")):  # fmt: skip
            if damage == "missing":
                s3.delete_object(Bucket=bucket, Key=key(victim))
            else:
                s3.put_object(Bucket=bucket, Key=key(victim), Body=body[:-1] if damage == "short" else flipped)
            run, result = stop(sandbox, w, **vars_)
            assert_refused(sandbox, w, run, result, finding_id, victim)
            s3.put_object(Bucket=bucket, Key=key(victim), Body=body)

        # The test's own copy removed: the collection makes the backup, then the stop goes on.
        for rel in original:
            s3.delete_object(Bucket=bucket, Key=key(rel))
        run, result = stop(sandbox, w, rlark_checkpoint_backup_make=True, **vars_)
        assert run.rc == 0 and result["outcome"]["outcome"] == "stopped", result.get("msg")
        assert stopped(sandbox, w.name)
        kept = w.records_of("stop")[-1]["data"]["backup"]
        assert kept["verdict"] == "verified" and kept["location"] == "s3://%s/%s%s/" % (bucket, prefix, STEP), kept
        assert kept["checked"] == "files, sizes, times, sha256" and kept["made"]["copied"] == len(original), kept
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix + STEP + "/")["Contents"]
        copy = {o["Key"][len(prefix + STEP) + 1 :]: s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
                for o in listed}  # fmt: skip
        assert {rel: sha(d) for rel, d in copy.items()} == {rel: sha(d) for rel, d in original.items()}
        assert files_of(step_dir) == original, "the original changed"
    finally:
        w.cleanup()


def test_directory_backup_stale_then_an_interrupted_copy_continues(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path, mutate=finite)
    rel_root = "/backup/%s" % w.name  # on the node host, below its rlark_node_root
    bdir = os.path.join(sandbox.nodes_dir, "a100-01", rel_root.lstrip("/"))
    vars_ = dict(rlark_checkpoint_backup_path=rel_root, rlark_checkpoint_backup_required=True)
    try:
        step_dir, original = migrated(w)
        names = sorted(original)

        # A copy older than the save: refused, backup-stale naming the file.
        shutil.copytree(step_dir, os.path.join(bdir, STEP))
        old = time.time() - 3600
        os.utime(os.path.join(bdir, STEP, names[0]), (old, old))
        run, result = stop(sandbox, w, **vars_)
        assert_refused(sandbox, w, run, result, "backup-stale", names[0])
        shutil.rmtree(bdir)  # the test's own copy

        # The collection copies; something that is not its own sits where a file must go: the copy stops there.
        blocked = names[len(names) // 2]
        os.makedirs(os.path.join(bdir, STEP, blocked))
        run, result = stop(
            sandbox, w, rlark_checkpoint_backup_make=True, rlark_checkpoint_backup_batch_files=1, **vars_
        )
        assert_refused(sandbox, w, run, result, "backup-missing", blocked, first_only=True)
        assert "run again to continue" in result["gate"]["backup"]["made"]["error"], result["gate"]["backup"]
        assert os.path.isdir(os.path.join(bdir, STEP, blocked)), "the collection removed what is not its own"
        with open(os.path.join(bdir, "rlark-backup", STEP + ".json")) as fh:
            done = sorted(json.load(fh)["files"])  # the progress manifest: what the interrupted run finished
        assert set(names[: len(names) // 2]) <= set(done) and blocked not in done, done
        before = {n: os.stat(os.path.join(bdir, STEP, n)) for n in done}

        # Removed: the next stop copies only the rest, then stops.
        os.rmdir(os.path.join(bdir, STEP, blocked))
        run, result = stop(sandbox, w, rlark_checkpoint_backup_make=True, **vars_)
        assert run.rc == 0 and result["outcome"]["outcome"] == "stopped", result.get("msg")
        kept = w.records_of("stop")[-1]["data"]["backup"]
        assert kept["verdict"] == "verified" and kept["made"]["skipped"] == len(done), kept
        assert kept["location"] == os.path.join(bdir, STEP), kept
        for n, st in before.items():
            again = os.stat(os.path.join(bdir, STEP, n))
            assert (again.st_ino, again.st_mtime_ns) == (st.st_ino, st.st_mtime_ns), "%s copied again" % n
        assert files_of(os.path.join(bdir, STEP)) == original
    finally:
        w.cleanup()
        shutil.rmtree(bdir, ignore_errors=True)


def node_lost(sandbox, node, directory, graveyard):
    """The node that held a hostPath checkpoint is gone: cordoned (its Node CR unschedulable, so it reads Offline)
    and the checkpoint directory no longer there (moved aside by the test, to compare it afterwards)."""
    api = custom_objects(sandbox.kubeconfig)
    api.patch_namespaced_custom_object(GROUP, VERSION, "rlark-a100", "nodes", node, {"spec": {"unschedulable": True}})
    shutil.move(directory, graveyard)
    return lambda: api.patch_namespaced_custom_object(
        GROUP, VERSION, "rlark-a100", "nodes", node, {"spec": {"unschedulable": False}}
    )


def approving(w, tmp_path, node):
    """A deployment profile that approves the head (actor) on ``node`` and the hostPath there too."""
    profile = json.loads(json.dumps(w.profile))
    actor = next(r for r in profile["roles"] if r["name"] == "actor")
    actor["selector"] = dict(PLACE)
    actor["global_matches"] = [{"name": node, "namespace": "rlark-a100"}]
    profile["host_paths"][0]["nodes"].append(node)
    path = str(tmp_path / "deployment_profile_resume.yml")
    with open(path, "w") as fh:
        yaml.safe_dump(profile, fh, sort_keys=False)
    return path


def backup_server(sandbox, host):
    """The disk of a backup-server inventory host (examples/sandbox/inventory.yml, group rlark_backup_hosts)."""
    return os.path.join(os.path.dirname(sandbox.nodes_dir), "backup-servers", host)


def mount_on_node(sandbox, node, mount, directory):
    """``directory`` (on a backup server) visible on ``node``'s host at ``mount`` (below its rlark_node_root), as an
    NFS mount of the server's export would make it: a symlink inside the sandbox's node root. Returns the link."""
    link = os.path.join(sandbox.nodes_dir, node, mount.lstrip("/"))
    os.makedirs(os.path.dirname(link), exist_ok=True)
    os.symlink(directory, link)
    return link


def resume_args(w, tmp_path, step, new, **backup):
    """The resume.yml variables of a resume from the backup of ``step`` on dual-01, as ``new``."""
    args = {
        "rlark_resume_source": w.name,
        "rlark_resume_step": step,
        "rlark_resume_name": new,
        "rlark_resume_from_backup": True,
        "rlark_resume_node": "dual-01",
        "rlark_resume_node_selector": PLACE,
        "rlark_deployment_profile": approving(w, tmp_path, "dual-01"),
    }
    args.update(backup)
    return args


def assert_resumed_on_dual(sandbox, w, new, step):
    """The new Job ran on dual-01 (its head task's nodeSelector) from step N+1; the original stays stopped."""
    verify = w.records_of("verify", job=new)[-1]["data"]
    assert verify["ok"] and verify["resume"]["first_step"] == int(step.rpartition("_")[2]) + 1, verify
    api = custom_objects(sandbox.kubeconfig)
    job = api.get_cluster_custom_object(GROUP, VERSION, "jobs", new)
    head = next(t for t in job["spec"]["tasks"] if t.get("nodeSelector"))
    assert head["nodeSelector"] == PLACE
    assert stopped(sandbox, w.name)


def test_resume_from_the_backup_after_the_node_is_gone(sandbox, tmp_path, migrated_job):
    w = Workload(sandbox, tmp_path)  # an endless run: the stop is at whatever step is newest, N
    bucket = sandbox.s3_backup_bucket
    target = {"bucket": bucket, "prefix": "%s/checkpoints/" % w.name, "endpoint_url": sandbox.s3_endpoint}
    new = w.name + "-b"
    w.created.append(new)
    graveyard = str(tmp_path / "lost-node-checkpoints")
    uncordon = None
    try:
        w.start(migrated_job)
        w.wait_steps(2)
        run, result = stop(sandbox, w, rlark_checkpoint_backup_s3=target, rlark_checkpoint_backup_make=True,
                           rlark_checkpoint_backup_required=True)  # fmt: skip
        assert run.rc == 0 and result["outcome"]["outcome"] == "stopped", result.get("msg")
        step = w.records_of("stop")[-1]["data"]["integrity"]["step_dir"]
        original = files_of(os.path.join(w.checkpoints, step))
        uncordon = node_lost(sandbox, "a100-01", w.checkpoints, graveyard)

        run = w.play("resume.yml", extra=resume_args(w, tmp_path, step, new, rlark_checkpoint_backup_s3=target))
        assert run.rc == 0, [r.get("msg") for _t, r in run.task_results() if r.get("failed")]

        # The step was staged on dual-01 from the backup, equal to what the original held.
        staged = os.path.join(sandbox.nodes_dir, "dual-01", "data", "rlinf", "logs", w.name, "checkpoints", step)
        assert {k: sha(v) for k, v in files_of(staged).items()} == {k: sha(v) for k, v in original.items()}
        # The new Job ran there and went on from step N+1; the original: Job untouched (stopped), its lost
        # directory as it was.
        assert_resumed_on_dual(sandbox, w, new, step)
        assert files_of(os.path.join(graveyard, step)) == original
    finally:
        if uncordon is not None:
            uncordon()
        w.cleanup()


def test_directory_backup_on_a_backup_host_is_read_there(sandbox, tmp_path):
    """rlark_checkpoint_backup_host names an inventory host (backup-01): its directory is judged, never the node's."""
    w = Workload(sandbox, tmp_path, mutate=finite)
    rel_root = "/backup/%s" % w.name
    bdir = os.path.join(backup_server(sandbox, "backup-01"), rel_root.lstrip("/"))
    decoy = os.path.join(sandbox.nodes_dir, "a100-01", rel_root.lstrip("/"))  # the same path on the node
    vars_ = dict(rlark_checkpoint_backup_path=rel_root, rlark_checkpoint_backup_host="backup-01",
                 rlark_checkpoint_backup_required=True)  # fmt: skip
    try:
        step_dir, original = migrated(w)
        shutil.copytree(step_dir, os.path.join(decoy, STEP))  # a good copy where the backup host is NOT
        run, result = stop(sandbox, w, **vars_)
        assert_refused(sandbox, w, run, result, "backup-missing", STEP)
        assert "backup-01:%s" % os.path.join(bdir, STEP) in result["findings"][0]["message"], result["findings"]

        shutil.copytree(step_dir, os.path.join(bdir, STEP))
        victim = max(original, key=lambda rel: len(original[rel]))
        body = original[victim]
        flipped = body[: len(body) // 2] + bytes([body[len(body) // 2] ^ 0xFF]) + body[len(body) // 2 + 1 :]
        for damage, finding_id in (("missing", "backup-missing"), ("short", "backup-incomplete"),
                                   ("flip", "backup-mismatch")):  # fmt: skip
            path = os.path.join(bdir, STEP, victim)
            if damage == "missing":
                os.unlink(path)
            else:
                with open(path, "wb") as fh:
                    fh.write(body[:-1] if damage == "short" else flipped)
            run, result = stop(sandbox, w, **vars_)
            assert_refused(sandbox, w, run, result, finding_id, victim)
            with open(path, "wb") as fh:
                fh.write(body)

        # Making a backup on another host is refused before anything is copied, naming both variables.
        before = files_of(bdir)
        run = w.play("guarded_stop.yml", kubeconfig=sandbox.kubeconfig_operator,
                     extra=dict(rlark_jobs=[w.name], rlark_checkpoint_backup_make=True, **vars_))  # fmt: skip
        said = json.dumps(run.data)
        assert run.rc != 0 and "rlark_checkpoint_backup_make" in said and "rlark_checkpoint_backup_host" in said
        assert files_of(bdir) == before and not stopped(sandbox, w.name) and not w.records_of("stop")

        run, result = stop(sandbox, w, **vars_)
        assert run.rc == 0 and result["outcome"]["outcome"] == "stopped", result.get("msg")
        assert stopped(sandbox, w.name)
        kept = w.records_of("stop")[-1]["data"]["backup"]
        assert kept["verdict"] == "verified" and kept["checked"] == "files, sizes, times, sha256", kept
        assert kept["location"] == "backup-01:%s" % os.path.join(bdir, STEP), kept
        assert {k: sha(v) for k, v in files_of(os.path.join(bdir, STEP)).items()} == {
            k: sha(v) for k, v in original.items()
        }
        assert files_of(step_dir) == original, "the original changed"
    finally:
        w.cleanup()
        shutil.rmtree(bdir, ignore_errors=True)
        shutil.rmtree(decoy, ignore_errors=True)


def test_resume_from_a_backup_host_reads_it_where_the_node_mounts_it(sandbox, tmp_path, migrated_job):
    """The backup is on backup-01 (rlark_checkpoint_backup_host): without rlark_checkpoint_backup_mount the resume is
    refused before anything is created (a good copy at the same path on the new node is not read); with it, the
    step is staged on dual-01 from the mount and the new Job goes on from step N+1."""
    w = Workload(sandbox, tmp_path)  # an endless run: the stop is at whatever step is newest, N
    rel_root = "/backup/%s" % w.name
    bdir = os.path.join(backup_server(sandbox, "backup-01"), rel_root.lstrip("/"))
    decoy = os.path.join(sandbox.nodes_dir, "dual-01", rel_root.lstrip("/"))  # backup-01's path, on the new node
    mount = "/mnt/backup-01/%s" % w.name
    new = w.name + "-b"
    w.created.append(new)
    graveyard = str(tmp_path / "lost-node-checkpoints")
    uncordon = link = None
    api = custom_objects(sandbox.kubeconfig)
    try:
        w.start(migrated_job)
        w.wait_steps(2)
        run, result = stop(sandbox, w)
        assert run.rc == 0 and result["outcome"]["outcome"] == "stopped", result.get("msg")
        step = w.records_of("stop")[-1]["data"]["integrity"]["step_dir"]
        original = files_of(os.path.join(w.checkpoints, step))
        shutil.copytree(os.path.join(w.checkpoints, step), os.path.join(bdir, step))  # copy2 keeps mtimes: rsync -a
        shutil.copytree(os.path.join(w.checkpoints, step), os.path.join(decoy, step))
        backup = files_of(bdir)
        uncordon = node_lost(sandbox, "a100-01", w.checkpoints, graveyard)
        staged = os.path.join(sandbox.nodes_dir, "dual-01", "data", "rlinf", "logs", w.name, "checkpoints")

        args = resume_args(w, tmp_path, step, new, rlark_checkpoint_backup_path=rel_root,
                           rlark_checkpoint_backup_host="backup-01")  # fmt: skip
        run = w.play("resume.yml", extra=args)
        said = failed_messages(run)
        assert run.rc != 0 and len(said) == 1, said
        assert said[0].startswith("Resume from the backup refused, nothing was created: the backup %s is on the "
                                  "backup host backup-01 (rlark_checkpoint_backup_host)" % rel_root), said  # fmt: skip
        assert "set rlark_checkpoint_backup_mount to the path where the node sees it" in said[0], said
        with pytest.raises(client.exceptions.ApiException) as gone:
            api.get_cluster_custom_object(GROUP, VERSION, "jobs", new)
        assert gone.value.status == 404, "the refused resume created the Job"
        assert not os.path.lexists(staged), "the refused resume staged something on dual-01"
        shutil.rmtree(decoy)

        link = mount_on_node(sandbox, "dual-01", mount, bdir)
        run = w.play("resume.yml", extra=dict(args, rlark_checkpoint_backup_mount=mount))
        assert run.rc == 0, failed_messages(run)
        # Staged on dual-01 from backup-01's directory, byte for byte; the backup and the original only read.
        assert {k: sha(v) for k, v in files_of(os.path.join(staged, step)).items()} == {
            k[len(step) + 1 :]: sha(v) for k, v in backup.items()
        }
        assert files_of(bdir) == backup and files_of(os.path.join(graveyard, step)) == original
        assert_resumed_on_dual(sandbox, w, new, step)
    finally:
        if uncordon is not None:
            uncordon()
        w.cleanup()
        if link is not None:
            os.unlink(link)
        shutil.rmtree(bdir, ignore_errors=True)
        shutil.rmtree(decoy, ignore_errors=True)
