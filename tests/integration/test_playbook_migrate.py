"""migrate.yml on the live sandbox: refusals create nothing, a clean run is Running and idempotent."""

import os

import pytest
from independent import assert_nothing_created
from playbook_support import Workload, all_output
from refusals import failed_task, stopping_errors

pytestmark = pytest.mark.sandbox


def _no_digest(m, p):
    m["roles"][0]["image"] = dict(m["roles"][0]["image"], reference="registry.example.com/rlinf/rlinf:v0.2")
    m["roles"][0]["image"].pop("digest")


def _head_two_replicas(m, p):
    p["roles"][0]["replicas"] = 2


def _multivalue_selector(m, p):
    p["roles"][1]["selector"] = {"kubernetes.io/hostname": "a100-02,a100-03"}


def _secret_env(m, p):
    m["roles"][0]["env"].append({"name": "WANDB_API_KEY", "value": "3f9a1c0d7e5b4a2c9d8e7f6a5b4c3d2e1f0a9b8c"})


def _legacy_field(m, p):
    m["roles"][1]["num_workers"] = 2


def _unapproved_hostpath(m, p):
    p["host_paths"] = []


def _two_clusters(m, p):
    # dual-01 exists in rlark-a100 and (cordoned) in rlark-h100: not unique, proven only by the live proof.
    p["roles"][1]["selector"] = {"kubernetes.io/hostname": "dual-01"}
    p["roles"][1]["replicas"] = 1
    p["roles"][1]["global_matches"] = [{"name": "dual-01", "namespace": "rlark-a100"}]


def _drifted_match(m, p):
    # The admin's record names another Node than the one the head's selector matches today.
    p["roles"][0]["global_matches"] = [{"name": "a100-02", "namespace": "rlark-a100"}]
    for approval in p["host_paths"]:
        approval["nodes"] = sorted(set(approval.get("nodes") or []) | {"a100-02"})


PREFLIGHT = "Refuse to go on when the review found errors (nothing is created)"
PROOF = "Refuse when a selector is not proven"
HOSTPATH = "Refuse when a hostPath is missing or unusable on a matched node"

# finding id that must stop the run -> (mutation, the refusal task that fails, other errors it implies)
REFUSALS = {
    "image-not-pinned": (_no_digest, PREFLIGHT, ()),
    # Two head replicas also disagree with the head's single global match.
    "head-replicas": (_head_two_replicas, PREFLIGHT, ("replicas-match-mismatch",)),
    "selector-multivalue": (_multivalue_selector, PREFLIGHT, ()),
    "env-secret": (_secret_env, PREFLIGHT, ()),
    "legacy-field": (_legacy_field, PREFLIGHT, ()),
    "hostpath-unapproved": (_unapproved_hostpath, PREFLIGHT, ()),
    "selector-multi-cluster": (_two_clusters, PROOF, ()),
    # The selector_proof role passes the profile; rlark_node_match reads its recorded match lists.
    "selector-drift": (_drifted_match, PROOF, ()),
}


@pytest.mark.parametrize("finding", sorted(REFUSALS))
def test_migrate_refuses_each_stop_condition_and_creates_nothing(sandbox, tmp_path, finding):
    mutate, refusal_task, implied = REFUSALS[finding]
    w = Workload(sandbox, tmp_path, mutate=mutate)
    try:
        run = w.play("migrate.yml")
        assert run.rc != 0, run
        assert failed_task(run) == refusal_task, run
        assert stopping_errors(run) == sorted((fid, "error") for fid in (finding, *implied)), run
        assert_nothing_created(sandbox, w.name)
    finally:
        w.cleanup()


