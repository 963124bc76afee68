# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""S3 listing over a fake client: paging to the end, per-step aggregation, retries, error messages."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.s3 import Retrying, S3Source
from fake_s3 import FakeS3

SECRET = "super-secret-value"


def client_error(code, status, op="ListObjectsV2"):
    return ClientError({"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, op)


def objects_for(row, prefix, steps):
    out = {}
    for step, case in steps:
        for rel, data, _age in F.tree(row, step, case):
            out["%sglobal_step_%d/%s" % (prefix, step, rel)] = data
    return out


def no_sleep():
    slept = []
    return Retrying(sleep=slept.append, rand=lambda: 0.5), slept


def test_streams_every_page_and_aggregates_per_step():
    row = F.Row("wide", "embodied", "fsdp", world=250, full_weights=False)
    objs = objects_for(row, "run/checkpoints/", [(10, "complete"), (20, "complete"), (30, "marker-missing")])
    fake = FakeS3(objs, page=100)
    retry, _slept = no_sleep()
    src = S3Source("b", "run/checkpoints", client=fake, retrying=retry)
    r = run_gate(src, {"actor_world_size": 250, "full_weights": False, "quiet_seconds": 60, "full_report": True})
    assert fake.list_calls == -(-len(objs) // 100) and fake.list_calls > 7
    assert r["complete"] and r["step"] == 20 and r["files"] == 251
    assert r["checkpoint"] == "s3://b/run/checkpoints/global_step_20/"
    steps = {s["name"]: s for s in r["steps"]}
    assert steps["global_step_30"]["files"] == 250 and steps["global_step_30"]["verdict"] == "incomplete"
    assert steps["global_step_10"]["bytes"] == sum(len(v) for k, v in objs.items() if "/global_step_10/" in k)


def test_retries_throttling_and_5xx_with_jittered_backoff():
    objs = objects_for(F.ROWS[0], "c/", [(10, "complete")])
    failures = [
        client_error("SlowDown", 503),
        client_error("InternalError", 500),
        EndpointConnectionError(endpoint_url="x"),
    ]
    fake = FakeS3(objs, failures=failures)
    retry, slept = no_sleep()
    r = run_gate(S3Source("b", "c", client=fake, retrying=retry), dict(F.ROWS[0].gate_params(), quiet_seconds=60))
    assert r["complete"]
    assert len(slept) == 3 and slept == sorted(slept) and all(0 < s <= retry.cap for s in slept)


def test_gives_up_after_the_attempt_budget():
    fake = FakeS3({}, failures=[client_error("SlowDown", 503)] * 10)
    retry, slept = no_sleep()
    with pytest.raises(GateError, match="kept failing for bucket 'b' after 6 attempts: SlowDown"):
        run_gate(S3Source("b", "c", client=fake, retrying=retry), {})
    assert len(slept) == 5


@pytest.mark.parametrize(
    "error,fragment",
    [
        (client_error("NoSuchBucket", 404), "S3 bucket 'b' does not exist"),
        (client_error("InvalidAccessKeyId", 403), "refused the credentials for bucket 'b'"),
        (client_error("SignatureDoesNotMatch", 403), "access key AKIATEST"),
        (client_error("AccessDenied", 403), "AccessDenied"),
    ],
)
def test_errors_are_one_message_without_the_secret(error, fragment):
    fake = FakeS3({}, failures=[error])
    retry, slept = no_sleep()
    src = S3Source("b", "c", client=fake, retrying=retry, access_key="AKIATEST", secret_key=SECRET)
    with pytest.raises(GateError) as err:
        run_gate(src, {})
    assert fragment in str(err.value) and SECRET not in str(err.value)
    assert slept == []  # auth and missing buckets are not retried


def test_server_clock_decides_the_quiet_period():
    objs = objects_for(F.ROWS[0], "c/", [(10, "complete")])
    retry, _slept = no_sleep()
    # objects are 2 h old by the server's Date header, whatever the local clock says
    r = run_gate(
        S3Source("b", "c", client=FakeS3(objs), retrying=retry), dict(F.ROWS[0].gate_params(), quiet_seconds=7000)
    )
    assert r["complete"]
    r = run_gate(
        S3Source("b", "c", client=FakeS3(objs), retrying=retry), dict(F.ROWS[0].gate_params(), quiet_seconds=7300)
    )
    assert not r["complete"] and [p for p in r["findings"] if p["id"] == "write-too-recent"]


def test_prefix_forms():
    retry, _slept = no_sleep()
    src = S3Source("b", "/a/b/checkpoints/global_step_7/", client=FakeS3({}), retrying=retry)
    assert src.single_step == "global_step_7" and src.root == "a/b/checkpoints/"
    assert src.location("global_step_7") == "s3://b/a/b/checkpoints/global_step_7/"
    src = S3Source("b", "", client=FakeS3({}), retrying=retry)
    assert src.root == "" and src.single_step is None


def test_newest_first_lists_only_the_steps_it_needs():
    """One delimiter listing of the step names, the walks of steps 30 and 20, shallow looks at the rest."""
    row = F.Row("wide", "embodied", "fsdp", world=250, full_weights=False)
    steps = [(s, "complete") for s in range(1, 21)] + [(30, "marker-missing")]
    fake = FakeS3(objects_for(row, "run/checkpoints/", steps), page=100)
    src = S3Source("b", "run/checkpoints", client=fake, retrying=no_sleep()[0])
    r = run_gate(src, {"actor_world_size": 250, "full_weights": False, "quiet_seconds": 60})
    assert r["complete"] and r["step"] == 20 and r["newest_step"] == 30 and r["steps_found"] == 21
    assert [s["name"] for s in r["steps"]] == ["global_step_20", "global_step_30"]
    walked = 2 * 3  # 251 and 250 keys in pages of 100
    probes = 20 * 2  # the top and actor/ of every other step
    assert fake.list_calls == 1 + walked + probes
