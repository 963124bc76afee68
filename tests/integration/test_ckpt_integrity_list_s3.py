"""A Megatron checkpoint's own integrity.json in the sandbox's real S3 server (versitygw): sizes from the
listing always, sha256 streamed from the objects with integrity=verify; findings name the file."""

import hashlib
import json
import uuid

import pytest
from ckpt_gate_support import F, S3Source, integrity, run_gate, s3_client

pytestmark = pytest.mark.sandbox
ROW = next(r for r in F.ROWS if r.id == "megatron-torch-dist")
STEP = 40
STEP_DIR = "global_step_%d" % STEP
ITER = "actor/iter_%07d" % STEP
LIST = ITER + "/integrity.json"


@pytest.fixture(scope="module")
def s3(sandbox):
    client = s3_client(sandbox)
    run = "h14-list-%s/" % uuid.uuid4().hex[:8]
    yield client, run
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=sandbox.s3_bucket, Prefix=run):
        keys = [{"Key": o["Key"]} for o in page.get("Contents") or ()]
        if keys:
            client.delete_objects(Bucket=sandbox.s3_bucket, Delete={"Objects": keys})


def upload(sandbox, client, prefix, listed_size=None):
    """The step's files in write order, then its integrity.json; returns [(relpath, bytes)] in upload order."""
    files = F.tree(ROW, STEP, "complete")
    entries = [
        {"path": rel[len(ITER) + 1 :], "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for rel, data, _age in files
        if rel.startswith(ITER + "/")
    ]
    if listed_size is not None:
        next(e for e in entries if e["path"] == "common.pt")["size"] = listed_size
    body = json.dumps({"algorithm": "sha256", "files": entries}).encode()
    F.write_s3(client, sandbox.s3_bucket, prefix, STEP_DIR, files + [(LIST, body, 0.0)])
    return [(rel, data) for rel, data, _age in files] + [(LIST, body)]


def source(sandbox, prefix):
    return S3Source(
        sandbox.s3_bucket,
        prefix,
        endpoint_url=sandbox.s3_endpoint,
        access_key=sandbox.s3_access_key,
        secret_key=sandbox.s3_secret_key,
    )


def gate(sandbox, prefix):
    return run_gate(source(sandbox, prefix), dict(ROW.gate_params(), quiet_seconds=0))


def test_a_listed_size_that_differs_fails_naming_the_file(sandbox, s3):
    client, run = s3
    prefix = run + "resized/checkpoints/"
    upload(sandbox, client, prefix, listed_size=123456)
    result = gate(sandbox, prefix)
    assert not result["complete"]
    bad = [(p["id"], p["severity"], p["path"]) for p in result["findings"] if p["id"].startswith("integrity")]
    assert bad == [("integrity-mismatch", "error", ITER + "/common.pt")]


def test_a_flipped_byte_is_found_by_verify_only(sandbox, s3):
    client, run = s3
    prefix = run + "flipped/checkpoints/"
    uploaded = upload(sandbox, client, prefix)
    src = source(sandbox, prefix)
    result = gate(sandbox, prefix)
    assert result["complete"] and result["integrity_lists"] == [LIST], result["findings"]
    manifest = integrity.build_manifest(src, STEP_DIR, workers=2)  # what a guarded stop would record
    victim = ITER + "/common.pt"
    at = [rel for rel, _data in uploaded].index(victim)
    data = uploaded[at][1]
    # The flipped file again, then what was written after it (tracker, integrity.json), in the same order:
    # otherwise the markers are older than the data (stale-marker) once the rewrite lands a second later.
    rewrite = [(victim, bytes([data[0] ^ 0xFF]) + data[1:])] + uploaded[at + 1 :]
    for rel, body in rewrite:
        client.put_object(Bucket=sandbox.s3_bucket, Key=prefix + STEP_DIR + "/" + rel, Body=body)
    result = gate(sandbox, prefix)
    assert result["complete"]  # same size: the listing cannot tell
    integrity.apply(source(sandbox, prefix), result, "verify", manifest=manifest, workers=2)
    assert not result["complete"]
    assert [p["path"] for p in result["findings"] if p["id"] == "integrity-mismatch"] == [ITER + "/common.pt"] * 2
    assert result["integrity"]["integrity_lists"] == [LIST]
