# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Job labels and annotations come from the launch manifest and are reviewed like everything else."""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils.preflight import preflight
from migration_inputs import example


def with_job(**fields):
    manifest, profile = example("sandbox")
    manifest["job"].update(fields)
    return preflight(manifest, profile)


def test_labels_and_annotations_reach_the_job():
    result = with_job(labels={"team": "rl", "example.com/tier": 2}, annotations={"example.com/ticket": "OPS-12"})
    assert result["ok"], result["findings"]
    assert result["job"]["metadata"] == {
        "name": result["job_name"],
        "labels": {"team": "rl", "example.com/tier": "2"},
        "annotations": {"example.com/ticket": "OPS-12"},
    }


def test_no_labels_no_metadata_noise():
    result = with_job()
    assert result["ok"] and set(result["job"]["metadata"]) == {"name"}


@pytest.mark.parametrize(
    "labels,fid,path",
    [
        ({"team": "has space"}, "job-label-invalid", "metadata.labels['team']"),
        ({"-bad": "x"}, "job-label-invalid", "metadata.labels['-bad']"),
        ({"Bad_Prefix!/x": "y"}, "job-label-invalid", "metadata.labels['Bad_Prefix!/x']"),
        ({"team": "x" * 64}, "job-label-invalid", "metadata.labels['team']"),
        ({"rlark.io/task-name": "fake"}, "job-label-reserved", "metadata.labels['rlark.io/task-name']"),
        ({"rlinf.io/workflow": "fake"}, "job-label-reserved", "metadata.labels['rlinf.io/workflow']"),
    ],
)
def test_bad_labels_are_errors_at_their_path(labels, fid, path):
    result = with_job(labels=labels)
    hits = [(f["id"], f["severity"], f["path"]) for f in result["findings"] if f["id"].startswith("job-label")]
    assert hits == [(fid, "error", path)]
    assert result["job"] is None


def test_a_secret_in_an_annotation_is_refused_and_masked():
    token = "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    result = with_job(annotations={"example.com/notes": "clone with %s" % token})
    hits = [(f["id"], f["path"]) for f in result["findings"] if f["severity"] == "error"]
    assert ("inline-secret", "manifest.job.annotations.example.com/notes") in hits, hits
    assert token not in repr(result)
