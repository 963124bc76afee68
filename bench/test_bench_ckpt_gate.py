# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_ckpt_gate at scale, side by side with the floor of one metadata walk / one listing.

1. Local: a checkpoints root of 200,120 small files (2,500 Megatron steps, TP8 x PP4 with the
   distributed optimizer, plus 570 FSDP steps of 64 DCP shards). The gate core for ``step: latest``
   (a fresh Python process: import, walk, judge, verify the chosen step's payloads) must take
   <= 1.3x the wall time of ``find <root> -printf '%s %T@\\n' > /dev/null``; its peak RSS (from
   ``wait4`` of that process) must stay <= 200 MB. Min of several interleaved rounds (the machine is
   shared, minimum is the least noisy estimate); medians are printed too.
2. S3: 100,100 objects (1,540 Megatron steps) under one prefix of the sandbox's versitygw server.
   The gate over that prefix must take <= 1.2x a bare boto3 ListObjectsV2 paginator over the same
   prefix. Seeding 100k objects over HTTP takes minutes, so the objects are written straight into
   versitygw's POSIX backend directory (``<sandbox>/s3/<bucket>/<prefix>``): a file there *is* an
   object (key = relative path, LastModified = mtime), which the listing test below checks first.

Results go to bench/results/ckpt_gate.json and are printed.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".build", "collections"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_trees as T  # noqa: E402

RESULTS = os.path.join(ROOT, "bench", "results")
ROUNDS = 5
LOCAL_RATIO = 1.3
S3_RATIO = 1.2
PEAK_MB = 200
GATE_SNIPPET = (
    "import sys; sys.path.insert(0, %r)\n"
    "from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate\n"
    "from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.%s import %s\n"
    "r = run_gate(%s, {'pipeline_parallel': 4, 'step': 'latest', 'quiet_seconds': %d})\n"
    "assert r['complete'], r['missing'][:3]\n"
    "print(r['step'], len(r['steps']))\n"
)
LISTING_SNIPPET = (
    "import boto3, sys\n"
    "c = boto3.client('s3', endpoint_url=%r, aws_access_key_id=%r, aws_secret_access_key=%r, region_name='us-east-1')\n"
    "n = 0\n"
    "for page in c.get_paginator('list_objects_v2').paginate(Bucket=%r, Prefix=%r):\n"
    "    n += len(page.get('Contents') or ())\n"
    "print(n)\n"
)


GNU_TIME = "/usr/bin/time"


def timed(argv, **kw):
    """(wall seconds, peak RSS MiB, stdout, cpu seconds) of one child process.

    CPU comes from wait4. Linux keeps a forked child's pre-exec RSS (the whole pytest image) in its
    ru_maxrss, so the peak is taken from GNU time, whose own child starts from a tiny process.
    """
    if os.path.exists(GNU_TIME):
        argv = [GNU_TIME, "-f", "maxrss_kb=%M", *argv]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    out, err = proc.stdout.read(), proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, err.decode()[-2000:]
    peak = usage.ru_maxrss / 1024.0
    for line in err.decode().splitlines():
        if line.startswith("maxrss_kb="):
            peak = int(line.split("=", 1)[1]) / 1024.0
    return wall, peak, out.decode(), usage.ru_utime + usage.ru_stime


def side_by_side(name, baseline, gate, rounds):
    """Interleaved rounds of baseline and gate: min/median wall, CPU, the gate's peak RSS, its last output."""
    base_walls, base_cpu, gate_walls, gate_cpu, peaks = [], [], [], [], []
    out = ""
    for _round in range(rounds):
        wall, _peak, _out, cpu = timed(baseline)
        base_walls.append(wall)
        base_cpu.append(cpu)
        wall, peak, out, cpu = timed(gate)
        gate_walls.append(wall)
        gate_cpu.append(cpu)
        peaks.append(peak)
    data = {
        name + "_s_min": round(min(base_walls), 3),
        name + "_s_median": round(statistics.median(base_walls), 3),
        "gate_s_min": round(min(gate_walls), 3),
        "gate_s_median": round(statistics.median(gate_walls), 3),
        "ratio_min": round(min(gate_walls) / min(base_walls), 3),
        "ratio_median": round(statistics.median(gate_walls) / statistics.median(base_walls), 3),
        "cpu_ratio_min": round(min(gate_cpu) / min(base_cpu), 3),
        "gate_peak_rss_mb": round(max(peaks), 1),
    }
    return data, out


def save(section, data):
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, "ckpt_gate.json")
    doc = {}
    if os.path.exists(path):
        with open(path) as fh:
            doc = json.load(fh)
    doc[section] = data
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=2)
    print("\n%s: %s" % (section, json.dumps(data)))


