# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One step's verdict and its summary, value by value (issue 26: mutants of verdict.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import verdict as V
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.step_listing import StepFacts


class Source:
    def location(self, name):
        return "/ckpt/" + name


def facts(name="global_step_7", files=3, size=30, newest=12.5):
    f = StepFacts(name)
    f.files, f.bytes, f.newest = files, size, newest
    return f


def test_a_new_verdict_starts_empty_and_takes_the_facts():
    v = V.StepVerdict(facts())
    assert (v.name, v.step, v.files, v.bytes, v.newest) == ("global_step_7", 7, 3, 30, 12.5)
    assert v.runner is None and v.backend is None and v.family is None and v.world_size is None and v.grid is None
    assert v.critic is False and v.verified is False and v.rule == ""
    assert v.missing == [] and v.findings == [] and v.evidence == set() and v.features == set()
    assert v.distcp_ranks == () and v.distcp_names == {} and v.integrity_lists == ()
    assert v.prefetched == {}
    assert v.structure_ok is True
    assert V.StepVerdict(facts("global_step_x")).step is None


def test_structure_ok_only_without_missing_entries_or_errors():
    v = V.StepVerdict(facts())
    v.problem("some-warning", "w", severity="warning")
    assert v.structure_ok
    v.problem("some-error", "e", path="p", hint="h", extra_key=1)
    assert not v.structure_ok
    assert v.findings[1] == {
        "id": "some-error",
        "severity": "error",
        "path": "p",
        "message": "e",
        "hint": "h",
        "extra_key": 1,
    }
    assert v.findings[0]["severity"] == "warning" and v.findings[0]["path"] == "" and v.findings[0]["hint"] == ""
    m = V.StepVerdict(facts())
    m.missing = ["a"]
    assert not m.structure_ok


def test_reasons_list_five_missing_entries_then_count_the_rest():
    v = V.StepVerdict(facts())
    assert v.reasons() == []
    v.missing = ["a"]
    assert v.reasons() == ["missing 1 required entry: a"]
    v.missing = list("abcde")
    assert v.reasons() == ["missing 5 required entries: a, b, c, d, e"]
    v.missing = list("abcdef")
    assert v.reasons() == ["missing 6 required entries: a, b, c, d, e (+1 more)"]
    v.missing = list("abcdefg")
    v.problem("x-id", "x message", severity="warning")
    assert v.reasons() == ["missing 7 required entries: a, b, c, d, e (+2 more)", "x-id: x message"]


def test_verdict_names():
    opts = {"verify_payloads": True}
    v = V.StepVerdict(facts())
    assert V.verdict_name(v, opts) == "unverified"
    assert V.verdict_name(v, {"verify_payloads": False}) == "complete"
    v.verified = True
    assert V.verdict_name(v, opts) == "complete"
    v.missing = ["a"]
    assert V.verdict_name(v, opts) == "incomplete"
    assert V.verdict_name(V.StepVerdict(facts("global_step_7_bak")), opts) == "unrecognized"
    assert (V.VERDICT_COMPLETE, V.VERDICT_INCOMPLETE, V.VERDICT_UNVERIFIED, V.VERDICT_UNRECOGNIZED) == (
        "complete",
        "incomplete",
        "unverified",
        "unrecognized",
    )


def test_step_summary_of_a_step_and_of_an_odd_name():
    v = V.StepVerdict(facts())
    v.runner, v.backend, v.verified = "embodied", "fsdp", True
    v.missing = ["a"]
    s = V.step_summary(v, Source(), {"verify_payloads": True})
    assert s == {
        "name": "global_step_7",
        "step": 7,
        "checkpoint": "/ckpt/global_step_7",
        "verdict": "incomplete",
        "reasons": ["missing 1 required entry: a"],
        "runner": "embodied",
        "backend": "fsdp",
        "files": 3,
        "bytes": 30,
        "newest_mtime": 12.5,
        "payloads_verified": True,
        "findings": [],
    }
    assert s["findings"] is not v.findings
    odd = V.step_summary(V.StepVerdict(facts("global_step_7_bak")), Source(), {"verify_payloads": True})
    assert odd["verdict"] == "unrecognized" and odd["step"] is None
    assert odd["reasons"] == [
        "not a global_step_N name: reported, never chosen (RLinf's own int parse would crash on it)"
    ]


def test_order_key_puts_steps_by_number_then_odd_names_by_name():
    names = ["global_step_10", "zzz_odd", "global_step_2", "global_step_x", "global_step_0"]
    ordered = sorted((V.StepVerdict(facts(n)) for n in names), key=V.order_key)
    assert [v.name for v in ordered] == ["global_step_0", "global_step_2", "global_step_10", "global_step_x", "zzz_odd"]
    assert V.order_key(V.StepVerdict(facts("global_step_x"))) == (True, 0, "global_step_x")
    assert V.order_key(V.StepVerdict(facts("global_step_3"))) == (False, 3, "global_step_3")


def test_reasons_count_every_missing_entry_past_five():
    v = V.StepVerdict(facts())
    v.missing = ["m%02d" % i for i in range(11)]
    assert v.reasons() == ["missing 11 required entries: m00, m01, m02, m03, m04 (+6 more)"]


def test_an_error_severity_is_compared_by_value():
    """A severity built at run time (not the interned constant) still makes the step incomplete."""
    v = V.StepVerdict(facts())
    severity = "".join(["err", "or"])
    assert severity == "error" and severity is not V.ERROR
    v.problem("built", "m", severity=severity)
    assert v.structure_ok is False
