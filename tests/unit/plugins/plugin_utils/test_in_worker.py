# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where an action plugin runs its module's core: in the worker only where the module would act as the
worker does (local connection, no become, no task environment, not async); and the gate's action preloads nothing."""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from ansible_collections.rlark.ops.plugins.plugin_utils.in_worker import runs_in_worker
from test_controller_preload import ROOT, SCRIPT


def action(transport="local", become=False, environment=None, async_val=0):
    return SimpleNamespace(
        _connection=SimpleNamespace(transport=transport),
        _play_context=SimpleNamespace(become=become),
        _task=SimpleNamespace(environment=[{}] if environment is None else environment, async_val=async_val),
    )


@pytest.mark.parametrize(
    "kw, here",
    [
        ({}, True),
        ({"environment": []}, True),
        ({"transport": "ssh"}, False),
        ({"become": True}, False),
        ({"environment": [{"AWS_PROFILE": "backup"}]}, False),
        ({"environment": [{}, {"K8S_AUTH_KUBECONFIG": "/k"}]}, False),
        ({"async_val": 600}, False),
    ],
)
def test_runs_in_worker_only_where_the_module_would_act_as_the_worker(kw, here):
    assert runs_in_worker(action(**kw)) is here


def test_the_gate_action_loads_no_filter():
    """A one-task gate play must not pay for importing every filter (the fleet preload of other actions)."""
    script = SCRIPT.replace("assert filter_loader", "# assert filter_loader").replace(
        "assert lookup_loader", "# assert lookup_loader"
    )
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"))
    proc = subprocess.run(
        [sys.executable, "-c", script, "rlark.ops.rlark_ckpt_gate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])["loaded"]
    assert "ansible_collections.rlark.ops.plugins.action.rlark_ckpt_gate" in loaded
    assert [name for name in loaded if ".plugins.filter." in name or ".plugins.lookup." in name] == []
