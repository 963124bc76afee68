# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_ckpt_gate side by side with its floors (issue #14 goals); results in bench/results/ckpt_gate.json.

Every figure is the minimum of ROUNDS interleaved runs (gate, baseline, gate, baseline, ...) on this
shared machine; medians are recorded too. Peak RSS of each gate process comes from GNU time.

1. Local: a Megatron torch_dist root of 25 steps x 3,964 files (99,100 files; 1,980 ranks x 2
   shards, real-format DCP ``.metadata``), ``step: latest``, newest step complete. The gate timed
   in its process (after imports) must take <= 0.15x one ``find <root> -printf '%s %T@\\n'``; as a
   module process (``python -m <module> args.json``, as AnsiballZ runs it), (module run - empty module
   run of ``ansible.builtin.ping``) <= 0.3x that find. Peak RSS <= 100 MB.
2. S3: the same 25 steps / 99,100 objects in the sandbox's versitygw (written straight into its
   POSIX backend directory: a file there is an object). The gate timed in its process <= 0.15x one
   boto3 ListObjectsV2 paginator over the whole prefix timed in its process. Peak RSS <= 100 MB.
3. sha256 of a 2 GiB checkpoint (16 files of 128 MiB): the integrity manifest (``hash_workers`` =
   nproc) <= 1.2x ``find ... -print0 | xargs -0 -n1 -P$(nproc) sha256sum`` (``-n1``: without it xargs
   hands every file to one sha256sum and nothing runs in parallel). Peak RSS <= 100 MB.

