# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The judgement of one step (small, so thousands of steps cost little memory) and its summary."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, finding

VERDICT_COMPLETE = "complete"
VERDICT_INCOMPLETE = "incomplete"
VERDICT_UNVERIFIED = "unverified"  # structure complete, payloads not opened (not a selection candidate)
VERDICT_UNRECOGNIZED = "unrecognized"  # global_step_40_bak and friends: reported, never judged


class StepVerdict:
    """What the rules found about one step: identity, layout, missing entries and findings."""

    def __init__(self, facts):
        self.name = facts.name
        self.step = L.step_number(facts.name)
        self.files = facts.files
        self.bytes = facts.bytes
        self.newest = facts.newest
        self.runner = None
        self.backend = None
        self.family = None
        self.evidence = set()  # runner families seen in this step
        self.features = set()
        self.world_size = None
        self.grid = None
        self.critic = False
        self.distcp_ranks = ()
        self.distcp_names = {}  # DCP directory -> {shard file name: size} present (for the .metadata check)
        self.prefetched = facts.prefetched  # DCP .metadata relpath -> dcp_prefetch.Claim, local walks only
        self.integrity_lists = ()  # Megatron integrity.json files of this step (checked with the payloads)
        self.missing = []
        self.findings = []
        self.verified = False
        self.rule = ""

    @property
    def structure_ok(self):
        return not self.missing and not any(p["severity"] == ERROR for p in self.findings)

    def problem(self, id, message, severity=ERROR, path="", hint="", **extra):
        self.findings.append(finding(id, message, severity=severity, path=path, hint=hint, **extra))

    def reasons(self):
        out = []
        if self.missing:
            shown = ", ".join(self.missing[:5]) + (
                " (+%d more)" % (len(self.missing) - 5) if len(self.missing) > 5 else ""
            )
            out.append(
                "missing %d required entr%s: %s" % (len(self.missing), "y" if len(self.missing) == 1 else "ies", shown)
            )
        out.extend("%s: %s" % (p["id"], p["message"]) for p in self.findings)
        return out


def verdict_name(v, opts):
    if v.step is None:
        return VERDICT_UNRECOGNIZED
    if not v.structure_ok:
        return VERDICT_INCOMPLETE
    if opts["verify_payloads"] and not v.verified:
        return VERDICT_UNVERIFIED
    return VERDICT_COMPLETE


def step_summary(v, source, opts):
    return {
        "name": v.name,
        "step": v.step,
        "checkpoint": source.location(v.name),
        "verdict": verdict_name(v, opts),
        "reasons": v.reasons()
        if v.step is not None
        else ["not a global_step_N name: reported, never chosen (RLinf's own int parse would crash on it)"],
        "runner": v.runner,
        "backend": v.backend,
        "files": v.files,
        "bytes": v.bytes,
        "newest_mtime": v.newest,
        "payloads_verified": v.verified,
        # Findings by id, so a caller can tell "a save is running" (write-too-recent) from a cut-off save.
        "findings": list(v.findings),
    }


def order_key(v):
    return (v.step is None, v.step if v.step is not None else 0, v.name)
