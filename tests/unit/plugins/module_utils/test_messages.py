# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every message names what the user sets: the playbook variable (``rlark_*``), once, with what to do."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import joblogs, jobs, review, role_verdicts, verify
from migration_inputs import example
from rlark_fake_api import FakeApi, job, make_client


def test_a_differing_job_names_the_playbook_switch_once():
    api = FakeApi()
    api.add("jobs", job(phase="Running"))
    desired = job(phase=None)
    desired["spec"]["tasks"][0]["runScript"] = "python train.py runner.max_steps=20"
    with pytest.raises(jobs.Refused) as err:
        jobs.ensure_present(make_client(api), desired)
    hint = next(f["hint"] for f in err.value.findings if f["id"] == "job-spec-differs")
    assert hint.count("-e rlark_update=true") == 1 and "Review the diff" not in hint
    # Issue 32, item 4: plain --check --diff refuses (update is false) and shows no diff; the command that does:
    assert hint.count("-e rlark_update=true --check --diff") == 1, hint
    assert "re-run with --check --diff" not in hint


@pytest.mark.parametrize(
    "source,variable",
    [("files", "rlark_logs_dir"), ("gateway", "rlark_gateway_url"), ("kubeconfig", "rlark_data_plane_kubeconfigs")],
)
def test_a_log_source_without_its_setting_names_the_variable_once(source, variable):
    with pytest.raises(joblogs.LogSourceError) as err:
        joblogs.read_logs(source, "demo")
    assert str(err.value).count(variable) == 1


@pytest.mark.parametrize(
    "source,hint",
    [
        ("/nonexistent/launch_manifest.yml", "-e rlark_launch_manifest=PATH"),
        ("kind: x\nroles: [a\n", "Fix the YAML syntax at the line and column shown"),
        ({"kind": "launch-manifest"}, "in the launch manifest given as rlark_launch_manifest"),
    ],
    ids=["missing-file", "yaml-syntax", "schema"],
)
def test_input_errors_have_their_own_hint(source, hint):
    found, _valid = review.input_findings(source, "manifest")
    assert found and all(f["id"] == "manifest-invalid" for f in found)
    assert found[0]["hint"].count(hint) == 1
    assert not any("Fix the field (see" in f["hint"] for f in found)


def test_profile_errors_name_the_profile_variable():
    found, _valid = review.input_findings("/nonexistent/profile.yml", "profile")
    assert found[0]["hint"].count("-e rlark_deployment_profile=PATH") == 1


@pytest.mark.parametrize(
    "kind,rename,path,suggestion",
    [
        (
            "manifest",
            lambda m: m["roles"][0].__setitem__("entrypont", m["roles"][0].pop("entrypoint")),
            "manifest.roles[0].entrypont",
            "did you mean 'entrypoint'?",
        ),
        (
            "manifest",
            lambda m: m.__setitem__("checkpiont", m.pop("checkpoint")),
            "manifest.checkpiont",
            "did you mean 'checkpoint'?",
        ),
        (
            "profile",
            lambda p: p["roles"][0].__setitem__("global_match", p["roles"][0].pop("global_matches")),
            "profile.roles[0].global_match",
            "did you mean 'global_matches'?",
        ),
    ],
    ids=["entrypont", "checkpiont", "global_match"],
)
def test_a_mistyped_key_names_its_path_and_the_nearest_known_key_once(kind, rename, path, suggestion):
    """Issue 32, item 5: a typo gets the exact path, "did you mean" the nearest key, and the variable to fix."""
    manifest, profile = example("sandbox")
    record = manifest if kind == "manifest" else profile
    rename(record)
    found, _valid = review.input_findings(record, kind)
    typo = [f for f in found if f["path"] == path]
    assert len(typo) == 1, found
    assert typo[0]["message"].count(suggestion) == 1, typo[0]
    variable = "rlark_launch_manifest" if kind == "manifest" else "rlark_deployment_profile"
    assert typo[0]["hint"].count(variable) == 1, typo[0]


def test_verify_of_a_missing_job_says_it_does_not_exist():
    """Issue 32, item 6: a missing Job is "does not exist", with the variable that names it."""
    state = verify.job_state({}, None, "demo")
    refusal = role_verdicts.verify_submitted_refusal(state, "demo")
    assert refusal.count("Job demo does not exist") == 1, refusal
    assert "not submitted as designed" not in refusal
    assert refusal.count("rlark_job_name") == 1, refusal


def running_report(running, missing):
    observed = {"actor": {"replicas": 1, "pods": 1, "pod_phases": ["Running" if running else "Pending"], "nodes": []}}
    if running:
        observed["actor"]["nodes"] = ["a100-01"]
    state = {"running": running, "observed": observed, "findings": []}
    signals = {"ok": not missing, "seen": ["worker group"], "missing": missing, "failures": [], "errors": []}
    logs = {"timed_out": bool(missing), "waited_seconds": 180.2}
    return role_verdicts.verify_report("demo", "normal", {"submitted": True}, state, signals, logs)


def test_verify_of_running_pods_without_signals_is_not_called_not_running():
    """Issue 32, item 6: pods that run as designed are said to run; what is missing is said in words, no JSON."""
    msg = role_verdicts.verify_failure(running_report(True, ["Ray head started"]), 180, 180.2)
    assert msg.count("Job demo is submitted and its pods run as designed (actor 1/1 Running on a100-01)") == 1, msg
    assert msg.count("Start-up signals not seen in the head's log within 180.2 s: Ray head started") == 1, msg
    assert "not verified as running" not in msg and "Running: True" not in msg and "{" not in msg
    assert msg.count("rlark_verify_wait_timeout (now 180 s)") == 1, msg
    pending = role_verdicts.verify_failure(running_report(False, []), 180, None, "timed out after 180 s")
    assert pending.count("Job demo is submitted but its pods do not run as designed within 180 s: actor 0/1") == 1
    assert pending.count("rlark_verify_wait_timeout") == 1, pending
    assert role_verdicts.verify_failure(running_report(True, []), 180) == ""
