# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hostPath check: a path that is a file, and a read-write mount that is not writable."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.rlark.ops.plugins.module_utils import placement
from test_playbook_core import HOST_MOUNT, HOST_VOL, job

PROOF = {"tasks": [{"name": "actor", "matches": [{"name": "a100-01"}]}]}


def plan_for(root, mounts=None):
    hostvars = {"n1": {"rlark_node_name": "a100-01", "rlark_node_root": str(root)}}
    return placement.hostpath_plan(job(mounts=mounts or HOST_MOUNT, volumes=HOST_VOL), PROOF, hostvars, {})


def ids(result):
    return [(f["id"], f["severity"], f["path"]) for f in result["findings"]]


def test_a_file_where_the_directory_should_be_is_refused(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rlinf").write_text("not a directory\n")
    plan = plan_for(tmp_path)
    script = plan["hosts"][0]["script"]
    stdout = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout
    res = placement.hostpath_results(plan, {"n1": {"stdout": stdout}})
    assert ids(res) == [("hostpath-not-directory", "error", "spec.tasks[actor].volumes[data]")]
    assert "/data/rlinf on node a100-01 is not a directory" in res["findings"][0]["message"]
    assert res["results"][0]["exists"] is True and res["results"][0]["directory"] is False


def stat_line(plan, exists, directory, writable):
    """What the stat script prints for check 0 (root passes `[ -w ]` everywhere, so the line is given)."""
    return {"n1": {"stdout": "%s 0 %d %d %d\n" % (placement.MARKER, exists, directory, writable)}}


def test_a_read_write_mount_that_is_not_writable_is_refused(tmp_path):
    plan = plan_for(tmp_path)
    assert plan["hosts"][0]["checks"][0]["writable"] is True
    res = placement.hostpath_results(plan, stat_line(plan, 1, 1, 0))
    assert ids(res) == [("hostpath-not-writable", "error", "spec.tasks[actor].volumes[data]")]
    assert "mounted read-write but is not writable" in res["findings"][0]["message"]
    assert res["results"][0]["writable_ok"] is False


def test_a_read_only_mount_need_not_be_writable(tmp_path):
    plan = plan_for(tmp_path, mounts=[dict(HOST_MOUNT[0], readOnly=True)])
    assert plan["hosts"][0]["checks"][0]["writable"] is False
    res = placement.hostpath_results(plan, stat_line(plan, 1, 1, 0))
    assert ids(res) == [] and res["results"][0]["writable_ok"] is True
