# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Loading an rlark action plugin class (what a strategy does in the controller before it forks a task's
workers) imports the collection's filters and lookups, so no worker has to import them again."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

# A fresh interpreter: nothing of the collection is imported before the action class is loaded.
SCRIPT = r"""
import json, sys
from ansible.plugins.loader import action_loader, filter_loader, init_plugin_loader, lookup_loader

def ours():
    return {name for name in sys.modules if name.startswith("ansible_collections.rlark.ops.plugins.")}

init_plugin_loader()
action_loader.get(sys.argv[1], class_only=True)
loaded = ours()
assert filter_loader.get("rlark.ops.log_record_name") is not None
assert filter_loader.get("rlark.ops.load_manifest") is not None
assert lookup_loader.get("rlark.ops.job_logs") is not None
print(json.dumps({"loaded": sorted(loaded), "imported_later": sorted(ours() - loaded)}))
"""


@pytest.mark.parametrize(
    "action",
    [
        "rlark.ops.rlark_access_check",
        "rlark.ops.rlark_node_match",
        "rlark.ops.rlark_record",
        "rlark.ops.rlark_stop_with_logs",
        "rlark.ops.rlark_guarded_stop",
        "rlark.ops.rlark_job_running",
        "rlark.ops.rlark_guarded_stop_decision",
    ],
)
def test_loading_an_action_class_preloads_every_filter_and_lookup(action):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"))
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, action], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["imported_later"] == []
    filters = sorted(
        name[: -len(".py")] for name in os.listdir(os.path.join(ROOT, "plugins", "filter")) if name.endswith(".py")
    )
    assert set("ansible_collections.rlark.ops.plugins.filter." + name for name in filters) <= set(seen["loaded"])
    assert "ansible_collections.rlark.ops.plugins.lookup.job_logs" in seen["loaded"]
