# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resume's one owner (module_utils/resume_decision.py): each decision the resume role asks of it."""

import os

from ansible_collections.rlark.ops.plugins.module_utils import render, resume, resume_decision
from migration_inputs import example


def stopped_original(name="demo"):
    manifest, profile = example("sandbox")
    job = render.render_job(manifest, profile, name)
    job["spec"]["stopped"] = True
    return {"job": job, "tasks": [], "pods": []}, manifest, profile


def resume_job(name, step, source="demo"):
    job, _found = resume.copy_job(
        stopped_original(source)[0]["job"], name, resume_dir="/data/rlinf/logs/%s/checkpoints/global_step_%d" % (
            source, step)
    )  # fmt: skip
    return job


def test_plan_refuses_a_missing_or_running_original_before_anything_else():
    missing = resume_decision.plan("demo", {}, [], "latest", "", {})
    assert missing["refusal"] == "Job demo does not exist." and missing["location"] == {}
    resource, _m, _p = stopped_original()
    resource["job"]["spec"]["stopped"] = False
    running = resume_decision.plan("demo", resource, [], "latest", "", {})
    assert running["refusal"] == "Job demo is not stopped: stop it with a guarded stop first."


def test_plan_finds_the_earlier_resume_that_is_this_run_and_creates_nothing():
    resource, _m, _p = stopped_original()
    decided = resume_decision.plan("demo", resource, [resume_job("demo-r6", 6)], 6, "", {})
    assert decided["refusal"] == "" and decided["already"]["name"] == "demo-r6"
    assert decided["outcome"]["created"] is False and decided["outcome"]["already"] is True
    assert decided["outcome"]["message"] == "demo is already resumed as demo-r6 from step 6; nothing was created"
    assert decided["location"] == {}


def test_plan_locates_the_checkpoints_and_refuses_a_step_that_is_not_one():
    resource, manifest, _p = stopped_original()
    decided = resume_decision.plan("demo", resource, [], "global_step_36", "", {"manifest": manifest})
    assert decided["step"] == 36 and decided["already"] is None and decided["outcome"] is None
    # No head pod says which node holds the hostPath: the role refuses with the location's reason.
    assert decided["location"]["container_root"] == "/data/rlinf/logs/demo/checkpoints"
    assert not decided["location"]["ok"] and "no head pod shows which node" in decided["location"]["reason"]
    bad = resume_decision.plan("demo", resource, [], "step-12", "", {})
    assert "rlark_resume_step=step-12 is not a step" in bad["refusal"]


def test_the_reference_manifest_is_the_one_kept_for_the_step_or_the_newest_for_latest(tmp_path):
    for run, step in (("20250101T000000Z-a", 6), ("20250102T000000Z-b", 12)):
        os.makedirs(str(tmp_path / "demo" / run))
        (tmp_path / "demo" / run / "stop.yml").write_text(
            "record: {kind: stop}\ndata:\n  integrity:\n    manifest: {step_dir: global_step_%d, files: {}}\n" % step
        )
    (tmp_path / "demo" / "20250103T000000Z-c").mkdir()  # a run without a stop record
    records = resume_decision.stop_records(str(tmp_path), "demo")
    assert len(records) == 2
    assert resume_decision.reference_manifest(records, 6)["step_dir"] == "global_step_6"
    assert resume_decision.reference_manifest(records, "latest")["step_dir"] == "global_step_12"
    assert resume_decision.reference_manifest(records, 7) == {}
    assert resume_decision.stop_records(str(tmp_path), "other") == []


def test_checkpoint_refuses_a_partial_step_with_its_integrity_findings_and_names_a_complete_one():
    partial = {
        "complete": False, "step": 12, "newest_step": 12, "latest_complete_step": 6, "msg": "files differ",
        "findings": [{"id": "integrity-mismatch", "severity": "error", "path": "actor/a.pt", "message": "changed"}],
    }  # fmt: skip
    refused = resume_decision.checkpoint(partial, 12, "demo", "/c", "")
    assert refused["refusal"].startswith("Checkpoint 12 of demo is not complete, nothing was created: files differ")
    assert "integrity-mismatch" in refused["refusal"] and "in checkpoint integrity" in refused["refusal"]
    assert refused["resume_dir"] is None
    complete = {"complete": True, "step": 12, "newest_step": 12, "latest_complete_step": 12}
    decided = resume_decision.checkpoint(complete, "latest", "demo", "/c", "")
    assert decided == dict(decided, refusal="", step=12, resume_dir="/c/global_step_12", name="demo-r12")
    assert resume_decision.checkpoint(complete, "latest", "demo", "/c", "mine")["name"] == "mine"


def test_copy_refuses_a_copy_without_the_intended_overrides_with_resume_override():
    resource, manifest, profile = stopped_original()
    resume_dir = "/data/rlinf/logs/demo/checkpoints/global_step_6"
    good, _found = resume.copy_job(resource["job"], "demo-r6", resume_dir=resume_dir)
    records = {"manifest": manifest, "profile": profile}
    decided = resume_decision.copy(good, resource["job"], records, resume_dir, "demo-r6", {}, "a100-01")
    assert decided["refusal"] == "" and decided["new_location"]["ok"]
    assert decided["new_location"]["container_root"] == "/data/rlinf/logs/demo-r6/checkpoints"
    other = resume_decision.copy(good, resource["job"], records, resume_dir + "0", "demo-r6", {}, "a100-01")
    assert [(f["id"], f["severity"]) for f in other["findings"] if f["severity"] == "error"] == [
        ("resume-override", "error")
    ]
    assert "in review of the copy" in other["refusal"]


