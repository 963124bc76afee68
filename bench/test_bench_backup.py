# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Making the backup of a hostPath step (issue 27) side by side with a plain copy; bench/results/backup.json.

A 2 GiB step (16 files of 128 MiB, random bytes, in the page cache after the first round). Every figure is
the minimum of ROUNDS interleaved runs (make, plain, make, plain, ...), each a child process timed from
outside, its peak RSS from GNU time; medians are recorded too.

1. Directory: ``backup_copy.make`` to a fresh directory (each file read once, hashed while written, fsync'd,
   renamed) vs ``cp -r`` of the same step. Goal <= 1.1x; peak RSS <= 100 MB.
2. S3 (the sandbox's backup bucket on versitygw): ``backup_copy.make`` (multipart, streamed through sha256)
   vs boto3 ``upload_file`` of the same 16 files in one process (default TransferConfig). Goal <= 1.1x;
   peak RSS <= 100 MB.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import uuid

import pytest
from test_bench_ckpt_gate import COLLECTIONS, ROOT, sandbox_state, summary, timed

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import figures

ROUNDS = 3
FILES = 16
FILE_MB = 128
RATIO = 1.1
PEAK_MB = 100
STEP = "global_step_100"

MAKE = (
    "import sys; sys.path.insert(0, %r)\n"
    "from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import backup_copy, backup_store\n"
    "spec = %r\n"
    "original = backup_store.DirStore(%r)\n"
    "listing = original.list(%r)\n"
    "store = backup_store.open_store(spec)\n"
    "made = backup_copy.make(original, store, %r, listing, batch_files=4)\n"
    "assert made['copied'] == len(listing), made\n"
)
UPLOAD = (
    "import os, boto3\n"
    "c = boto3.client('s3', endpoint_url=%r, aws_access_key_id=%r, aws_secret_access_key=%r, region_name='us-east-1')\n"
    "top = %r\n"
    "for here, _d, names in os.walk(top):\n"
    "    for n in names:\n"
    "        full = os.path.join(here, n)\n"
    "        c.upload_file(full, %r, %r + os.path.relpath(full, top))\n"
)


@pytest.fixture(scope="module")
def step_root():
    base = tempfile.mkdtemp(prefix="backup-bench-", dir=os.path.join(ROOT, ".build"))
    os.makedirs(os.path.join(base, "ckpt", STEP, "actor"))
    for i in range(FILES):
        with open(os.path.join(base, "ckpt", STEP, "actor", "__%d_0.distcp" % i), "wb") as fh:
            for _chunk in range(FILE_MB // 8):
                fh.write(os.urandom(8 * 1024 * 1024))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def make_cmd(base, spec):
    root = os.path.join(base, "ckpt")
    return [sys.executable, "-c", MAKE % (COLLECTIONS, spec, root, STEP, STEP)]


def record(name, makes, plains, peaks, plain_peaks):
    ratio = min(makes) / min(plains)
    data = {
        "bytes": FILES * FILE_MB * 1024 * 1024,
        "files": FILES,
        "rounds": ROUNDS,
        "make_seconds": summary(makes),
        "plain_seconds": summary(plains),
        "ratio_min": round(ratio, 3),
        "ratio_goal": RATIO,
        "make_peak_rss_mb": round(max(peaks), 1),
        "plain_peak_rss_mb": round(max(plain_peaks), 1),
        "peak_goal_mb": PEAK_MB,
        "met": ratio <= RATIO and max(peaks) <= PEAK_MB,
    }
    figures.save("backup_%s.json" % name, data)
    return data


def test_directory_make_vs_cp(step_root):
    makes, plains, peaks, plain_peaks = [], [], [], []
    for r in range(ROUNDS):
        dest = os.path.join(step_root, "made-%d" % r)
        wall, peak, _out, _cpu = timed(make_cmd(step_root, {"path": dest}))
        makes.append(wall)
        peaks.append(peak)
        shutil.rmtree(dest)
        dest = os.path.join(step_root, "cp-%d" % r)
        wall, peak, _out, _cpu = timed(
            "cp -r %s %s && sync" % (os.path.join(step_root, "ckpt", STEP), dest), shell=True
        )
        plains.append(wall)
        plain_peaks.append(peak)
        shutil.rmtree(dest)
    data = record("dir", makes, plains, peaks, plain_peaks)
    assert figures.within_budget(data["met"]), data


def test_s3_make_vs_boto3_upload(step_root):
    state_dir, state, started, (ctl, env) = sandbox_state()
    s3 = state["s3"]
    bucket = s3.get("backup_bucket", "checkpoint-backups")
    makes, plains, peaks, plain_peaks = [], [], [], []
    run = "bench-backup-%s" % uuid.uuid4().hex[:8]
    try:
        for r in range(ROUNDS):
            prefix = "%s/made-%d/" % (run, r)
            spec = {"s3": {"bucket": bucket, "prefix": prefix, "endpoint_url": s3["endpoint"],
                           "access_key": s3["access_key"], "secret_key": s3["secret_key"]}}  # fmt: skip
            wall, peak, _out, _cpu = timed(make_cmd(step_root, spec))
            makes.append(wall)
            peaks.append(peak)
            top = os.path.join(step_root, "ckpt", STEP)
            upload = UPLOAD % (s3["endpoint"], s3["access_key"], s3["secret_key"], top, bucket,
                               "%s/plain-%d/%s/" % (run, r, STEP))  # fmt: skip
            wall, peak, _out, _cpu = timed([sys.executable, "-c", upload])
            plains.append(wall)
            plain_peaks.append(peak)
            shutil.rmtree(os.path.join(state_dir, "s3", bucket, run), ignore_errors=True)  # the POSIX backend
    finally:
        shutil.rmtree(os.path.join(state_dir, "s3", bucket, run), ignore_errors=True)
        if started:
            subprocess.run([*ctl, "down"], env=env, capture_output=True, check=False, timeout=300)
    data = record("s3", makes, plains, peaks, plain_peaks)
    assert figures.within_budget(data["met"]), data
