# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_ckpt_gate through AnsibleModule (ansible's patch_module_args): result shape, failures, check mode."""

import json
import os
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "checkpoint")
)

import ckpt_fixtures as F
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import s3 as s3_module
from ansible_collections.rlark.ops.plugins.modules import rlark_ckpt_gate

ROW = F.ROWS[0]
RESULT_KEYS = {
    "complete",
    "step",
    "checkpoint",
    "runner",
    "backend",
    "missing",
    "findings",
    "integrity_lists",
    "files",
    "bytes",
    "newest_mtime",
    "latest_complete_step",
    "steps",
}


def run(args, capsys, check_mode=False):
    args = dict(args)
    if check_mode:
        args["_ansible_check_mode"] = True
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        rlark_ckpt_gate.main()
    result = json.loads(capsys.readouterr()[0])
    result["_rc"] = exc.value.code
    return result


def seed(root, *steps):
    for step, case in steps:
        F.write_local(str(root), "global_step_%d" % step, F.tree(ROW, step, case), age=1000.0 / step)


@pytest.mark.parametrize("check_mode", [False, True])
def test_complete_checkpoint(tmp_path, capsys, check_mode):
    seed(tmp_path, (10, "complete"), (20, "marker-missing"))
    r = run({"path": str(tmp_path), "actor_world_size": 2}, capsys, check_mode=check_mode)
    assert r["_rc"] == 0 and not r.get("failed") and r["changed"] is False
    assert set(r) >= RESULT_KEYS
    assert r["complete"] and r["step"] == 10 and r["checkpoint"] == str(tmp_path / "global_step_10")
    assert r["runner"] == "embodied" and r["backend"] == "fsdp" and r["latest_complete_step"] == 10
    assert [p["id"] for p in r["findings"]] == ["newest-step-incomplete"]


def test_incomplete_fails_with_one_paragraph(tmp_path, capsys):
    seed(tmp_path, (10, "marker-missing"))
    r = run({"path": str(tmp_path), "runner": "embodied", "backend": "fsdp", "actor_world_size": 2}, capsys)
    assert r["_rc"] == 1 and r["failed"] and r["changed"] is False
    assert "\n" not in r["msg"] and "actor/model_state_dict/full_weights.pt" in r["msg"]
    assert "do not resume from this step" in r["msg"]
    assert r["missing"] == ["actor/model_state_dict/full_weights.pt"]


def test_incomplete_without_failing(tmp_path, capsys):
    seed(tmp_path, (10, "too-recent"))
    r = run({"path": str(tmp_path), "fail_when_incomplete": False}, capsys)
    assert r["_rc"] == 0 and not r.get("failed") and r["complete"] is False
    assert [p["id"] for p in r["findings"]] == ["write-too-recent"]


@pytest.mark.parametrize(
    "args,fragment",
    [
        ({"path": "/nonexistent/ckpt"}, "/nonexistent/ckpt does not exist"),
        ({"runner": "ppo"}, "value of runner must be one of"),
        ({"backend": "fsdp", "tensor_parallel": 4}, "inconsistent with backend fsdp"),
        ({"path": "/tmp", "s3": {"bucket": "x"}}, "mutually exclusive"),
    ],
)
def test_bad_input(tmp_path, capsys, args, fragment):
    seed(tmp_path, (10, "complete"))
    args = dict({"path": str(tmp_path)}, **args)
    r = run(args, capsys)
    assert r["_rc"] == 1 and r["failed"] and fragment in r["msg"]
    assert "Traceback" not in r["msg"]


def test_s3_options_fall_back_to_aws_env(monkeypatch, capsys):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    seen = {}

    def fake_source(bucket, **kw):
        seen.update(kw, bucket=bucket)
        raise layouts.GateError("stop here")

    monkeypatch.setattr(s3_module, "S3Source", fake_source)  # imported by the module only for s3
    r = run({"s3": {"bucket": "checkpoints", "prefix": "a/checkpoints"}}, capsys)
    assert r["failed"] and r["msg"] == "stop here"
    assert seen == {
        "bucket": "checkpoints",
        "prefix": "a/checkpoints",
        "endpoint_url": "http://127.0.0.1:1",
        "region": "us-east-1",
        "access_key": "AKIAENV",
        "secret_key": "env-secret",
    }


def test_secret_key_is_no_log():
    spec = rlark_ckpt_gate.argument_spec()
    assert spec["s3"]["options"]["secret_key"]["no_log"] is True
    assert spec["s3"]["options"]["access_key"]["no_log"] is False


