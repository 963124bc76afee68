"""Made for people: every message names what the user sets, an unreachable API fails fast naming its URL,
planted secrets never show, and records tell the story of each run (one directory per run id)."""

import os
import stat
import time

import pytest
import yaml
from helpers import run_playbook
from playbook_support import INVENTORY, Workload, failed_messages

pytestmark = pytest.mark.sandbox

SECRETS = {
    "DB_PASS": "hunter2-db",
    "PGPASSWORD": "pg-Secret-42",
    "GH_PAT": "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
    "OPENAI_KEY": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "WANDB_KEY": "0123456789abcdef0123456789abcdef01234567",
    "ALERTS": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
}


def walk_files(root):
    for base, _dirs, files in os.walk(root):
        for name in files:
            yield os.path.join(base, name)


def test_missing_inputs_are_named_with_the_option_to_pass(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    # No inventory: the sandbox inventory's group_vars would give both inputs.
    run = run_playbook("playbooks/migrate.yml", {"rlark_records_dir": w.records}, env=sandbox.env(),
                       kubeconfig=sandbox.kubeconfig)  # fmt: skip
    assert run.rc != 0
    shown = "\n".join(failed_messages(run))
    assert shown.count("pass -e rlark_launch_manifest=PATH") == 1, shown
    assert shown.count("pass -e rlark_deployment_profile=PATH") == 1, shown
    assert "is undefined" not in run.stdout + run.stderr
    assert not os.path.exists(w.records), "a run without inputs wrote records"


def test_verify_of_a_missing_job_says_it_does_not_exist(sandbox, tmp_path):
    """Issue 32, item 6: "does not exist", with the variable that names the Job, not "not submitted as designed"."""
    w = Workload(sandbox, tmp_path)
    run = w.play("verify.yml", extra={"rlark_job_name": w.name})
    shown = "\n".join(failed_messages(run))
    assert run.rc != 0 and shown.count("Job %s does not exist" % w.name) == 1, shown
    assert "not submitted as designed" not in shown and shown.count("rlark_job_name") == 1, shown


@pytest.mark.parametrize(
    "content,hint",
    [
        (None, "Pass the launch manifest as a readable YAML file: -e rlark_launch_manifest=PATH"),
        ("kind: launch-manifest\nroles: [a\n", "Fix the YAML syntax at the line and column shown, in the file given "
         "as rlark_launch_manifest."),
    ],
    ids=["missing-file", "yaml-syntax"],
)  # fmt: skip
def test_file_and_yaml_errors_have_their_own_hint(sandbox, tmp_path, content, hint):
    w = Workload(sandbox, tmp_path)
    path = str(tmp_path / "broken.yml")
    if content is not None:
        with open(path, "w") as fh:
            fh.write(content)
    run = w.play("migrate.yml", extra={"rlark_launch_manifest": path})
    assert run.rc != 0
    shown = "\n".join(failed_messages(run))
    assert shown.count(hint) == 1, shown
    assert "manifest-invalid" in shown and "Fix the field" not in shown
    assert os.listdir(w.records) == ["invalid-inputs"], "a refused input must not look like a run of a Job"


def test_unreachable_api_fails_fast_naming_the_server(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    kubeconfig = str(tmp_path / "unreachable.kubeconfig")
    with open(kubeconfig, "w") as fh:
        yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "dead",
            "clusters": [{"name": "dead",
                          "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "dead", "context": {"cluster": "dead", "user": "u"}}],
        }, fh)  # fmt: skip
    started = time.monotonic()
    run = w.play("migrate.yml", kubeconfig=kubeconfig)
    elapsed = time.monotonic() - started
    assert run.rc != 0
    shown = failed_messages(run)
    assert len(shown) == 1 and shown[0].count("https://127.0.0.1:1") == 1, shown
    assert "rlark_kubeconfig" in shown[0] and "ConnectionRefusedError" in shown[0]
    assert elapsed <= 20.0, "an unreachable API took %.1f s to fail" % elapsed


def test_planted_secrets_never_show_and_are_found_at_the_manifest_path(sandbox, tmp_path):
    def plant(manifest, _profile):
        manifest["roles"][0]["env"] += [{"name": k, "value": v} for k, v in SECRETS.items()]

    w = Workload(sandbox, tmp_path, mutate=plant)
    log = str(tmp_path / "ansible.log")
    env = dict(sandbox.env(), ANSIBLE_LOG_PATH=log)
    run = run_playbook("playbooks/migrate.yml", w.vars(), check=True, diff=True, env=env,
                       kubeconfig=sandbox.kubeconfig, inventory=INVENTORY)  # fmt: skip
    assert run.rc != 0
    first = len(w.manifest["roles"][0]["env"]) - len(SECRETS)
    shown = "\n".join(failed_messages(run))
    for index in range(len(SECRETS)):
        assert shown.count("manifest.roles[0].env[%d]" % (first + index)) == 1, shown
    assert "spec.tasks[" not in shown
    assert shown.count("Kubernetes Secret") == len(SECRETS)  # the hint, intact, once per finding
    texts = {"stdout": run.stdout, "stderr": run.stderr}
    with open(log) as fh:
        texts["log"] = fh.read()
    for path in walk_files(w.records):
        with open(path) as fh:
            texts[path] = fh.read()
    leaks = [(where, name) for where, text in texts.items() for name, value in SECRETS.items() if value in text]
    assert leaks == []
    assert w.info() is None


def test_migrate_stop_resume_records_one_directory_per_run(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    try:
        migrate = w.play("migrate.yml")
        assert migrate.rc == 0, migrate
        summary = next(r for t, r in migrate.task_results() if t == "Summarise the migration")["msg"]
        w.wait_steps(2)
        stop = w.play("guarded_stop.yml", extra={"rlark_jobs": [w.name]})
        assert stop.rc == 0, stop
        again = w.play("migrate.yml")
        assert again.rc != 0
        shown = failed_messages(again)
        assert len(shown) == 1 and shown[0].count("is stopped: resume it with resume.yml") == 1, shown
        resume = w.play("resume.yml", extra={"rlark_resume_source": w.name, "rlark_verify_timeout": 120})
        assert resume.rc == 0, resume
        w.created.append(resume.task_results()[-1][1]["msg"].split()[0])

        runs = sorted(os.listdir(os.path.join(w.records, w.name)))
        kinds = [sorted(os.listdir(os.path.join(w.records, w.name, r))) for r in runs]
        assert [r.split("-")[1] for r in runs] == ["migrate", "guarded", "migrate", "resume"], runs
        assert kinds[0] == ["preflight.yml", "run.yml", "verify.yml"], kinds
        assert "stop.yml" in kinds[1] and kinds[2] == ["preflight.yml"], kinds
        assert kinds[3] == ["original-job.yml", "resume-proof.yml", "resume.yml"], kinds
        assert "%s/%s/%s" % (w.records, w.name, runs[0]) in "\n".join(summary)
        new_runs = os.listdir(os.path.join(w.records, w.created[-1]))
        assert new_runs == [runs[3]], "the resumed Job's verify record must carry the resume's run id"
        with open(os.path.join(w.records, "_index", w.name + ".yml")) as fh:
            index = yaml.safe_load(fh)
        assert [r["run_id"] for r in index["runs"]] == runs
        assert index["runs"][0]["records"]["run"] == "created"
        assert index["runs"][0]["records"]["verify"] == "verified"
        for path in walk_files(w.records):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o640, path
            with open(path) as fh:
                text = fh.read()
            assert "managedFields" not in text, path
            if not path.endswith(".yml"):
                assert path.endswith(".log"), path  # exported pod logs are plain text beside the records
                continue
            doc = yaml.safe_load(text)
            if isinstance(doc, dict) and "record" in doc:
                run_dir = os.path.basename(os.path.dirname(path))
                assert doc["run_id"] == run_dir and doc["time"].endswith("Z"), path
                assert doc["collection_version"] and doc["identity"]["user"], path
    finally:
        w.cleanup()


def test_tags_preflight_validates_only(sandbox, tmp_path):
    w = Workload(sandbox, tmp_path)
    run = w.play("migrate.yml", args=("--tags", "preflight"))
    assert run.rc == 0, run
    tasks = [t for t, _r in run.task_results()]
    assert "Load, validate, render and review (filters on the controller)" in tasks
    assert not [t for t in tasks if "selectors" in t or "Create the Job" in t or "Summarise" in t], tasks
    assert w.info() is None, "--tags preflight created the Job"
    (run_dir,) = os.listdir(os.path.join(w.records, w.name))
    assert os.listdir(os.path.join(w.records, w.name, run_dir)) == ["preflight.yml"]
