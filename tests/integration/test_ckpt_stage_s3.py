"""rlark_ckpt_stage on the live sandbox: a step staged from the S3 backup bucket, verified against its manifest.

The backup objects are written with boto3 and the manifest built with hashlib (independent of the collection);
the staged step is read back with os.walk and hashlib.
"""

import hashlib
import os
import uuid

import pytest
from helpers import run_ansible_module
from s3_support import s3_client

pytestmark = pytest.mark.sandbox
STEP = "global_step_12"


def tree_of(top):
    out = {}
    for here, _dirs, names in os.walk(top):
        for name in names:
            with open(os.path.join(here, name), "rb") as fh:
                out[os.path.relpath(os.path.join(here, name), top)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def test_stage_from_the_s3_backup_then_refuse_a_flipped_byte(sandbox, tmp_path):
    s3 = s3_client(sandbox)
    bucket = sandbox.s3_backup_bucket
    prefix = "stage-%s/checkpoints/" % uuid.uuid4().hex[:8]
    files = {
        "actor/model_state_dict/__0_0.distcp": os.urandom(9 * 1024 * 1024 + 3),  # two multipart-size reads
        "actor/model_state_dict/.metadata": os.urandom(1000),
        "data/data.pt": b"",
    }
    for rel, data in files.items():
        s3.put_object(Bucket=bucket, Key="%s%s/%s" % (prefix, STEP, rel), Body=data)
    manifest = {
        "step_dir": STEP,
        "files": [{"path": rel, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for rel, d in files.items()],
    }
    backup = {"s3": {"bucket": bucket, "prefix": prefix, "endpoint_url": sandbox.s3_endpoint}}
    args = {"root": str(tmp_path / "a"), "step": "12", "manifest": manifest, "backup": backup}
    try:
        staged = run_ansible_module("rlark_ckpt_stage", args, env=sandbox.env())
        assert staged["status"] == "staged" and staged["changed"] and staged["copied"] == 3, staged
        assert tree_of(str(tmp_path / "a" / STEP)) == {rel: hashlib.sha256(d).hexdigest() for rel, d in files.items()}
        assert sorted(os.listdir(str(tmp_path / "a"))) == [STEP]

        body = bytearray(files["actor/model_state_dict/__0_0.distcp"])
        body[4096] ^= 0x01
        s3.put_object(Bucket=bucket, Key="%s%s/actor/model_state_dict/__0_0.distcp" % (prefix, STEP), Body=bytes(body))
        refused = run_ansible_module("rlark_ckpt_stage", dict(args, root=str(tmp_path / "b")), env=sandbox.env())
        assert refused["failed"] and refused["status"] == "failed", refused
        assert [(f["id"], f["severity"], f["path"]) for f in refused["findings"]] == [
            ("backup-mismatch", "error", "actor/model_state_dict/__0_0.distcp")
        ]
        assert not os.path.exists(str(tmp_path / "b" / STEP)), "a step that does not match appeared"
    finally:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Contents") or ():
                s3.delete_object(Bucket=bucket, Key=obj["Key"])