def test_ansible_doc_renders_and_matches_the_argspec():
    import subprocess

    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(root, ".build", "collections"))
    doc_bin = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    proc = subprocess.run(
        [doc_bin, "--json", "rlark.ops.rlark_ckpt_gate"], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["rlark.ops.rlark_ckpt_gate"]
    options = doc["doc"]["options"]
    spec = rlark_ckpt_gate.argument_spec()
    assert set(options) == set(spec)
    assert set(options["s3"]["suboptions"]) == set(spec["s3"]["options"])
    for name, opt in spec.items():
        assert options[name]["type"] == opt["type"]
        assert options[name].get("default") == opt.get("default"), name
    assert set(doc["return"]) >= RESULT_KEYS


def test_integrity_write_then_verify_through_the_module(tmp_path, capsys):
    seed(tmp_path, (10, "complete"))
    args = {"path": str(tmp_path), "actor_world_size": 2, "quiet_seconds": 120}
    dry = run(dict(args, integrity="write"), capsys, check_mode=True)
    assert dry["changed"] is False and dry["integrity"]["status"] == "would-write"
    assert not (tmp_path / "rlark-integrity").exists()
    wrote = run(dict(args, integrity="write", hash_workers=2), capsys)
    assert wrote["changed"] is True and wrote["integrity"]["status"] == "written"
    assert (tmp_path / "rlark-integrity" / "global_step_10.json").is_file()
    ok = run(dict(args, integrity="verify"), capsys)
    assert ok["_rc"] == 0 and ok["complete"] and ok["integrity"]["status"] == "verified"
    shard = tmp_path / "global_step_10" / "actor" / "dcp_checkpoint" / "__1_0.distcp"
    stat = os.stat(shard)
    data = bytearray(shard.read_bytes())
    data[0] ^= 0xFF
    shard.write_bytes(bytes(data))
    os.utime(shard, (stat.st_atime, stat.st_mtime))
    bad = run(dict(args, integrity="verify", integrity_manifest=wrote["integrity"]["manifest"]), capsys)
    assert bad["_rc"] == 1 and bad["failed"] and not bad["complete"]
    assert [p["path"] for p in bad["findings"] if p["id"] == "integrity-mismatch"] == [
        "actor/dcp_checkpoint/__1_0.distcp"
    ]
    assert "do not resume from it" in bad["msg"]


def test_integrity_store_result_returns_the_manifest_and_writes_nothing(tmp_path, capsys):
    seed(tmp_path, (10, "complete"))
    args = {"path": str(tmp_path), "actor_world_size": 2, "quiet_seconds": 120, "integrity": "write"}
    kept = run(dict(args, integrity_store="result"), capsys)
    assert kept["_rc"] == 0 and kept["changed"] is False and kept["integrity"]["status"] == "returned"
    assert kept["integrity"]["manifest"]["file_count"] > 0 and not (tmp_path / "rlark-integrity").exists()
    both = run(dict(args, integrity_store="result", integrity_path=str(tmp_path / "m.json")), capsys)
    assert both["_rc"] == 1 and "integrity_store=result" in both["msg"] and not (tmp_path / "m.json").exists()


def test_findings_have_one_name(tmp_path, capsys):
    seed(tmp_path, (10, "complete"), (20, "marker-missing"))
    r = run({"path": str(tmp_path), "actor_world_size": 2}, capsys)
    assert "problems" not in r and [p["id"] for p in r["findings"]] == ["newest-step-incomplete"]


def test_after_step_not_reached_fails_naming_what_was_awaited(tmp_path, capsys):
    seed(tmp_path, (10, "complete"))
    r = run({"path": str(tmp_path), "actor_world_size": 2, "after_step": 10}, capsys)
    assert r["_rc"] == 1 and r["failed"] and r["complete"]
    assert "a complete checkpoint newer than global_step_10" in r["msg"], r["msg"]
    assert r["timed_out"] is False and r["wait_for"].startswith("a complete checkpoint newer than global_step_10")


def test_the_wait_inside_the_module_ends_when_the_next_step_is_complete(tmp_path, capsys, monkeypatch):
    """The gate polls in-process: the next complete step appears between two judgements, no module re-run."""
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import gate, gate_task

    seed(tmp_path, (10, "complete"))
    calls = []
    real = gate.run_gate

    def judged(source, options):
        calls.append(1)
        if len(calls) == 2:  # the trainer finishes the next save while the module waits
            seed(tmp_path, (20, "complete"))
        return real(source, options)

    monkeypatch.setattr(gate_task, "run_gate", judged)
    args = {"path": str(tmp_path), "actor_world_size": 2, "after_step": 10, "wait_timeout": 600}
    r = run(dict(args, wait_interval=0.01), capsys)
    assert r["_rc"] == 0 and r["complete"] and r["step"] == 20 and r["latest_complete_step"] == 20
    assert r["timed_out"] is False and len(calls) == 2 and r["wait_log"]


def test_waiting_before_anything_was_saved_times_out_with_the_reason(tmp_path, capsys):
    r = run({"path": str(tmp_path), "wait_timeout": 1, "wait_interval": 0.05}, capsys)
    assert r["_rc"] == 1 and r["failed"] and "no global_step_* directory" in r["msg"], r["msg"]


def test_a_wrong_option_fails_before_waiting(tmp_path, capsys):
    r = run({"path": str(tmp_path), "wait_timeout": 600, "step": "x"}, capsys)
    assert r["_rc"] == 1 and "step must be a number, global_step_N or 'latest'" in r["msg"]
