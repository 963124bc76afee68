# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One broken input per stop condition of seed 001, Step 6 review item and platform gotcha.

Each case breaks a single field of a clean example and expects the matching finding id and
severity. "Offered for submission" means ``preflight(...)['job']`` (records) or
``review_for_submission(...)['job']`` (a Job not rendered here) is a Job: it must be None.
"""

import pytest
from ansible_collections.rlark.ops.plugins.module_utils import render, review
from ansible_collections.rlark.ops.plugins.module_utils.preflight import preflight, review_for_submission
from ansible_collections.rlark.ops.plugins.module_utils.review import rules
from migration_inputs import example, role

DIGEST_B = "sha256:" + "b" * 64
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZW1vIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"


def actor(m):
    return role(m, "actor")


def rollout(m):
    return role(m, "rollout")


def _set(obj, **kwargs):
    obj.update(kwargs)


def _legacy(name):
    def mutate(m, p):
        actor(m)[name] = 2

    return mutate


# (case, example, mutate(manifest, profile), expected id, severity)
RECORD_CASES = [
    ("tag-without-digest", "sandbox", lambda m, p: actor(m)["image"].pop("digest"), "image-not-pinned", "error"),
    (
        "image-unverified",
        "sandbox",
        lambda m, p: _set(actor(m)["image"]["verification"], verified=False),
        "image-unverified",
        "error",
    ),
    (
        "command-unverified",
        "sandbox",
        lambda m, p: _set(actor(m)["image"]["verification"], command_verified=False),
        "image-unverified",
        "error",
    ),
    ("no-image-source", "sandbox", lambda m, p: actor(m)["image"].pop("source"), "image-provenance-missing", "error"),
    ("no-image-contact", "sandbox", lambda m, p: actor(m)["image"].pop("contact"), "image-provenance-missing", "error"),
    (
        "digest-conflict",
        "sandbox",
        lambda m, p: _set(actor(m)["image"], reference="registry.example.com/rlinf/rlinf@" + DIGEST_B),
        "image-digest-conflict",
        "error",
    ),
    (
        "different-images-no-compat",
        "sandbox",
        lambda m, p: rollout(m).__setitem__("image", dict(rollout(m)["image"], digest=DIGEST_B)),
        "image-compat-missing",
        "error",
    ),
    ("multi-role-compat-removed", "multi-role", lambda m, p: m.pop("compatibility"), "image-compat-missing", "error"),
    ("selector-empty", "sandbox", lambda m, p: _set(rollout(p), selector={}), "selector-empty", "error"),
    (
        "selector-comma",
        "sandbox",
        lambda m, p: _set(rollout(p), selector={"kubernetes.io/hostname": "a100-02,a100-03"}),
        "selector-multivalue",
        "error",
    ),
    (
        "selector-empty-value",
        "sandbox",
        lambda m, p: _set(rollout(p), selector={"rlinf.io/pool": ""}),
        "selector-empty-value",
        "error",
    ),
    (
        "selector-whitespace",
        "sandbox",
        lambda m, p: _set(rollout(p), selector={"kubernetes.io/hostname": "a100-02 "}),
        "selector-whitespace",
        "error",
    ),
    (
        "selector-cr-only",
        "sandbox",
        lambda m, p: _set(actor(p), selector={"rlark.io/cluster-id": "rlark-a100"}),
        "selector-cr-only-key",
        "error",
    ),
    (
        "selector-annotation",
        "sandbox",
        lambda m, p: _set(actor(p), selector={"rlark.io/gpu-model": "A100"}),
        "selector-annotation-key",
        "error",
    ),
    ("no-global-proof", "sandbox", lambda m, p: rollout(p).pop("global_matches"), "selector-unproven", "error"),
    (
        "matches-other-cluster",
        "sandbox",
        lambda m, p: actor(p)["global_matches"].append({"name": "a100-01", "namespace": "rlark-h100"}),
        "selector-other-cluster",
        "error",
    ),
    ("two-heads", "sandbox", lambda m, p: _set(rollout(m), head=True), "head-count", "error"),
    ("no-head", "sandbox", lambda m, p: _set(actor(m), head=False), "head-count", "error"),
    (
        "head-matches-two",
        "sandbox",
        lambda m, p: actor(p)["global_matches"].append({"name": "a100-02", "namespace": "rlark-a100"}),
        "head-match-count",
        "error",
    ),
    ("head-replicas-two", "sandbox", lambda m, p: _set(actor(p), replicas=2), "head-replicas", "error"),
    (
        "replicas-not-match-count",
        "sandbox",
        lambda m, p: _set(rollout(p), replicas=3),
        "replicas-match-mismatch",
        "error",
    ),
    ("replicas-zero", "sandbox", lambda m, p: _set(rollout(p), replicas=0), "replicas-zero", "error"),
    (
        "resources-not-approved",
        "sandbox",
        lambda m, p: actor(m)["resources"].update({"nvidia.com/gpu": 4}),
        "resources-not-approved",
        "error",
    ),
    (
        "device-not-approved",
        "sandbox",
        lambda m, p: actor(m)["resources"].update({"rlinf.io/device-cam": 1}),
        "resources-not-approved",
        "error",
    ),
    (
        "cpu-without-approval",
        "sandbox",
        lambda m, p: actor(m)["resources"].update({"cpu": "16"}),
        "cpu-memory-unapproved",
        "error",
    ),
    (
        "memory-without-approval",
        "sandbox",
        lambda m, p: rollout(m)["resources"].update({"memory": "64Gi"}),
        "cpu-memory-unapproved",
        "error",
    ),
    ("mount-no-mode", "sandbox", lambda m, p: actor(m)["mounts"][0].pop("mode"), "mount-unclear", "error"),
    ("mount-no-source", "sandbox", lambda m, p: actor(m)["mounts"][0].pop("source"), "mount-unclear", "error"),
    (
        "mount-empty-source",
        "multi-role",
        lambda m, p: actor(m)["mounts"][0]["source"].pop("object_storage"),
        "mount-unclear",
        "error",
    ),
    (
        "mount-two-sources",
        "sandbox",
        lambda m, p: actor(m)["mounts"][0]["source"].update({"pvc": {"storage_class": "rlark-s3"}}),
        "mount-unclear",
        "error",
    ),
    (
        "mount-shadows-workdir",
        "sandbox",
        lambda m, p: _set(actor(m)["mounts"][0], target="/workspace"),
        "mount-shadows-image",
        "error",
    ),
    (
        "mount-shadows-image-path",
        "sandbox",
        lambda m, p: _set(actor(m)["mounts"][0], target="/opt/venv"),
        "mount-shadows-image",
        "error",
    ),
    (
        "mount-on-rlark-scripts",
        "sandbox",
        lambda m, p: _set(actor(m)["mounts"][0], target="/rlark"),
        "mount-reserved-path",
        "error",
    ),
    (
        "hostpath-not-approved",
        "sandbox",
        lambda m, p: _set(actor(m)["mounts"][0], source={"host_path": "/srv/other"}),
        "hostpath-unapproved",
        "error",
    ),
    (
        "hostpath-other-node",
        "sandbox",
        lambda m, p: _set(p["host_paths"][0], nodes=["a100-02"]),
        "hostpath-unapproved",
        "error",
    ),
    ("hostpath-no-cleanup", "sandbox", lambda m, p: p["host_paths"][0].pop("cleanup"), "hostpath-unapproved", "error"),
    ("hostpath-rw-on-ro", "sandbox", lambda m, p: _set(p["host_paths"][0], mode="ro"), "hostpath-unapproved", "error"),
    (
        "storage-class-unknown",
        "multi-role",
        lambda m, p: _set(actor(m)["mounts"][0]["source"]["object_storage"], storage_class="other-s3"),
        "storage-class-unapproved",
        "error",
    ),
    (
        "checkpoint-not-mounted",
        "sandbox",
        lambda m, p: _set(m["checkpoint"], root="/workspace/ckpt"),
        "location-not-persistent",
        "error",
    ),
    (
        "checkpoint-on-ro-mount",
        "sandbox",
        lambda m, p: _set(actor(m)["mounts"][0], mode="ro"),
        "location-not-persistent",
        "error",
    ),
    ("domain-not-approved", "multi-role", lambda m, p: _set(p["domain"], approved=False), "domain-unapproved", "error"),
    (
        "domain-connectivity-unconfirmed",
        "multi-role",
        lambda m, p: _set(p["domain"], connectivity_confirmed=False),
        "domain-unapproved",
        "error",
    ),
    (
        "cross-cluster-without-domain",
        "sandbox",
        lambda m, p: _set(
            rollout(p),
            cluster="rlark-h100",
            global_matches=[{"name": "h100-01", "namespace": "rlark-h100"}],
            replicas=1,
        ),
        "domain-unapproved",
        "error",
    ),
    (
        "robot-checklist-incomplete",
        "multi-role",
        lambda m, p: _set(p["robot_safety"]["checklist"]["emergency"], confirmed=False),
        "robot-safety-missing",
        "error",
    ),
    ("robot-no-profile-approval", "multi-role", lambda m, p: p.pop("robot_safety"), "robot-safety-missing", "error"),
    ("robot-no-manifest-stop-plan", "multi-role", lambda m, p: m.pop("robot_safety"), "robot-safety-missing", "error"),
    (
        "device-role-without-checklist",
        "sandbox",
        lambda m, p: (
            rollout(m)["resources"].update({"rlinf.io/device": 1}),
            rollout(p)["resources"].update({"rlinf.io/device": 1}),
        ),
        "robot-safety-missing",
        "error",
    ),
    (
        "secret-env-name",
        "sandbox",
        lambda m, p: actor(m)["env"].append({"name": "WANDB_API_KEY", "value": "abc123"}),
        "env-secret",
        "error",
    ),
    (
        "secret-env-jwt",
        "sandbox",
        lambda m, p: actor(m)["env"].append({"name": "SESSION", "value": JWT}),
        "env-secret",
        "error",
    ),
    (
        "secret-in-override",
        "sandbox",
        lambda m, p: m["hydra"]["overrides"].append({"override": "wandb.api_key=abc123"}),
        "inline-secret",
        "error",
    ),
    (
        "secret-in-repo-url",
        "sandbox",
        lambda m, p: _set(m["code"], repo="https://bot:hunter2pass@github.com/x/y"),
        "inline-secret",
        "error",
    ),
    (
        "versions-not-linked",
        "sandbox",
        lambda m, p: _set(p["manifest"], version="2026.01.01-1"),
        "records-not-linked",
        "error",
    ),
    ("profile-ref-stale", "sandbox", lambda m, p: _set(m["profile"], version="old"), "records-not-linked", "error"),
    ("no-startup-signal", "sandbox", lambda m, p: m["signals"].pop("startup"), "signals-missing", "error"),
    ("no-normal-signal", "sandbox", lambda m, p: _set(m["signals"], normal=[]), "signals-missing", "error"),
    ("no-failure-signal", "sandbox", lambda m, p: m["signals"].pop("failure"), "signals-failure-missing", "warning"),
    ("task-name-too-long", "sandbox", lambda m, p: _set(m["job"], name="a" * 46), "task-name-too-long", "error"),
    ("job-name-not-dns", "sandbox", lambda m, p: _set(m["job"], name="Demo_Job"), "job-name-invalid", "error"),
    ("job-name-too-long", "sandbox", lambda m, p: _set(m["job"], name="a" * 64), "job-name-invalid", "error"),
    ("job-name-empty", "sandbox", lambda m, p: _set(m["job"], name=""), "manifest-invalid", "error"),
    (
        "task-name-not-dns",
        "sandbox",
        lambda m, p: (_set(rollout(m), name="Roll_out"), _set(rollout(p), name="Roll_out")),
        "task-name-invalid",
        "error",
    ),
    ("task-name-duplicate", "sandbox", lambda m, p: _set(rollout(m), name="actor"), "task-name-duplicate", "error"),
    (
        "entrypoint-on-worker",
        "sandbox",
        lambda m, p: _set(rollout(m), entrypoint="python x.py"),
        "runscript-outside-head",
        "error",
    ),
    (
        "head-no-entrypoint",
        "sandbox",
        lambda m, p: (actor(m).pop("entrypoint"), actor(m).pop("checks")),
        "runscript-missing",
        "error",
    ),
    ("profile-role-missing", "sandbox", lambda m, p: p["roles"].remove(rollout(p)), "profile-role-missing", "error"),
    (
        "profile-role-unknown",
        "sandbox",
        lambda m, p: p["roles"].append(dict(rollout(p), name="extra")),
        "profile-role-unknown",
        "warning",
    ),
    ("wrong-type-digest", "sandbox", lambda m, p: _set(rollout(m)["image"], digest=123), "manifest-invalid", "error"),
    ("unknown-manifest-key", "sandbox", lambda m, p: _set(actor(m), gpus=8), "manifest-invalid", "error"),
    ("wrong-type-replicas", "sandbox", lambda m, p: _set(rollout(p), replicas="two"), "profile-invalid", "error"),
    (
        "prepare-installs",
        "sandbox",
        lambda m, p: actor(m)["prepare"].append("pip install foo"),
        "prepare-installs",
        "warning",
    ),
    (
        "mount-inside-workdir",
        "sandbox",
        lambda m, p: actor(m)["mounts"].append(
            {"source": {"host_path": "/data/rlinf/cache"}, "target": "/workspace/RLinf/cache", "mode": "ro"}
        ),
        "mount-inside-image-path",
        "warning",
    ),
    (
        "object-storage-class-not-object",
        "multi-role",
        lambda m, p: _set(p["storage_classes"][0], kind="block"),
        "storage-class-unapproved",
        "error",
    ),
    (
        "tensorboard-on-worker",
        "multi-role",
        lambda m, p: _set(rollout(m), tensorboard_dir="/mnt/tb"),
        "tensorboard-outside-head",
        "warning",
    ),
] + [("legacy-" + name, "sandbox", _legacy(name), "legacy-field", "error") for name in review.LEGACY_FIELDS]


def _find(findings, fid):
    return [f for f in findings if f["id"] == fid]


@pytest.mark.parametrize("case,example_name,mutate,fid,severity", RECORD_CASES, ids=[c[0] for c in RECORD_CASES])
def test_broken_record_gives_finding_and_no_job(case, example_name, mutate, fid, severity):
    manifest, profile = example(example_name)
    mutate(manifest, profile)
    result = preflight(manifest, profile)
    hits = _find(result["findings"], fid)
    assert hits, "%s: expected %s, got %s" % (case, fid, [(f["id"], f["path"]) for f in result["findings"]])
    assert {f["severity"] for f in hits} == {severity}
    assert all(set(f) == {"id", "severity", "path", "message", "hint"} for f in result["findings"])
    if severity == "error":
        assert result["job"] is None and result["ok"] is False
    else:
        assert result["ok"] is True and result["job"] is not None


def test_legacy_field_hint_names_current_equivalent():
    manifest, profile = example("sandbox")
    profile["node_names"] = ["a100-01"]
    hit = _find(preflight(manifest, profile)["findings"], "legacy-field")[0]
    assert hit["path"] == "profile.node_names" and "nodeSelector" in hit["hint"]
    assert not _find(preflight(manifest, profile)["findings"], "profile-invalid")


def test_records_not_linked_points_at_the_stale_side():
    manifest, profile = example("sandbox")
    profile["manifest"]["version"] = "old"
    paths = [f["path"] for f in preflight(manifest, profile)["findings"] if f["id"] == "records-not-linked"]
    assert paths == ["profile.manifest.version"]


def test_schema_error_names_exact_path():
    manifest, profile = example("sandbox")
    rollout(manifest)["image"] = dict(rollout(manifest)["image"], digest="sha256:short")
    paths = [f["path"] for f in preflight(manifest, profile)["findings"] if f["id"] == "manifest-invalid"]
    assert paths == ["manifest.roles[1].image.digest"]


def _job_case(mutate):
    return mutate


def _task(job, name):
    return next(t for t in job["spec"]["tasks"] if t["name"] == name)


def _main(task):
    return task["kubernetes"]["workload"]["template"]["spec"]["containers"][0]


# Job-level cases: a clean Job rendered from the records, then edited by hand.
JOB_CASES = [
    ("agent-docker", lambda j: _set(_task(j, "actor"), agentType="Docker"), "agent-type-unsupported"),
    ("agent-raw", lambda j: _set(_task(j, "rollout"), agentType="Raw"), "agent-type-unsupported"),
    (
        "kind-deployment",
        lambda j: _set(_task(j, "rollout")["kubernetes"]["workload"], kind="Deployment"),
        "workload-kind-unsupported",
    ),
    (
        "kind-daemonset",
        lambda j: _set(_task(j, "actor")["kubernetes"]["workload"], kind="DaemonSet"),
        "workload-kind-unsupported",
    ),
    ("container-not-main", lambda j: _set(_main(_task(j, "actor")), name="trainer"), "container-not-main"),
    (
        "template-labels",
        lambda j: _set(_task(j, "actor")["kubernetes"]["workload"]["template"], metadata={"labels": {"team": "rl"}}),
        "template-metadata-pruned",
    ),
    (
        "runscript-on-worker",
        lambda j: _set(_task(j, "rollout"), runScript="cd /w && python x.py"),
        "runscript-outside-head",
    ),
    ("runscript-no-cd", lambda j: _set(_task(j, "actor"), runScript="python train.py"), "runscript-no-workdir"),
    ("runscript-removed", lambda j: _task(j, "actor").pop("runScript"), "runscript-missing"),
    ("head-not-first", lambda j: j["spec"]["tasks"].reverse(), "head-not-first"),
    ("head-replicas", lambda j: _set(_task(j, "actor")["kubernetes"]["workload"], replicas=2), "head-replicas"),
    ("replicas-zero", lambda j: _set(_task(j, "rollout")["kubernetes"]["workload"], replicas=0), "replicas-zero"),
    (
        "replicas-not-profile",
        lambda j: _set(_task(j, "rollout")["kubernetes"]["workload"], replicas=1),
        "replicas-mismatch",
    ),
    (
        "gpu-limit-missing",
        lambda j: _main(_task(j, "actor"))["resources"].pop("limits"),
        "device-request-limit-mismatch",
    ),
    (
        "gpu-not-approved",
        lambda j: _set(_main(_task(j, "actor"))["resources"]["requests"], **{"nvidia.com/gpu": "4"}),
        "resources-not-approved",
    ),
    (
        "cpu-request",
        lambda j: _set(_main(_task(j, "actor"))["resources"]["requests"], cpu="8"),
        "cpu-memory-unapproved",
    ),
    ("unknown-task-field", lambda j: _set(_task(j, "actor"), replica=1), "job-unknown-field"),
    ("unknown-spec-field", lambda j: _set(j["spec"], workers=3), "job-unknown-field"),
    ("legacy-in-job", lambda j: _set(_task(j, "actor"), worker_group="g1"), "legacy-field"),
    (
        "selector-changed",
        lambda j: _set(_task(j, "rollout"), nodeSelector={"rlinf.io/pool": "spare"}),
        "selector-mismatch",
    ),
    (
        "selector-comma-in-job",
        lambda j: _set(_task(j, "rollout"), nodeSelector={"rlinf.io/pool": "rollout,spare"}),
        "selector-multivalue",
    ),
    (
        "image-tag",
        lambda j: _set(_main(_task(j, "actor")), image="registry.example.com/rlinf/rlinf:latest"),
        "image-not-pinned",
    ),
    (
        "image-other-digest",
        lambda j: _set(_main(_task(j, "actor")), image="registry.example.com/rlinf/rlinf@" + DIGEST_B),
        "image-mismatch",
    ),
    ("domain-set", lambda j: _set(j["spec"], domain="mesh"), "domain-unapproved"),
    ("ssh-key-set", lambda j: _set(j["spec"], sshPublicKey="ssh-ed25519 AAAA user@host"), "ssh-key-unapproved"),
    ("api-version", lambda j: _set(j, apiVersion="rlark.io/v1"), "job-api-invalid"),
    ("role-invalid", lambda j: _set(_task(j, "rollout"), role="Learner"), "role-invalid"),
    ("role-changed", lambda j: _set(_task(j, "rollout"), role="Env"), "role-mismatch"),
    (
        "head-flag-moved",
        lambda j: (_set(_task(j, "actor"), head=False), _set(_task(j, "rollout"), head=True)),
        "head-mismatch",
    ),
    ("template-missing", lambda j: j["spec"]["tasks"].pop(1), "role-template-missing"),
    (
        "template-unexpected",
        lambda j: j["spec"]["tasks"].append(dict(_task(j, "rollout"), name="extra")),
        "role-template-unexpected",
    ),
    ("no-tasks", lambda j: _set(j["spec"], tasks=[]), "job-no-tasks"),
    ("task-name-missing", lambda j: _task(j, "rollout").pop("name"), "task-name-missing"),
    ("job-name-missing", lambda j: j["metadata"].pop("name"), "job-name-missing"),
    ("workload-missing", lambda j: _task(j, "rollout").pop("kubernetes"), "workload-missing"),
    (
        "mount-without-volume",
        lambda j: _task(j, "actor")["kubernetes"]["workload"]["template"]["spec"].pop("volumes"),
        "mount-volume-missing",
    ),
    (
        "volume-nfs",
        lambda j: (
            _set(
                _task(j, "actor")["kubernetes"]["workload"]["template"]["spec"]["volumes"][0],
                nfs={"server": "x", "path": "/"},
                hostPath=None,
            )
            or _task(j, "actor")["kubernetes"]["workload"]["template"]["spec"]["volumes"][0].pop("hostPath")
        ),
        "volume-type-unsupported",
    ),
    ("mount-relative", lambda j: _set(_main(_task(j, "actor"))["volumeMounts"][0], mountPath="data"), "mount-unclear"),
    (
        "mount-on-proc",
        lambda j: _set(_main(_task(j, "actor"))["volumeMounts"][0], mountPath="/proc/x"),
        "mount-reserved-path",
    ),
    (
        "env-edited",
        lambda j: _main(_task(j, "actor"))["env"].append({"name": "EXTRA", "value": "1"}),
        "job-differs-from-records",
    ),
    (
        "env-secret-in-job",
        lambda j: _main(_task(j, "actor"))["env"].append({"name": "HF_TOKEN", "value": "hf_x"}),
        "env-secret",
    ),
    ("job-not-a-mapping", lambda j: "not a job", "job-invalid"),
]


@pytest.mark.parametrize("case,mutate,fid", JOB_CASES, ids=[c[0] for c in JOB_CASES])
def test_broken_job_gives_error_and_is_not_offered(case, mutate, fid):
    manifest, profile = example("sandbox")
    job = preflight(manifest, profile)["job"]
    assert job is not None
    replaced = mutate(job)
    if case == "job-not-a-mapping":
        job = replaced
    result = review_for_submission(job, manifest, profile)
    hits = _find(result["findings"], fid)
    assert hits, "%s: expected %s, got %s" % (case, fid, [(f["id"], f["path"]) for f in result["findings"]])
    assert any(f["severity"] == "error" for f in hits)
    assert result["job"] is None and result["ok"] is False


def test_clean_examples_review_clean_and_are_offered():
    for name in ("sandbox", "multi-role"):
        manifest, profile = example(name)
        result = preflight(manifest, profile)
        assert result["findings"] == [], name
        assert result["ok"] and result["job"] == result["rendered"]
        again = review_for_submission(result["job"], manifest, profile)
        assert again["ok"] and again["findings"] == []


def test_job_reviewed_alone_still_checks_platform_rules():
    manifest, profile = example("sandbox")
    job = preflight(manifest, profile)["job"]
    assert review.review_job(job) == []
    _set(_task(job, "actor"), agentType="Raw")
    assert [f["id"] for f in review.review_job(job)] == ["agent-type-unsupported"]


# ------------------------------------------------------------ every review id has a broken-input case
# (test_findings_catalogue.py checks that docs/findings.md lists every id the collection emits)
def emitted_ids():
    """Every id the review can emit: its rule registry (test_review_rules.py keeps it equal to the sources)."""
    return rules.rule_ids()


def _sidecar(j):
    spec = _task(j, "actor")["kubernetes"]["workload"]["template"]["spec"]
    spec["containers"].append({"name": "sidecar", "image": spec["containers"][0]["image"]})


# Warnings on a Job edited by hand: (case, mutate(job), id, path)
JOB_WARNING_CASES = [
    ("second-container", _sidecar, "container-extra", "spec.tasks[0].kubernetes.workload.template.spec.containers"),
    (
        "storage-map-unused-claim",
        lambda j: _set(_task(j, "actor")["kubernetes"]["workload"], pvcStorageMap={"ghost": "standard"}),
        "storage-map-orphan",
        "spec.tasks[0].kubernetes.workload.pvcStorageMap[ghost]",
    ),
]


@pytest.mark.parametrize("case,mutate,fid,path", JOB_WARNING_CASES, ids=[c[0] for c in JOB_WARNING_CASES])
def test_hand_edited_job_gives_the_warning(case, mutate, fid, path):
    manifest, profile = example("sandbox")
    job = preflight(manifest, profile)["job"]
    mutate(job)
    result = review_for_submission(job, manifest, profile)
    assert [(f["severity"], f["path"]) for f in _find(result["findings"], fid)] == [("warning", path)], case


def test_every_review_id_has_a_table_case():
    covered = {c[3] for c in RECORD_CASES} | {c[2] for c in JOB_CASES} | {c[2] for c in JOB_WARNING_CASES}
    # review-internal-error must never fire (test_review_properties); *-missing: test_missing_records_are_findings.
    assert emitted_ids() - covered == {"review-internal-error", "manifest-missing", "profile-missing"}


def test_missing_records_are_findings():
    result = preflight(None, None)
    assert {f["id"] for f in result["findings"]} == {"manifest-missing", "profile-missing"}
    assert result["job"] is None


def test_render_never_sets_template_metadata():
    manifest, profile = example("multi-role")
    job = render.render_job(manifest, profile)
    for task in job["spec"]["tasks"]:
        assert "metadata" not in task["kubernetes"]["workload"]["template"]
