# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PATCH and DELETE through faults (fault_proxy.py): `changed` tells the truth and the final state is right.

A 503 or a reset after the server applied the write hides the answer: the module reads the Job back
instead of re-sending the write with a stale resourceVersion (which would 409 and read as "someone else
stopped it", changed=false). A 429 was not processed: the write is re-sent. Final states are read with the
sandbox's own client (independent.py), never with the collection's.
"""

import job_test_support as support
import pytest
from fault_proxy import FaultProxy
from independent import get_job
from job_test_support import demo_job, run_module, unique, wait_until

pytestmark = pytest.mark.sandbox
cleanup = support.cleanup

# fault on the first write -> what the API server must have received for that write (in order)
WRITE_FAULTS = {
    "503-before-apply": ("503", ["503", "forward"]),
    "503-after-apply": ("forward-then-503", ["forward-then-503"]),
    "reset-after-apply": ("forward-then-reset", ["forward-then-reset"]),
    "429": ("429:1", ["429:1", "forward"]),
}


def through_proxy(sandbox, proxy, args):
    """rlark_job with ``args`` via the proxy, as the least-privilege operator."""
    return run_module(
        sandbox,
        "rlark_job",
        dict(args, host=proxy.url, api_key=sandbox.operator_token),
        kubeconfig=None,
        env={"K8S_AUTH_KUBECONFIG": ""},
    )


def created_job(sandbox, cleanup):
    name = unique()
    cleanup.append(name)
    created = run_module(sandbox, "rlark_job", {"definition": demo_job(name)})
    assert created["changed"], created.get("msg")
    return name


# write -> (HTTP method, module args, action reported)
WRITES = {
    "stop": ("PATCH", {"state": "stopped"}, "stopped"),
    "delete": ("DELETE", {"state": "absent"}, "deleted"),
}


@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("case", sorted(WRITE_FAULTS))
def test_write_through_a_fault(sandbox, cleanup, write, case):
    fault, expected = WRITE_FAULTS[case]
    method, args, action = WRITES[write]
    name = created_job(sandbox, cleanup)
    with FaultProxy(sandbox.server, sandbox.ca_cert, [fault], methods=(method,)) as proxy:
        result = through_proxy(sandbox, proxy, dict(args, name=name))
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is True and result["action"] == action, result
    assert [outcome for verb, _path, outcome in proxy.log if verb == method] == expected
    # Exactly one write reached the API server and applied; none came back 409 or 404 from a resend.
    assert [status for verb, _path, status in proxy.upstream if verb == method] == [200]
    if write == "stop":
        assert get_job(sandbox, name)["spec"]["stopped"] is True
        again = run_module(sandbox, "rlark_job", {"name": name, "state": "stopped"})
        assert again["changed"] is False and again["action"] == "unchanged", again
    else:
        wait_until(lambda: get_job(sandbox, name) is None, timeout=60)