def test_tree_proof_and_outcome():
    assert resume_decision.tree({"same": True}, {"kind": "hostPath"}) == {"findings": [], "refusal": ""}
    changed = resume_decision.tree({"same": False, "appeared": ["global_step_6/actor/stray.pt"]}, {"kind": "s3"})
    assert [(f["id"], f["severity"]) for f in changed["findings"]] == [("resume-original-changed", "error")]
    assert "global_step_6/actor/stray.pt" in changed["refusal"]
    created = {"name": "demo-r6", "step": 6, "resume_dir": "/c/global_step_6", "root": "/n/checkpoints", "changed": 1}
    checked = resume_decision.outcome("demo", created, True, True)
    assert checked["message"] == "would create demo-r6 from step 6 (checks passed)"
    assert checked["verified"] == "not run (check mode)" and checked["continuity"] == "not judged"
    report = {"ok": True, "resume": {"continuity": {"verdict": "continuity-exact"}}}
    done = resume_decision.outcome("demo", created, False, True, report)
    assert done["verified"] is True and done["continuity"] == "continuity-exact" and done["created"] is True
    assert done["message"] == (
        "demo-r6 resumes demo from /c/global_step_6 (step 6), writing to its own directory /n/checkpoints"
    )
    assert resume_decision.outcome("demo", created, False, False)["verified"] == "skipped"


def test_backup_refuses_a_directory_on_a_backup_host_unless_the_node_mounts_it():
    here = {"kind": "hostPath", "node": "a100-01", "host_path": "/data/rlinf/logs/demo/checkpoints"}
    on_server = {"path": "/backup/demo", "s3": {}, "host": "backup-01", "mount": ""}
    refused = resume_decision.backup(here, "dual-01", {"files": []}, "demo", on_server, host_known=True)
    assert refused["refusal"].startswith(
        "Resume from the backup refused, nothing was created: the backup /backup/demo is on the backup host backup-01 "
        "(rlark_checkpoint_backup_host), not on node dual-01"
    ), refused
    # A host name that is not in the inventory only labels the location; a mounted directory is read on the node.
    allowed = resume_decision.backup(here, "dual-01", {"files": []}, "demo", on_server, node_host="gpu-dual")
    assert allowed == {"refusal": "", "host": "gpu-dual"}
    mounted = dict(on_server, mount="/mnt/backup-01/demo")
    assert resume_decision.backup(here, "dual-01", {"files": []}, "demo", mounted, True, "gpu-dual")["refusal"] == ""
    # The node to resume on must have an inventory host: the step is staged there.
    no_host = resume_decision.backup(here, "dual-01", {"files": []}, "demo", mounted, True)
    assert no_host == {
        "refusal": "Resume from the backup refused, nothing was created: node dual-01 (rlark_resume_node) has no "
        "inventory host; set rlark_node_name on a host, or add it to group rlark_nodes",
        "host": None,
    }
    same_node = resume_decision.backup(here, "a100-01", {"files": []}, "demo", {}, False)["refusal"]
    assert same_node.endswith("set rlark_resume_node to the approved node to run on (not a100-01, the original's).")
    assert "rlark_checkpoint_integrity_store=record" in resume_decision.backup(here, "dual-01", None, "demo", None)[
        "refusal"]  # fmt: skip


def test_the_backup_phase_through_the_action_names_what_to_set():
    from unittest import mock

    from ansible_collections.rlark.ops.plugins.action import rlark_resume_decision as action_mod

    task = mock.MagicMock(async_val=0, check_mode=True, diff=False)
    task.args = {"phase": "backup", "source": "demo", "location": {"kind": "s3"}, "node": "dual-01"}
    action = action_mod.ActionModule(task, mock.MagicMock(), mock.MagicMock(), None, mock.MagicMock(), None)
    result = action.run(task_vars={})
    assert result["changed"] is False and not result.get("failed")
    assert result["refusal"] == (
        "Resume from the backup refused, nothing was created: the checkpoint is not a hostPath (s3); only hostPath "
        "checkpoints have a backup."
    )
    # The action finds the node's inventory host (by rlark_node_name) for the owner.
    task.args = {
        "phase": "backup", "source": "demo", "node": "dual-01", "reference_manifest": {"files": []},
        "location": {"kind": "hostPath", "node": "a100-01", "host_path": "/data/rlinf/logs/demo/checkpoints"},
    }  # fmt: skip
    inventory = {"hostvars": {"gpu-dual": {"rlark_node_name": "dual-01"}, "other": {}}, "groups": {}}
    found = action_mod.ActionModule(task, mock.MagicMock(), mock.MagicMock(), None, mock.MagicMock(), None)
    assert found.run(task_vars=inventory)["decision"] == {"refusal": "", "host": "gpu-dual"}
