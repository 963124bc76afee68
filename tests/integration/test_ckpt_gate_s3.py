"""The completeness matrix in the sandbox's real S3 server (versitygw), plus S3 bad input.

What S3 adds to the verdict is how a layout's files are read from keys (names, sizes, LastModified, prefixes):
every row of the table complete, with its first required entry missing and with each of its trailing parts
missing (the parts a save writes last: the sibling-step rule names them); every other case (each required
entry missing, marker missing, leftover .tmp, stale extra shards, tracker mismatch, truncated payload, write
too recent) on the representative rows (an FSDP and an FSDP2 layout, Megatron with and without torch_dist).
The full cross product runs in tests/unit/checkpoint/test_gate_matrix.py over the same table and cases, on
disk and through S3Source from an in-memory ListObjectsV2 (test_matrix_through_the_s3_reader: every case above,
stale markers included). Each case lives under its own prefix of one run prefix that is removed at the end.
"""

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from ckpt_gate_support import F, GateError, S3Source, run_gate, s3_client, siblings

pytestmark = pytest.mark.sandbox
STEP = 40
S3_CASES = [c for c in F.CASES if c != "stale-marker"]  # S3 sets LastModified itself: no old markers


TRAILING = {rel for rels in siblings.TRAILING.values() for rel in rels}
REPRESENTATIVE = ("fsdp-embodied", "fsdp2-offline", "megatron-reasoning", "megatron-torch-dist")


def cases():
    for row in F.ROWS:
        every_case = row.id in REPRESENTATIVE
        for case in S3_CASES:
            if not F.applicable(row, case) or not (every_case or case in ("complete", "missing")):
                continue
            if case == "missing":
                required = row.required(STEP)
                for rel in required if every_case else required[:1] + [r for r in required[1:] if r in TRAILING]:
                    yield row, case, rel, "%s-missing-%s" % (row.id, rel.replace("/", "_"))
            else:
                yield row, case, None, "%s-%s" % (row.id, case)


CASES = list(cases())


@pytest.fixture(scope="module")
def s3(sandbox):
    client = s3_client(sandbox)
    run = "h5-gate-%s/" % uuid.uuid4().hex[:8]
    jobs = []
    for row, case, drop, case_id in CASES:
        prefix = "%s%s/checkpoints/" % (run, case_id)
        jobs.append((prefix, "global_step_%d" % (STEP - 20), F.tree(row, STEP - 20, "complete")))
        jobs.append((prefix, "global_step_%d" % STEP, F.tree(row, STEP, case, drop)))
    puts = [(p + s + "/" + rel, data) for p, s, files in jobs for rel, data, _age in files]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda kv: client.put_object(Bucket=sandbox.s3_bucket, Key=kv[0], Body=kv[1]), puts))
    yield client, run
    paginator = client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=sandbox.s3_bucket, Prefix=run):
        keys = [{"Key": o["Key"]} for o in page.get("Contents") or ()]
        if keys:
            client.delete_objects(Bucket=sandbox.s3_bucket, Delete={"Objects": keys})


@pytest.fixture(scope="module")
def gate_client(sandbox):
    """One boto3 client, made as the gate makes its own, for the matrix's 400 gate runs (0.16 CPU-s each saved)."""
    return source(sandbox, "").client


def source(sandbox, prefix, **kw):
    args = dict(endpoint_url=sandbox.s3_endpoint, access_key=sandbox.s3_access_key, secret_key=sandbox.s3_secret_key)
    args.update(kw)
    return S3Source(sandbox.s3_bucket, prefix, **args)


@pytest.mark.parametrize("row,case,drop,case_id", CASES, ids=[c[3] for c in CASES])
def test_matrix_in_s3(sandbox, s3, gate_client, row, case, drop, case_id):
    _client, run = s3
    prefix = "%s%s/checkpoints" % (run, case_id)
    quiet = 3600 if case == "too-recent" else 0
    params = dict(row.gate_params(), step=STEP, quiet_seconds=quiet)
    result = run_gate(source(sandbox, prefix, client=gate_client), dict(params, full_report=True))
    F.check_case(result, row, STEP, case, drop)
    # newest first decides the same, for the named step and for "latest"
    F.check_same_verdict(run_gate(source(sandbox, prefix, client=gate_client), params), result, named=True)
    latest = dict(params, step="latest")
    F.check_same_verdict(
        run_gate(source(sandbox, prefix, client=gate_client), latest),
        run_gate(source(sandbox, prefix, client=gate_client), dict(latest, full_report=True)),
    )
    assert result["checkpoint"] == "s3://%s/%s/global_step_%d/" % (sandbox.s3_bucket, prefix, STEP)


