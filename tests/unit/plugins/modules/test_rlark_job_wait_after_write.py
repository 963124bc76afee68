# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A wait that times out after a write fails the task, and still reports the write (changed=True)."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils"))

from ansible_collections.rlark.ops.plugins.modules import rlark_job
from rlark_fake_api import FakeApi, job
from test_rlark_job_modules import run_module, seeded

# wait_timeout 0: the first check decides, no clock involved (the fake has no controller, so Pod CRs stay
# and Tasks never appear).
NO_WAIT = {"wait": True, "wait_timeout": 0, "wait_sleep": 0}


def assert_timed_out_after_write(result):
    assert result["_rc"] == 1 and result["failed"], result
    assert [(f["id"], f["severity"]) for f in result["findings"]] == [("wait-timeout", "error")]
    assert result["changed"] is True, "the write happened; changed must say so"


def test_stop_then_wait_timeout_reports_changed(monkeypatch, capsys):
    api = seeded()
    result = run_module(rlark_job, dict(NO_WAIT, name="demo", state="stopped"), api, monkeypatch, capsys=capsys)
    assert_timed_out_after_write(result)
    assert api.get("jobs", "demo")["spec"]["stopped"] is True


def test_create_then_wait_timeout_reports_changed(monkeypatch, capsys):
    api = FakeApi()
    definition = json.dumps(job(phase=None))
    result = run_module(rlark_job, dict(NO_WAIT, definition=definition), api, monkeypatch, capsys=capsys)
    assert_timed_out_after_write(result)
    assert api.get("jobs", "demo") is not None


def test_wait_timeout_without_a_write_reports_unchanged(monkeypatch, capsys):
    api = seeded(stopped=True)  # already stopped on the spec, Pod CRs still there: only the wait times out
    result = run_module(rlark_job, dict(NO_WAIT, name="demo", state="stopped"), api, monkeypatch, capsys=capsys)
    assert result["_rc"] == 1 and result["changed"] is False, result
    assert [f["id"] for f in result["findings"]] == ["wait-timeout"]
    assert api.count("PATCH") == 0
