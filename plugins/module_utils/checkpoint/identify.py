# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which backend, runner family and optional parts one step shows, from the names in it alone."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.verdict import StepVerdict

INTEGRITY_LIST = "integrity.json"


def _has_dir(facts, rel):
    return rel in facts.dirs


def detect_backend(facts, children):
    """Backend of one step from its own files, or None when nothing recognisable is there."""
    for comp in ("actor", "critic"):
        names = children.get(comp, ())
        if L.TRACKER_NAME in names or any(L.ITER_DIR.match(n) for n in names):
            for n in names:
                if L.ITER_DIR.match(n):
                    inner = children.get("%s/%s" % (comp, n), ())
                    if "common.pt" in inner or "metadata.json" in inner or ".metadata" in inner:
                        return "megatron_torch_dist"
                    if not any(x.startswith("mp_rank_") for x in inner) and any(x.endswith(".distcp") for x in inner):
                        return "megatron_torch_dist"
            return "megatron"
    fsdp_dirs = ("actor/dcp_checkpoint", "actor/local_shard_checkpoint", "actor/model_state_dict", "actor/actor_policy")
    if any(_has_dir(facts, d) for d in fsdp_dirs):
        return "fsdp"
    return None


def runner_evidence(facts, children, megatron):
    """Runner families this step's own files point to (empty: the plain actor layout)."""
    found = set()
    top = children.get("", set())
    actor = children.get("actor", set())
    if "iql_components" in actor or "actor_policy" in actor:
        found.add("iql")
    if "sac_components" in actor:
        found.add("sac")
    if "dagger_components" in actor:
        found.add("dagger")
    if "data" in top or (megatron and "critic" in top):
        found.add("reasoning")
    return found


def _has_dist_opt(facts, base):
    """Whether a directory right under ``base`` holds ``distrib_optim.pt`` (only directories can: look at those,
    not at the thousands of shard files of a torch_dist iteration)."""
    depth = base.count("/")
    entries = facts.entries
    return any(d.startswith(base) and d.count("/") == depth and d + "/distrib_optim.pt" in entries for d in facts.dirs)


def step_features(facts, children, backend):
    feats = set()
    actor = children.get("actor", set())
    if "local_shard_checkpoint" in actor and "dcp_checkpoint" not in actor:
        feats.add("local_shard")
    if backend == "megatron_torch_dist":
        feats.add("torch_dist")
    if backend.startswith("megatron"):
        for comp in ("actor", "critic"):
            for it in children.get(comp, ()):
                if L.ITER_DIR.match(it) and _has_dist_opt(facts, "%s/%s/" % (comp, it)):
                    feats.add("dist_opt")
        if "critic" in children.get("", set()):
            feats.add("critic")
    if "data.pt" in actor or "rng.pt" in actor:
        feats.add("vla")
    if "data_state.json" in actor:
        feats.add("vlm")
    if "actor/sac_components/alpha" in facts.dirs:
        feats.add("alpha")
    return feats


def identify(facts, opts):
    """Backend, runner family and optional parts of one step: what its siblings' rules need from it.

    Needs only the names of the top, ``actor/``, ``critic/``, their ``iter_*`` and ``sac_components``
    directories, so a shallow look at a step (``step_listing.shallow_facts``) gives the same answer as a walk.
    """
    return identify_step(StepVerdict(facts), facts, facts.children(), opts)[0]


def identify_step(v, facts, children, opts):
    """(v, backend) with backend None when judging stops here (no layout, ambiguous or unsupported runner).

    Emits ``no-layout``, ``runner-ambiguous`` and ``unsupported-layout``.
    """
    if v.step is None:
        return v, None
    backend = opts["backend"]
    detected = detect_backend(facts, children)
    if backend == L.AUTO or (backend == "megatron" and detected == "megatron_torch_dist"):
        backend = detected
    if backend is None:
        v.problem(
            "no-layout",
            "nothing of an RLinf checkpoint is here yet (%d file(s)): the save has not started or was cut off"
            % facts.files,
            hint="pass backend and runner to list what is missing",
        )
        return v, None
    megatron = backend.startswith("megatron")
    v.backend = "fsdp2" if backend == "fsdp" and opts["backend"] == "fsdp2" else backend
    v.evidence = runner_evidence(facts, children, megatron)
    if opts["runner"] != L.AUTO:
        v.runner = opts["runner"]
    elif len(v.evidence) > 1:
        v.problem(
            "runner-ambiguous",
            "the files point to several runners (%s)" % ", ".join(sorted(v.evidence)),
            hint="pass runner",
        )
        return v, None
    else:
        v.runner = L.FAMILY_LABEL[v.evidence.pop() if v.evidence else "actor"]
        v.evidence = {L.FAMILY[v.runner]} if L.FAMILY[v.runner] != "actor" else set()
    if v.runner == "embodied" and opts["runner"] == L.AUTO and {"vla", "vlm"} & step_features(facts, children, backend):
        v.runner = "sft"
    v.family = L.FAMILY[v.runner]
    try:
        L.check_combination(v.runner, backend)
    except L.LayoutError as exc:
        v.problem("unsupported-layout", str(exc))
        return v, None
    v.features = step_features(facts, children, backend)
    if not megatron or "torch_dist" in v.features:
        for parent, names in children.items():
            if ".metadata" in names:
                v.distcp_names[parent] = facts.sizes.get(parent, {})
    v.critic = bool(opts["critic"]) if opts["critic"] is not None else ("critic" in v.features and megatron)
    v.critic = v.critic and v.family == "reasoning" and megatron
    return v, backend
