# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_job ``wait_for`` a phase and rlark_job_info ``field_selectors`` against the real API server.

The API server accepts only metadata.name/namespace as Job field selectors (the CRDs declare no
selectable fields): the module must not send the others, and must still filter by them. Phases are
checked with the kubernetes package, not with the collection's reader.
"""

import job_test_support as support
import pytest
from independent import custom_objects
from job_test_support import demo_job, run_module, unique

pytestmark = pytest.mark.sandbox
cleanup = support.cleanup


def phase(sandbox, name):
    api = custom_objects(sandbox.kubeconfig)
    return (api.get_cluster_custom_object("rlinf.io", "v1alpha1", "jobs", name).get("status") or {}).get("phase")


def test_wait_for_running_then_stopped_and_select_by_phase(sandbox, cleanup):
    name = unique("wf")
    cleanup.append(name)
    job = demo_job(name)
    job["metadata"]["labels"] = {"rlark-test": name}
    created = run_module(sandbox, "rlark_job", {"definition": job, "wait_for": "Running", "wait_timeout": 180})
    assert created["changed"] and not created.get("failed"), created.get("msg")
    assert phase(sandbox, name) == "Running"  # returned only once RLark reported it
    assert created["job"]["status"]["phase"] == "Running" and created["wait_log"]

    def names(fields):
        out = run_module(
            sandbox, "rlark_job_info", {"label_selectors": ["rlark-test=" + name], "field_selectors": fields}
        )
        assert not out.get("failed"), out.get("msg")
        return [r["job"]["metadata"]["name"] for r in out["resources"]]

    assert names(["status.phase=Running"]) == [name]
    assert names(["status.phase=Stopped"]) == []
    assert names(["metadata.name=%s,spec.stopped!=true" % name]) == [name]
    by_name = run_module(sandbox, "rlark_job_info", {"name": name, "field_selectors": ["status.phase!=Running"]})
    assert by_name["resources"] == []

    stopped = run_module(sandbox, "rlark_job", {"name": name, "state": "stopped", "wait_for": "Stopped"})
    assert stopped["changed"] and not stopped.get("failed"), stopped.get("msg")
    assert phase(sandbox, name) == "Stopped"
    assert names(["status.phase=Stopped"]) == [name]