def test_latest_picks_newest_complete_and_says_so(sandbox, s3):
    client, run = s3
    row = F.ROWS[0]
    prefix = "%slatest/checkpoints/" % run
    for step, case in ((10, "complete"), (20, "complete"), (30, "marker-missing")):
        F.write_s3(client, sandbox.s3_bucket, prefix, "global_step_%d" % step, F.tree(row, step, case))
    F.write_s3(client, sandbox.s3_bucket, prefix, "global_step_20_bak", F.tree(row, 20, "complete"))
    lazy = run_gate(source(sandbox, prefix), dict(row.gate_params(), quiet_seconds=0))
    assert [s["name"] for s in lazy["steps"]] == ["global_step_20", "global_step_30", "global_step_20_bak"]
    assert lazy["steps_found"] == 4
    result = run_gate(source(sandbox, prefix), dict(row.gate_params(), quiet_seconds=0, full_report=True))
    F.check_same_verdict(lazy, result)
    assert result["complete"] and result["step"] == 20 and result["newest_step"] == 30
    notes = [p for p in result["findings"] if p["id"] == "newest-step-incomplete"]
    assert notes and "global_step_30" in notes[0]["message"]
    verdicts = {s["name"]: s["verdict"] for s in result["steps"]}
    assert verdicts == {
        "global_step_10": "unverified",
        "global_step_20": "complete",
        "global_step_30": "incomplete",
        "global_step_20_bak": "unrecognized",
    }


def test_listing_streams_past_the_first_page(sandbox, s3):
    """261 objects listed 100 to a page: three ListObjectsV2 pages; counts and bytes cover all of them.

    The pages are made small (the gate asks for S3's largest, 1000) so that three pages take 261 writes, not 2,601."""
    client, run = s3
    prefix = "%spaged/checkpoints/" % run
    row = F.Row("wide", "embodied", "fsdp", world=260, full_weights=False)
    files = F.tree(row, 5, "complete")
    with ThreadPoolExecutor(8) as pool:
        list(
            pool.map(
                lambda f: client.put_object(Bucket=sandbox.s3_bucket, Key=prefix + "global_step_5/" + f[0], Body=f[1]),
                files,
            )
        )
    src = source(sandbox, prefix)
    pages = []
    original = src.pages

    def counting(p, **kw):
        assert kw.get("max_keys", 1000) == 1000  # what the gate asks the server for
        for page in original(p, **dict(kw, max_keys=100)):
            if not kw.get("delimiter"):  # the step-name listing carries no objects of a step
                pages.append(len(page.get("Contents") or ()))
            yield page

    src.pages = counting
    result = run_gate(src, {"actor_world_size": 260, "full_weights": False, "quiet_seconds": 0})
    assert result["complete"], result["missing"][:5]  # the walk of the one step pages through all 261 keys
    assert result["files"] == len(files) == 261
    assert result["bytes"] == sum(len(f[1]) for f in files)
    assert len(pages) >= 3 and sum(pages) == 261


def test_single_step_prefix(sandbox, s3):
    client, run = s3
    row = F.ROWS[9]
    prefix = "%ssingle/checkpoints/" % run
    F.write_s3(client, sandbox.s3_bucket, prefix, "global_step_7", F.tree(row, 7, "complete"))
    result = run_gate(source(sandbox, prefix + "global_step_7"), dict(row.gate_params(), quiet_seconds=0))
    assert result["complete"] and result["step"] == 7 and [s["name"] for s in result["steps"]] == ["global_step_7"]


@pytest.mark.parametrize(
    "kw,fragment",
    [
        ({"bucket": "no-such-bucket-h5"}, "bucket 'no-such-bucket-h5' does not exist"),
        ({"secret_key": "not-the-secret"}, "refused the credentials"),
        ({"access_key": "NOSUCHKEY0000000", "secret_key": "x"}, "refused the credentials"),
    ],
)
def test_s3_bad_input_is_one_clear_message(sandbox, s3, kw, fragment):
    _client, run = s3
    bucket = kw.pop("bucket", sandbox.s3_bucket)
    args = dict(endpoint_url=sandbox.s3_endpoint, access_key=sandbox.s3_access_key, secret_key=sandbox.s3_secret_key)
    args.update(kw)
    with pytest.raises(GateError) as err:
        run_gate(S3Source(bucket, run, **args), {})
    assert fragment in str(err.value)
    assert sandbox.s3_secret_key not in str(err.value) and "not-the-secret" not in str(err.value)


def test_empty_prefix_is_an_error_naming_it(sandbox, s3):
    _client, run = s3
    with pytest.raises(GateError) as err:
        run_gate(source(sandbox, run + "nothing-here/checkpoints"), {})
    assert "no global_step_* directory under s3://%s/%snothing-here/checkpoints/" % (sandbox.s3_bucket, run) in str(
        err.value
    )
