# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verdicts the roles act on (verify report, stop readiness, resume overrides)."""

from ansible_collections.rlark.ops.plugins.module_utils import resume_decision, role_verdicts

GATE_40_OF_42 = {
    "complete": True,
    "step": 40,
    "newest_step": 42,
    "latest_complete_step": 40,
    "findings": [],
    "steps": [{"step": 42, "reasons": [".metadata is missing"]}],
}
GATE_44 = {"complete": True, "step": 44, "newest_step": 44, "latest_complete_step": 44, "findings": []}
RUNNING = {"running": True, "findings": [], "observed": {"actor": {"nodes": ["a100-01"]}}}
SIGNALS = {"ok": True, "seen": ["Cluster is ready"], "missing": []}


def _verify(**kw):
    args = dict(job="d", mode="normal", submitted={"submitted": True}, running=RUNNING, signals=SIGNALS, logs={})
    args.update(kw)
    return role_verdicts.verify_report(**args)


def test_verify_report_normal_mode():
    assert _verify()["ok"] is True
    assert _verify(signals={"ok": False})["ok"] is False
    assert _verify(running=dict(RUNNING, running=False))["ok"] is False
    error = {"id": "x", "severity": "error"}
    assert _verify(running=dict(RUNNING, findings=[error]))["ok"] is False
    assert _verify(running=dict(RUNNING, findings=[dict(error, severity="warning")]))["ok"] is True


def test_verify_report_resume_mode_needs_a_newer_complete_checkpoint():
    resume = {"ok": True, "findings": [{"id": "r", "severity": "warning"}]}
    base = dict(mode="resume", resume=resume, resume_step=40, need_next_checkpoint=True)
    assert _verify(next_gate=GATE_44, **base)["ok"] is True
    assert _verify(next_gate=GATE_40_OF_42, **base)["ok"] is False
    assert _verify(next_gate={}, **base)["ok"] is False
    no_next = {"mode": "resume", "resume": resume, "resume_step": 40, "need_next_checkpoint": False}
    assert _verify(next_gate={}, **no_next)["ok"] is True
    not_loaded = {"mode": "resume", "resume": {"ok": False}, "resume_step": 40, "need_next_checkpoint": True}
    assert _verify(next_gate=GATE_44, **not_loaded)["ok"] is False
    report = _verify(next_gate=GATE_44, **base)
    assert report["next_checkpoint"]["latest_complete_step"] == 44
    assert report["findings"] == resume["findings"]


def test_resume_override_findings():
    view = {"resume_dirs": ["/c/global_step_4"], "experiment_key": "runner.logger.experiment_name", "experiment": "n"}
    assert resume_decision.resume_override_findings(view, "/c/global_step_4", "n") == []
    (found,) = resume_decision.resume_override_findings(dict(view, resume_dirs=[]), "/c/global_step_4", "n")
    assert (found["id"], found["severity"]) == ("resume-override", "error")
    assert "runner.resume_dir=/c/global_step_4" in found["message"] and "it has [] and " in found["message"]