def test_migrate_check_mode_then_clean_run_then_unchanged(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    try:
        check = w.play("migrate.yml", check=True, diff=True)
        assert check.rc == 0, check
        created = next(r for t, r in check.task_results() if t == "Create the Job (server-side dry run in check mode)")
        assert created["diff"]["after"]["metadata"]["name"] == w.name, created
        assert_nothing_created(sandbox, w.name)  # check mode: server-side dry run only
        assert not os.path.isdir(w.records), "check mode wrote records"

        first = w.play("migrate.yml")
        assert first.rc == 0, first
        assert first.stats["localhost"]["changed"] == 1, first.stats
        live = w.info()
        assert live["job"]["status"]["phase"] == "Running"
        assert {p["status"]["node"] for p in live["pods"]} == {"a100-01", "a100-02", "a100-03"}
        run_record = w.records_of("run")[0]["data"]
        assert run_record["job_name"] == w.name
        assert run_record["manifest_version"] == w.manifest["version"]
        assert run_record["profile_version"] == w.profile["version"]
        assert run_record["reviewed_job"]["spec"]["tasks"][0]["head"] is True
        assert run_record["selector_proof"]["tasks"], run_record
        verify = w.records_of("verify")[-1]["data"]
        assert verify["submitted"] and verify["running"] and verify["ok"], verify
        assert "Executing run script..." in verify["signals"]["seen"]

        second = w.play("migrate.yml")
        assert second.rc == 0, second
        assert second.stats["localhost"]["changed"] == 0, second.stats

        alone = w.play("verify.yml", extra={"rlark_job_name": w.name})
        assert alone.rc == 0, alone
        assert w.records_of("verify")[-1]["data"]["running"] is True
    finally:
        w.cleanup()


def test_hostpath_missing_on_one_matched_node_is_refused_naming_it(sandbox, tmp_path):
    path = "/data/rollout-cache-%s" % os.urandom(3).hex()

    def rollout_cache(m, p):
        m["roles"][1]["mounts"] = [
            {"name": "cache", "source": {"host_path": path}, "target": "/cache", "mode": "rw", "purpose": "output"}
        ]
        p["host_paths"].append(
            {
                "path": path,
                "nodes": ["a100-02", "a100-03"],
                "mode": "rw",
                "permissions": "0750",
                "impact": "rollout cache",
                "cleanup": "rm after the run",
                "approved_by": "platform-admin",
            }
        )

    w = Workload(sandbox, tmp_path, mutate=rollout_cache)
    os.makedirs(os.path.join(sandbox.nodes_dir, "a100-02") + path, exist_ok=True)
    try:
        run = w.play("migrate.yml")
        assert run.rc != 0, run
        assert failed_task(run) == HOSTPATH, run
        assert stopping_errors(run) == [("hostpath-missing", "error")], run
        text = all_output(run)
        assert "does not exist on node a100-03" in text and "does not exist on node a100-02" not in text, run
        assert_nothing_created(sandbox, w.name)
    finally:
        w.cleanup()


def test_matched_node_without_inventory_host_is_a_finding(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    inventory = tmp_path / "inventory.yml"
    inventory.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    try:
        run = w.play("migrate.yml", inventory=str(inventory), extra={"rlark_logs_dir": sandbox.logs_dir})
        assert run.rc != 0, run
        assert failed_task(run) == HOSTPATH, run
        assert stopping_errors(run) == [("hostpath-node-unmapped", "error")], run
        assert "Node a100-01" in all_output(run)
        assert_nothing_created(sandbox, w.name)
    finally:
        w.cleanup()


def test_viewer_token_runs_preflight_and_proof_but_cannot_submit(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    try:
        proof = w.play("tests/integration/files/preflight_proof.yml", kubeconfig=sandbox.kubeconfig_viewer)
        assert proof.rc == 0, proof
        submit = w.play("migrate.yml", kubeconfig=sandbox.kubeconfig_viewer)
        assert submit.rc != 0 and "forbidden" in all_output(submit).lower(), submit
        assert failed_task(submit) == "Create the Job (server-side dry run in check mode)", submit
        assert_nothing_created(sandbox, w.name)
    finally:
        w.cleanup()