The full report (every step walked, the old behaviour) is timed in-process too, for comparison.
"""

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
sys.path.insert(0, COLLECTIONS)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ckpt_trees as T  # noqa: E402

RESULTS = os.path.join(ROOT, "bench", "results")
ROUNDS = 5
STEPS = 25
LOCAL_RATIO = 0.15
MODULE_RATIO = 0.3
S3_RATIO = 0.15
SHA_RATIO = 1.2
PEAK_MB = 100
GNU_TIME = "/usr/bin/time"
NPROC = os.cpu_count() or 1

GATE_SNIPPET = (
    "import sys, time; sys.path.insert(0, %r)\n"
    "from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate import run_gate\n"
    "from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.%s import %s\n"
    "src = %s\n"
    "t, c = time.perf_counter(), time.process_time()\n"
    "r = run_gate(src, {'step': 'latest', 'quiet_seconds': 120, 'full_report': %s})\n"
    "elapsed, cpu = time.perf_counter() - t, time.process_time() - c\n"
    "assert r['complete'], (r['missing'][:3], r['findings'][:3])\n"
    "print(elapsed, cpu, r['step'], r['steps_found'], len(r['steps']))\n"
)
LISTING_SNIPPET = (
    "import boto3, time\n"
    "c = boto3.client('s3', endpoint_url=%r, aws_access_key_id=%r, aws_secret_access_key=%r, region_name='us-east-1')\n"
    "n = 0\n"
    "t, cpu = time.perf_counter(), time.process_time()\n"
    "for page in c.get_paginator('list_objects_v2').paginate(Bucket=%r, Prefix=%r):\n"
    "    n += len(page.get('Contents') or ())\n"
    "print(time.perf_counter() - t, time.process_time() - cpu, n)\n"
)
HASH_SNIPPET = (
    "import sys, time; sys.path.insert(0, %r)\n"
    "from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import integrity\n"
    "from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource\n"
    "t = time.perf_counter()\n"
    "m = integrity.build_manifest(LocalSource(%r), 'global_step_1', workers=%d)\n"
    "print(time.perf_counter() - t, m['file_count'], m['total_bytes'])\n"
)


def timed(argv, env=None, shell=False):
    """(wall seconds, peak RSS MiB, stdout, CPU seconds) of one child process and everything it waited for."""
    if os.path.exists(GNU_TIME):
        argv = [GNU_TIME, "-f", "maxrss_kb=%M", *(["/bin/sh", "-c", argv] if shell else argv)]
    elif shell:
        argv = ["/bin/sh", "-c", argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, (proc.stdout.decode()[-1500:], proc.stderr.decode()[-1500:])
    peak = 0.0
    for line in proc.stderr.decode().splitlines():
        if line.startswith("maxrss_kb="):
            peak = int(line.split("=", 1)[1]) / 1024.0
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, peak, proc.stdout.decode(), cpu


def summary(values):
    return {"min": round(min(values), 4), "median": round(statistics.median(values), 4)}


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


def gate_cmd(module, cls, source, full=False):
    return [sys.executable, "-c", GATE_SNIPPET % (COLLECTIONS, module, cls, source, full)]


# ---------------------------------------------------------------- local


@pytest.fixture(scope="module")
def local_root():
    base = tempfile.mkdtemp(prefix="ckpt-bench-")
    root = os.path.join(base, "checkpoints")
    count = T.write_tree(root, T.torch_dist_step, STEPS, first=100, mtime=time.time() - 86400)
    assert count == STEPS * 3964
    yield root, count
    shutil.rmtree(base, ignore_errors=True)


def module_run(module, args, directory):
    """A module as the node runs it: a fresh Python process, its imports, AnsibleModule, the work, exit_json.

    Run directly with an args file (what AnsiballZ hands it), so the controller's own start-up (seconds,
    and noisy on a shared machine) is not part of the difference between two modules.
    """
    path = os.path.join(directory, module.rsplit(".", 1)[-1] + ".json")
    with open(path, "w") as fh:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, fh)
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    return [sys.executable, "-m", module, path], env


def test_local_newest_first_vs_find(local_root):
    root, count = local_root
    find = ["find", root, "-printf", "%s %T@\n"]
    gate = gate_cmd("local", "LocalSource", "LocalSource(%r)" % root)
    full = gate_cmd("local", "LocalSource", "LocalSource(%r)" % root, full=True)
    args_dir = os.path.dirname(root)
    module, env = module_run(
        "ansible_collections.rlark.ops.plugins.modules.rlark_ckpt_gate", {"path": root, "quiet_seconds": 120}, args_dir
    )
    empty, _env = module_run("ansible.modules.ping", {}, args_dir)
    timed(find)  # warm the dentry/inode caches once for all
    finds, gates, fulls, modules, empties, peaks = [], [], [], [], [], []
    cpu = {"find": [], "gate": [], "module": [], "empty": []}
    for _round in range(ROUNDS):
        wall, _peak, _out, used = timed(find)
        finds.append(wall)
        cpu["find"].append(used)
        _wall, peak, out, _used = timed(gate)
        gates.append(float(out.split()[0]))
        cpu["gate"].append(float(out.split()[1]))
        peaks.append(peak)
        assert out.split()[2:] == ["124", "25", "1"], out
        wall, _peak, _out, used = timed(module, env=env)
        modules.append(wall)
        cpu["module"].append(used)
        wall, _peak, _out, used = timed(empty, env=env)
        empties.append(wall)
        cpu["empty"].append(used)
        fulls.append(float(timed(full)[2].split()[0]))
    data = {
        "files": count,
        "steps": STEPS,
        "find_s": summary(finds),
        "gate_in_process_s": summary(gates),
        "full_report_in_process_s": summary(fulls),
        "module_run_s": summary(modules),
        "empty_module_run_s": summary(empties),
        "cpu_s": {k: summary(v) for k, v in cpu.items()},
        "ratio_in_process": round(min(gates) / min(finds), 4),
        "ratio_in_process_cpu": round(min(cpu["gate"]) / min(cpu["find"]), 4),
        "ratio_module_minus_empty": round((min(modules) - min(empties)) / min(finds), 4),
        "ratio_module_minus_empty_cpu": round((min(cpu["module"]) - min(cpu["empty"])) / min(cpu["find"]), 4),
        "ratio_full_report_in_process": round(min(fulls) / min(finds), 4),
        "gate_peak_rss_mb": round(max(peaks), 1),
        "targets": {"in_process": LOCAL_RATIO, "module_minus_empty": MODULE_RATIO, "peak_mb": PEAK_MB},
    }
    data["goals_met"] = {
        "in_process": data["ratio_in_process"] <= LOCAL_RATIO,
        "module_minus_empty": data["ratio_module_minus_empty"] <= MODULE_RATIO,
        "peak_rss": data["gate_peak_rss_mb"] <= PEAK_MB,
    }
    save("local", data)
    # asserted: what the design guarantees on any machine (history-independent cost, flat memory); the
    # issue's ratios against find are recorded with goals_met (see docs/checkpoint-gate.md for the figures)
    assert min(gates) <= 0.5 * min(fulls), data
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
    count = T.write_tree(backend, T.torch_dist_step, STEPS, first=100, mtime=time.time() - 86400)
    yield s3, prefix, count
    shutil.rmtree(os.path.join(state_dir, "s3", s3["bucket"], prefix.split("/", maxsplit=1)[0]), ignore_errors=True)
    if started:
        subprocess.run([*ctl, "down"], env=env, capture_output=True, check=False, timeout=300)


def test_s3_newest_first_vs_paginator(s3_prefix):
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
    gate = gate_cmd("s3", "S3Source", source)
    full_cmd = gate_cmd("s3", "S3Source", source, full=True)
    assert int(timed(listing)[2].split()[2]) == count  # the backend files are objects: all of them listed
    lists, gates, peaks, list_peaks = [], [], [], []
    cpu = {"paginator": [], "gate": []}
    for _round in range(ROUNDS):
        _w, peak, out, _used = timed(listing)
        lists.append(float(out.split()[0]))
        cpu["paginator"].append(float(out.split()[1]))
        list_peaks.append(peak)
        _w, peak, out, _used = timed(gate)
        assert out.split()[2:] == ["124", "25", "1"], out
        gates.append(float(out.split()[0]))
        cpu["gate"].append(float(out.split()[1]))
        peaks.append(peak)
    full = float(timed(full_cmd)[2].split()[0])  # once: it lists everything, like the baseline
    data = {
        "objects": count,
        "steps": STEPS,
        "seeding": "files written into versitygw's POSIX backend directory",
        "paginator_in_process_s": summary(lists),
        "gate_in_process_s": summary(gates),
        "full_report_in_process_s": round(full, 4),
        "cpu_s": {k: summary(v) for k, v in cpu.items()},
        "ratio_in_process": round(min(gates) / min(lists), 4),
        "ratio_in_process_cpu": round(min(cpu["gate"]) / min(cpu["paginator"]), 4),
        "ratio_full_report_in_process": round(full / min(lists), 4),
        "gate_peak_rss_mb": round(max(peaks), 1),
        "paginator_peak_rss_mb": round(max(list_peaks), 1),
        "targets": {"in_process": S3_RATIO, "peak_mb": PEAK_MB},
    }
    data["goals_met"] = {"in_process": data["ratio_in_process"] <= S3_RATIO, "peak_rss": max(peaks) <= PEAK_MB}
    save("s3", data)
    assert min(gates) <= 0.5 * full, data  # history-independent; the ratio is in goals_met
    assert data["gate_peak_rss_mb"] <= PEAK_MB, data


# ---------------------------------------------------------------- sha256


@pytest.fixture(scope="module")
def big_checkpoint():
    base = tempfile.mkdtemp(prefix="ckpt-sha-")
    step = os.path.join(base, "global_step_1", "actor", "dcp_checkpoint")
    os.makedirs(step)
    block = os.urandom(1024 * 1024)
    for r in range(16):
        with open(os.path.join(step, "__%d_0.distcp" % r), "wb") as fh:
            for k in range(128):
                fh.write(block[k:] + block[:k])
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_sha256_manifest_vs_sha256sum(big_checkpoint):
    base = big_checkpoint
    step = os.path.join(base, "global_step_1")
    shell = "find %s -type f -print0 | xargs -0 -n1 -P%d sha256sum > /dev/null" % (step, NPROC)
    ours = [sys.executable, "-c", HASH_SNIPPET % (COLLECTIONS, base, NPROC)]
    timed(shell, shell=True)  # page cache warm for both
    bases, gates, peaks = [], [], []
    cpu = {"sha256sum": [], "manifest": []}
    for _round in range(ROUNDS):
        wall, _peak, _out, used = timed(shell, shell=True)
        bases.append(wall)
        cpu["sha256sum"].append(used)
        wall, peak, out, used = timed(ours)
        cpu["manifest"].append(used)
        assert out.split()[1:] == ["16", str(16 * 128 * 1024 * 1024)], out
        gates.append(wall)
        peaks.append(peak)
    data = {
        "goals_met": None,
        "bytes": 16 * 128 * 1024 * 1024,
        "files": 16,
        "workers": NPROC,
        "sha256sum_xargs_s": summary(bases),
        "manifest_process_s": summary(gates),
        "cpu_s": {k: summary(v) for k, v in cpu.items()},
        "ratio": round(min(gates) / min(bases), 4),
        "ratio_cpu": round(min(cpu["manifest"]) / min(cpu["sha256sum"]), 4),
        "peak_rss_mb": round(max(peaks), 1),
        "targets": {"ratio": SHA_RATIO, "peak_mb": PEAK_MB},
    }
    data["goals_met"] = {"ratio": data["ratio"] <= SHA_RATIO, "peak_rss": data["peak_rss_mb"] <= PEAK_MB}
    save("sha256", data)
    assert data["ratio"] <= SHA_RATIO, data
    assert data["peak_rss_mb"] <= PEAK_MB, data
