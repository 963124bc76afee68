# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What sibling steps reveal about one step: a reasoning root, or a trailing part the step lacks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR

# Optional parts whose absence a step cannot reveal by itself (they are written last): when other
# steps of the same root have them, a step without them was cut off.
TRAILING = {
    "vla": ["actor/data.pt", "actor/rng.pt"],
    "vlm": ["actor/data_state.json"],
    "alpha": ["actor/sac_components/alpha/dcp_checkpoint/.metadata"],
    "critic": ["critic/" + L.TRACKER_NAME],
}


def apply_root_consistency(verdicts, opts):
    """Cross-step rules: the runner family and trailing optional parts seen in sibling steps."""
    evidence = root_evidence(verdicts, opts)
    for v in verdicts:
        apply_root_rules(v, evidence, opts)


def root_evidence(verdicts, opts):
    """(root family or None, {(feature, backend): owning step}) from identified steps (walked or probed)."""
    judged = [v for v in verdicts if v.family]
    families = set()
    for v in judged:
        families |= v.evidence
    root_family = families.pop() if opts["runner"] == L.AUTO and len(families) == 1 else None
    owners = {}
    for v in judged:
        for feature in v.features:
            owners.setdefault((feature, v.backend), v.name)
    return root_family, owners


def apply_root_rules(v, evidence, opts):
    """What sibling steps reveal about ``v``: a reasoning root, or a trailing part ``v`` lacks."""
    root_family, owners = evidence
    if not v.family:
        return
    if root_family == "reasoning" and v.family == "actor":
        v.runner, v.family = "reasoning", "reasoning"
        v.missing.append("data/data.pt")
        v.problem(
            "missing-trailing-part",
            "other steps of this root are reasoning/agent checkpoints with data/data.pt (written last); this one "
            "has none, so its save was cut off",
            path="data/data.pt",
        )
    for feature, rels in sorted(TRAILING.items()):
        if feature == "critic" and (opts["critic"] is not None or v.family != "reasoning"):
            continue
        if feature == "critic" and not (v.backend or "").startswith("megatron"):
            continue
        if feature in v.features:
            continue
        owner = owners.get((feature, v.backend))
        if owner:
            v.missing.extend(rels)
            v.features.add(feature)
            if feature == "critic":
                v.critic = True
            v.problem(
                "missing-trailing-part",
                "%s exist(s) in %s but not here: the save of this step was cut off before its last part"
                % (", ".join(rels), owner),
                path=rels[-1],
            )


RULES = (("missing-trailing-part", ERROR, apply_root_rules),)
