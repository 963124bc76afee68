# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every Job rendered by the unit tests is accepted by the sandbox's real kube-apiserver.

Server-side dry run (``dryRun=All``) with ``fieldValidation=Strict`` and no ``Warning`` header:
no pruned or unknown field, no wrong type, against the project CRDs and (``--sandbox-crds=upstream``)
RLark's upstream CRDs. Creates nothing, so nothing needs cleaning up.
"""

import os
import sys
import uuid

import pytest
import requests

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "module_utils"))
if os.path.join(ROOT, ".build", "collections") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, ".build", "collections"))

from ansible_collections.rlark.ops.plugins.module_utils.naming import DNS1035  # noqa: E402
from ansible_collections.rlark.ops.plugins.module_utils.preflight import preflight  # noqa: E402
from migration_inputs import big_manifest, example  # noqa: E402
from test_review_table import RECORD_CASES  # noqa: E402

JOBS_PATH = "/apis/rlinf.io/v1alpha1/jobs"


def rendered_jobs():
    """(case, Job) for the clean examples, the 16-role bench input and every broken-record draft."""
    jobs = [
        ("example-sandbox", preflight(*example("sandbox"))),
        ("example-multi-role", preflight(*example("multi-role"))),
    ]
    jobs.append(("bench-16-roles", preflight(*big_manifest(16))))
    manifest, profile = example("sandbox")
    manifest["roles"][0]["env"].append({"name": "WANDB_API_KEY", "secret": {"name": "wandb", "key": "api-key"}})
    profile["compute_requests"] = {"approved": True, "path": "rlark.ops rlark_job"}
    manifest["roles"][0]["resources"].update({"cpu": "16", "memory": "64Gi"})
    profile["roles"][0]["resources"].update({"cpu": "16", "memory": "64Gi"})
    jobs.append(("secret-ref-and-approved-cpu", preflight(manifest, profile)))
    for case, name, mutate, _fid, _severity in RECORD_CASES:
        manifest, profile = example(name)
        mutate(manifest, profile)
        jobs.append(("case-" + case, preflight(manifest, profile)))
    out = []
    for case, result in jobs:
        job = result["rendered"]
        if job is None or not DNS1035.match(job["metadata"]["name"] or "-"):
            continue  # the records were unreadable or the name itself is the broken field
        out.append((case, job))
    return out


JOBS = rendered_jobs()


def dry_run_create(sandbox, job):
    job = dict(job, metadata=dict(job["metadata"], name="%s-%s" % (job["metadata"]["name"][:40], uuid.uuid4().hex[:6])))
    return requests.post(
        sandbox.server + JOBS_PATH,
        params={"dryRun": "All", "fieldValidation": "Strict"},
        json=job,
        headers={"Authorization": "Bearer %s" % sandbox.operator_token},
        verify=sandbox.ca_cert,
        timeout=30,
    )


def test_enough_jobs_are_checked():
    assert len(JOBS) >= 60
    assert {"example-sandbox", "example-multi-role", "bench-16-roles"} <= {case for case, _job in JOBS}


@pytest.mark.parametrize("case,job", JOBS, ids=[case for case, _job in JOBS])
def test_rendered_job_accepted_strictly_without_warnings(sandbox, case, job):
    response = dry_run_create(sandbox, job)
    assert response.status_code == 201, "%s: %s %s" % (case, response.status_code, response.text[:800])
    warnings = response.headers.get("Warning")
    assert not warnings, "%s: API server warnings: %s" % (case, warnings)
    stored = response.json()
    # Nothing pruned: the spec the server would store is the spec we rendered.
    assert stored["spec"] == job["spec"], case


def test_unknown_field_is_rejected_strictly(sandbox):
    """Control: the strict dry run does reject what RLark would prune (the check above can fail)."""
    job = preflight(*example("sandbox"))["job"]
    job["spec"]["tasks"][0]["worker_group"] = "legacy"
    response = dry_run_create(sandbox, job)
    assert response.status_code == 400, response.text[:400]
    assert "strict decoding error" in response.text and "worker_group" in response.text
