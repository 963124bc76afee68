# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Records made for people: one directory per run, an index per Job, readable by the team, no API noise."""

import os
import random
import stat

import pytest
import yaml
from ansible_collections.rlark.ops.plugins.module_utils import records
from ansible_collections.rlark.ops.plugins.module_utils.preflight import preflight
from migration_inputs import example


def read(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def test_a_second_writer_in_the_race_window_never_replaces_the_first(tmp_path, monkeypatch):
    """Two runs writing the same record at once: the one that loses the race fails, the winner's record stays."""
    run_id = records.new_run_id("stop")
    real_mkstemp = records.tempfile.mkstemp
    raced = []

    def mkstemp_after_the_other_run_wrote(*args, **kwargs):
        # The other run writes its record in the window between this run's checks and its final write.
        if not raced:
            raced.append(True)
            records.write_record(str(tmp_path), "demo", "stop", {"writer": "first"}, run_id)
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(records.tempfile, "mkstemp", mkstemp_after_the_other_run_wrote)
    with pytest.raises(ValueError, match="already exists"):
        records.write_record(str(tmp_path), "demo", "stop", {"writer": "second"}, run_id)
    assert read(str(tmp_path / "demo" / run_id / "stop.yml"))["data"] == {"writer": "first"}
    assert [n for n in os.listdir(str(tmp_path / "demo" / run_id)) if n.startswith(".")] == []


def test_one_directory_per_run_with_an_index_and_outcomes(tmp_path):
    rand = random.Random(7)
    migrate, stop = records.new_run_id("migrate", rand=rand), records.new_run_id("guarded-stop", rand=rand)
    assert migrate != stop and migrate.split("-")[1] == "migrate" and records.RUN_ID_PATTERN.match(migrate)
    for kind, outcome in (("preflight", "passed"), ("run", "created"), ("verify", "verified")):
        records.write_record(str(tmp_path), "demo", kind, {"k": kind}, migrate, outcome=outcome)
    records.write_record(str(tmp_path), "demo", "stop", {"step": 3}, stop, outcome="stopped")
    assert sorted(os.listdir(str(tmp_path / "demo"))) == sorted([migrate, stop])
    index = read(str(tmp_path / "_index" / "demo.yml"))
    assert [(r["run_id"], r["records"]) for r in index["runs"]] == sorted(
        [(migrate, {"preflight": "passed", "run": "created", "verify": "verified"}), (stop, {"stop": "stopped"})]
    )
    head = read(str(tmp_path / "demo" / migrate / "run.yml"))
    assert head["run_id"] == migrate and head["outcome"] == "created"
    assert head["collection_version"] == "0.1.0" and head["identity"]["user"]
    assert head["time"].endswith("Z") and head["time"][10] == "T"


def test_files_are_group_readable_by_default_and_the_mode_is_configurable(tmp_path):
    old = os.umask(0o077)
    try:
        default = records.write_record(str(tmp_path), "demo", "stop", {}, "20260101T000000Z-a")
        private = records.write_record(str(tmp_path), "demo", "stop", {}, "20260101T000000Z-b", mode=0o600)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(default).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(os.path.dirname(default)).st_mode) == 0o750
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600


def test_api_noise_is_stripped_and_times_are_iso_utc(tmp_path):
    job = {
        "apiVersion": "rlinf.io/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": "demo",
            "managedFields": [{"manager": "kube-apiserver"}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "rl"},
        },
    }
    path = records.write_record(
        str(tmp_path), "demo", "stop", {"job_yaml": job, "newest_mtime": 0.0}, "20260101T000000Z"
    )
    data = read(path)["data"]
    assert data["job_yaml"]["metadata"] == {"name": "demo", "annotations": {"team": "rl"}}
    assert data["newest_mtime"] == "1970-01-01T00:00:00Z"
    bare = records.write_record(str(tmp_path), "demo", "job", job, "20260101T000000Z", wrap=False)
    assert "managedFields" not in read(bare)["metadata"]


def test_nanosecond_mtimes_of_a_tree_proof_stay_exact(tmp_path):
    # A resume record keeps the original tree's mtime_ns to the nanosecond (read as epoch seconds they
    # overflow the platform's time conversion and the record could not be written at all).
    tree = {"files": {"global_step_3/actor/.metadata": {"size": 2098, "mtime_ns": 1796086324766677852}}}
    path = records.write_record(str(tmp_path), "demo", "resume", {"original_tree": tree}, "20260101T000000Z")
    assert read(path)["data"]["original_tree"] == tree


def test_refused_inputs_go_to_a_clearly_named_folder(tmp_path):
    manifest, profile = example("sandbox")
    manifest["roles"][0]["env"].append({"name": "DB_PASS", "value": "hunter2"})
    refused = preflight(manifest, profile)
    manifest["roles"][0]["image"]["digest"] = "not-a-digest"
    invalid = preflight(manifest, profile)
    assert not refused["ok"] and refused["job_name"] and not invalid["ok"] and invalid["job_name"] is None
    for result in (refused, invalid):
        paths = records.write_preflight_records(str(tmp_path), result)
        assert os.listdir(str(tmp_path)) == ["invalid-inputs"]  # and no index of a Job
        assert read(paths[0])["outcome"] == "refused" and read(paths[0])["data"]["job_name"] == result["job_name"]
    assert len(os.listdir(str(tmp_path / "invalid-inputs"))) == 2


def test_a_nanosecond_mtime_is_kept_and_an_epoch_mtime_becomes_a_time(tmp_path):
    # A checkpoint tree snapshot carries os.stat's st_mtime_ns; read as seconds it overflowed the record write.
    data = {"tree": {"global_step_3/a.pt": {"mtime_ns": 1796085685718159630, "size": 3}}, "mtime": 0}
    path = records.write_record(str(tmp_path), "job", "resume", data, "20261201T000000Z-resume-abcdef")
    with open(path) as fh:
        written = yaml.safe_load(fh)["data"]
    assert written["tree"]["global_step_3/a.pt"]["mtime_ns"] == 1796085685718159630
    assert written["mtime"] == "1970-01-01T00:00:00Z"


def test_identity_names_the_api_user_and_groups_next_to_the_controller_user():
    identity = records.acting_identity("set-by-hand", {"username": "rlark-operator", "groups": ["rlark:operators"]})
    assert identity["api_user"] == "rlark-operator" and identity["api_groups"] == ["rlark:operators"]
    assert identity["user"] and identity["host"]
    assert "api_groups" not in records.acting_identity("set-by-hand")