@pytest.fixture(scope="module")
def local_root():
    base = tempfile.mkdtemp(prefix="ckpt-bench-")
    root = os.path.join(base, "checkpoints")
    old = time.time() - 86400
    count = T.write_tree(root, T.megatron_step, 2500, mtime=old)
    count += T.write_tree(root, T.fsdp_step, 570, first=3001, mtime=old)
    assert count == 200120
    yield root, count
    shutil.rmtree(base, ignore_errors=True)


def test_local_gate_vs_find(local_root):
    root, count = local_root
    gate = [
        sys.executable,
        "-c",
        GATE_SNIPPET
        % (os.path.join(ROOT, ".build", "collections"), "local", "LocalSource", "LocalSource(%r)" % root, 120),
    ]
    find = ["find", root, "-printf", "%s %T@\n"]
    timed(find)  # warm the dentry/inode caches once for both
    data, out = side_by_side("find", find, gate, ROUNDS)
    assert out.split()[0] == "3570"
    data.update(files=count, targets={"ratio": LOCAL_RATIO, "peak_mb": PEAK_MB})
    save("local", data)
    assert data["ratio_min"] <= LOCAL_RATIO, data
    assert data["gate_peak_rss_mb"] <= PEAK_MB, data


# ---------------------------------------------------------------- S3


def sandbox_state():
    state_dir = os.environ.get("RLARK_SANDBOX_DIR") or os.path.join(ROOT, ".sandbox")
    ctl = [sys.executable, os.path.join(ROOT, "sandbox", "sandboxctl.py")]
    env = dict(os.environ, RLARK_SANDBOX_DIR=state_dir)
    started = False
    if subprocess.run([*ctl, "status"], env=env, capture_output=True, check=False).returncode != 0:
        up = subprocess.run([*ctl, "up"], env=env, capture_output=True, text=True, check=False, timeout=900)
        assert up.returncode == 0, up.stdout + up.stderr
        started = True
    with open(os.path.join(state_dir, "state.json")) as fh:
        state = json.load(fh)
    return state_dir, state, started, (ctl, env)


@pytest.fixture(scope="module")
def s3_prefix():
    state_dir, state, started, (ctl, env) = sandbox_state()
    s3 = state["s3"]
    prefix = "bench-%s/checkpoints/" % uuid.uuid4().hex[:8]
    backend = os.path.join(state_dir, "s3", s3["bucket"], prefix)
    old = time.time() - 86400
    count = T.write_tree(backend, T.megatron_step, 1540, mtime=old)
    assert count == 100100
    yield s3, prefix, count
    shutil.rmtree(os.path.join(state_dir, "s3", s3["bucket"], prefix.split("/", maxsplit=1)[0]), ignore_errors=True)
    if started:
        subprocess.run([*ctl, "down"], env=env, capture_output=True, check=False, timeout=300)


def test_s3_gate_vs_bare_paginator(s3_prefix):
    s3, prefix, count = s3_prefix
    listing = [
        sys.executable,
        "-c",
        LISTING_SNIPPET % (s3["endpoint"], s3["access_key"], s3["secret_key"], s3["bucket"], prefix),
    ]
    source = "S3Source(%r, %r, endpoint_url=%r, access_key=%r, secret_key=%r)" % (
        s3["bucket"],
        prefix,
        s3["endpoint"],
        s3["access_key"],
        s3["secret_key"],
    )
    gate = [
        sys.executable,
        "-c",
        GATE_SNIPPET % (os.path.join(ROOT, ".build", "collections"), "s3", "S3Source", source, 120),
    ]
    out = timed(listing)[2]  # the backend files are objects: the bare listing sees all of them
    assert int(out) == count
    data, out = side_by_side("paginator", listing, gate, 3)
    assert out.split() == ["1540", "1540"]
    data.update(
        objects=count, seeding="files written into versitygw's POSIX backend directory", targets={"ratio": S3_RATIO}
    )
    save("s3", data)
    assert data["ratio_min"] <= S3_RATIO, data
