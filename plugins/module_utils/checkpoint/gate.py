# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate: is ``global_step_N`` complete by the rules of its runner and backend, and quiet?

``run_gate(source, options)`` walks the source once (local directory or S3 prefix), judges the
structure of every step as it arrives (required entries, leftovers, stale shards, commit markers
older than their data, quiet period), then opens payloads only for the step(s) it selects
(zip end-of-central-directory, tracker contents, JSON, the DCP ``.metadata`` shard list).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gc
import json
import re
import struct

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_metadata as D
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.facts import StepFacts
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, WARNING, finding

DEFAULTS = {
    "runner": L.AUTO,
    "backend": L.AUTO,
    "actor_world_size": None,
    "tensor_parallel": None,
    "pipeline_parallel": None,
    "expert_parallel": None,
    "critic": None,
    "full_weights": True,
    "step": "latest",
    "quiet_seconds": 120,
    "verify_payloads": True,
    "full_report": False,
}
# A commit marker may trail its data by clock granularity (S3 LastModified has whole seconds);
# one from an earlier save is older than the new data by far more than this.
MARKER_TOLERANCE = 2.0
# Shards of one save are written within minutes; a higher-rank group this much older is a leftover.
STALE_GAP = 600.0
ZIP_TAIL = 22 + 65535  # EOCD record plus the longest possible zip comment
JSON_LIMIT = 64 * 1024 * 1024
METADATA_LIMIT = 512 * 1024 * 1024
ACTOR_DCP_METADATA = "actor/dcp_checkpoint/.metadata"
DISTCP_REF = re.compile(rb"__(\d+)_(\d+)\.distcp")
EOCD = b"PK\x05\x06"

VERDICT_COMPLETE = "complete"
VERDICT_INCOMPLETE = "incomplete"
VERDICT_UNVERIFIED = "unverified"  # structure complete, payloads not opened (not a selection candidate)
VERDICT_UNRECOGNIZED = "unrecognized"  # global_step_40_bak and friends: reported, never judged


def normalize_options(options):
    """Fill defaults and reject bad input with one clear message (raises ``GateError``)."""
    opts = dict(DEFAULTS)
    opts.update({k: v for k, v in (options or {}).items() if v is not None})
    if opts["runner"] not in (*L.RUNNERS, L.AUTO):
        raise L.LayoutError("unknown runner %r; expected one of %s or auto" % (opts["runner"], ", ".join(L.RUNNERS)))
    if opts["backend"] not in (*L.BACKENDS, L.AUTO):
        raise L.LayoutError("unknown backend %r; expected one of %s or auto" % (opts["backend"], ", ".join(L.BACKENDS)))
    step = opts["step"]
    if isinstance(step, str) and step != "latest":
        if not step.isdigit():
            raise L.LayoutError("step must be a number or 'latest', got %r" % step)
        step = int(step)
    if isinstance(step, int) and step < 0:
        raise L.LayoutError("step must not be negative, got %d" % step)
    opts["step"] = step
    for name in ("actor_world_size", "tensor_parallel", "pipeline_parallel", "expert_parallel"):
        if opts[name] is not None and opts[name] < 1:
            raise L.LayoutError("%s must be at least 1, got %s" % (name, opts[name]))
    if opts["quiet_seconds"] < 0:
        raise L.LayoutError("quiet_seconds must not be negative")
    if opts["runner"] != L.AUTO and opts["backend"] != L.AUTO:
        L.check_combination(opts["runner"], opts["backend"])
    if opts["backend"] != L.AUTO:
        L.validate_parallel(
            opts["backend"],
            opts["actor_world_size"],
            opts["tensor_parallel"],
            opts["pipeline_parallel"],
            opts["expert_parallel"],
        )
    if opts["critic"] and opts["runner"] not in (L.AUTO, "reasoning", "agent"):
        raise L.LayoutError(
            "critic=true is inconsistent with runner %s: only reasoning/agent save a critic" % opts["runner"]
        )
    if opts["critic"] and opts["backend"] in ("fsdp", "fsdp2"):
        raise L.LayoutError(
            "critic=true is inconsistent with backend %s: only Megatron critics are saved" % opts["backend"]
        )
    return opts


class StepVerdict:
    """The judgement of one step; small, so thousands of steps cost little memory."""

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
        self.missing = []
        self.problems = []
        self.verified = False
        self.rule = ""

    @property
    def structure_ok(self):
        return not self.missing and not any(p["severity"] == ERROR for p in self.problems)

    def problem(self, id, message, severity=ERROR, path="", hint="", **extra):
        self.problems.append(finding(id, message, severity=severity, path=path, hint=hint, **extra))

    def reasons(self):
        out = []
        if self.missing:
            shown = ", ".join(self.missing[:5]) + (
                " (+%d more)" % (len(self.missing) - 5) if len(self.missing) > 5 else ""
            )
            out.append(
                "missing %d required entr%s: %s" % (len(self.missing), "y" if len(self.missing) == 1 else "ies", shown)
            )
        out.extend("%s: %s" % (p["id"], p["message"]) for p in self.problems)
        return out


# ---------------------------------------------------------------- detection


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
                if L.ITER_DIR.match(it):
                    base = "%s/%s/" % (comp, it)
                    entries = facts.entries
                    if any(base + mp + "/distrib_optim.pt" in entries for mp in children.get(base[:-1], ())):
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


def _rank_times(children, directory, pattern, want_dir, facts):
    """rank -> mtime (None when unknown) of the rank-indexed children of ``directory``."""
    out = {}
    for name in children.get(directory, ()):
        m = pattern.match(name)
        rel = "%s/%s" % (directory, name)
        if m and (rel in facts.dirs) == want_dir:
            if want_dir:
                times = [facts.entries[rel + "/" + n] for n in children.get(rel, ()) if rel + "/" + n in facts.entries]
                out[int(m.group(1))] = max(times) if times else None
            else:
                out[int(m.group(1))] = facts.entries.get(rel)
    return out


def _older_generation(times):
    """The lowest rank from which every higher rank is much older than every lower one (a larger earlier
    run's leftovers), or None. One save writes all its shards within minutes of each other."""
    ranks = sorted(r for r, t in times.items() if t is not None)
    n = len(ranks)
    if n < 2:
        return None
    suffix_max = [0.0] * n
    running = float("-inf")
    for i in range(n - 1, -1, -1):
        running = max(running, times[ranks[i]])
        suffix_max[i] = running
    prefix_min = float("inf")
    for k in range(1, n):
        prefix_min = min(prefix_min, times[ranks[k - 1]])
        if suffix_max[k] + STALE_GAP < prefix_min:
            return ranks[k]
    return None


def infer_world_size(v, facts, children, given):
    """FSDP world size: the given one, or the one every rank-indexed group agrees on."""
    groups = []
    generations = []
    for directory, pattern, want_dir in L.RANK_GROUPS[v.family]:
        times = _rank_times(children, directory, pattern, want_dir, facts)
        if times:
            groups.append((directory, set(times)))
            split = _older_generation(times)
            if split is not None:
                generations.append("%s ranks >= %d are far older than the others" % (directory, split))
    for directory, ranks in groups:
        if directory == "actor/dcp_checkpoint":
            v.distcp_ranks = tuple(sorted(ranks))
    if given is not None:
        return given, groups
    sizes = {}
    for directory, ranks in groups:
        sizes[directory] = L.contiguous_size(ranks)
    distinct = set(sizes.values())
    if len(distinct) == 1 and None not in distinct and not generations:
        return distinct.pop(), groups
    detail = "; ".join("%s has ranks %s" % (d, _rank_text(r)) for d, r in groups) or "no rank-indexed shard was found"
    if generations:
        detail += "; " + "; ".join(generations)
    v.problem(
        "world-size-ambiguous",
        "the actor world size cannot be inferred unambiguously (%s)" % detail,
        hint="pass actor_world_size (the number of actor ranks that wrote this checkpoint)",
    )
    return None, groups


def _rank_text(ranks):
    ranks = sorted(ranks)
    if len(ranks) > 6:
        return "%s..%s (%d)" % (ranks[0], ranks[-1], len(ranks))
    return ",".join(str(r) for r in ranks)


def _stale_ranks(v, groups, world_size):
    for directory, ranks in groups:
        stale = sorted(r for r in ranks if r >= world_size)
        if stale:
            v.problem(
                "stale-shards",
                "%s holds %d shard(s) for rank(s) %s beyond the world size %d: left over from a larger earlier run, "
                "not counted" % (directory, len(stale), _rank_text(stale), world_size),
                severity=WARNING,
                path=directory,
            )


def _megatron_grid(v, children, opts):
    it = "actor/iter_%07d" % v.step
    names = children.get(it, frozenset())
    if not any(n.startswith("mp_rank_") for n in names) and opts["tensor_parallel"] is None:
        v.missing.append(it + "/mp_rank_*/model_optim_rng.pt")
        v.missing.append("actor/" + L.TRACKER_NAME)
        return None
    grid, why = L.infer_grid_cached(
        frozenset(names), opts["tensor_parallel"], opts["pipeline_parallel"], opts["expert_parallel"]
    )
    if grid is None:
        v.problem(
            "parallel-layout-ambiguous",
            "the Megatron TP x PP x EP layout of %s cannot be inferred from its mp_rank directories" % it,
            hint="pass " + why,
        )
        return None
    if opts["actor_world_size"] is not None and opts["actor_world_size"] % (grid[0] * grid[1] * grid[2]):
        v.problem(
            "parallel-layout-mismatch",
            "actor_world_size=%d is not a multiple of TP x PP x EP = %d found in %s"
            % (opts["actor_world_size"], grid[0] * grid[1] * grid[2], it),
        )
    return grid


def _megatron_stale(v, children):
    expected = L.grid_names(*v.grid) if v.grid else frozenset()
    for comp in ("actor", "critic"):
        for name in children.get(comp, ()):
            m = L.ITER_DIR.match(name)
            if m and int(m.group(1)) != v.step:
                v.problem(
                    "stale-iteration",
                    "%s/%s belongs to iteration %d, not to this step" % (comp, name, int(m.group(1))),
                    severity=WARNING,
                    path="%s/%s" % (comp, name),
                )
        it = "%s/iter_%07d" % (comp, v.step)
        extra = sorted(n for n in children.get(it, ()) if n not in expected and L.MP_RANK.match(n))
        if extra and "torch_dist" not in v.features:
            v.problem(
                "stale-shards",
                "%s holds %d mp_rank director%s outside the TP x PP x EP grid %s: left over from another run, "
                "not counted" % (it, len(extra), "y" if len(extra) == 1 else "ies", "x".join(map(str, v.grid))),
                severity=WARNING,
                path=it,
            )


# ---------------------------------------------------------------- structure


def identify(facts, opts):
    """Backend, runner family and optional parts of one step: what its siblings' rules need from it.

    Needs only the names of the top, ``actor/``, ``critic/``, their ``iter_*`` and ``sac_components``
    directories, so a shallow look at a step (``facts.shallow_facts``) gives the same answer as a walk.
    """
    return _identify(StepVerdict(facts), facts, facts.children(), opts)[0]


def judge_structure(facts, opts, now):
    """Everything that can be decided from names, sizes and mtimes of one step."""
    v = StepVerdict(facts)
    for err in facts.errors:
        v.problem("unreadable", err)
    if v.step is None:
        return v
    children = facts.children()
    v, backend = _identify(v, facts, children, opts)
    if backend is None:
        if v.backend is None:
            _quiet(v, opts, now)
        return v
    megatron = backend.startswith("megatron")
    return _judge_layout(v, facts, children, backend, megatron, opts, now)


def _identify(v, facts, children, opts):
    """(v, backend) with backend None when judging stops here (no layout, ambiguous or unsupported runner)."""
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
                base = parent + "/" if parent else ""
                v.distcp_names[parent] = {n: facts.sizes.get(base + n) for n in names if n.endswith(".distcp")}
    v.critic = bool(opts["critic"]) if opts["critic"] is not None else ("critic" in v.features and megatron)
    v.critic = v.critic and v.family == "reasoning" and megatron
    return v, backend


def _judge_layout(v, facts, children, backend, megatron, opts, now):
    """The layout rules of an identified step: required entries, stale shards, leftovers, marker order."""
    groups = []
    if megatron:
        if "torch_dist" not in v.features:
            v.grid = _megatron_grid(v, children, opts)
            if v.grid is None:
                if v.missing:
                    v.rule = L.ROW_TEXT["megatron-%s" % v.family]
                _quiet(v, opts, now)
                return v
        v.world_size = opts["actor_world_size"]
    else:
        sizes = [
            (n, opts[n]) for n in ("tensor_parallel", "pipeline_parallel", "expert_parallel") if (opts[n] or 1) > 1
        ]
        if sizes:
            v.problem(
                "parallel-sizes-ignored",
                "%s apply to Megatron only; this step is an FSDP checkpoint, sharded by the actor world size"
                % ", ".join("%s=%d" % s for s in sizes),
                severity=WARNING,
            )
        v.world_size, groups = infer_world_size(v, facts, children, opts["actor_world_size"])
        if v.world_size is None:
            _quiet(v, opts, now)
            return v

    tmpl = L.template(v.runner, v.backend, v.world_size, v.grid, v.features, v.critic, opts["full_weights"])
    v.rule = tmpl.rule_text()
    # compare in the template's step-free path space: one set difference instead of per-entry work
    frag = L.to_template(v.step, v.backend)
    if frag:
        real, placeholder = frag

        def back(rel):
            return rel.replace(placeholder, real)

        entries = {rel.replace(real, placeholder): t for rel, t in facts.entries.items()}
    else:

        def back(rel):
            return rel

        entries = facts.entries
    absent = tmpl.required.difference(entries)
    if absent:
        v.missing.extend(back(rel) for rel, _kind in tmpl.entries if rel in absent)
    for rel in tmpl.any_distcp:
        parent = back(rel).rpartition("/")[0]
        if not any(n.endswith(".distcp") for n in children.get(parent, ())):
            v.missing.append(back(rel))
    if megatron:
        _megatron_stale(v, children)
    else:
        _stale_ranks(v, groups, v.world_size)
    for rel in facts.leftovers:
        v.problem(
            "leftover-tmp",
            "%s is an interrupted write (a save was cut off before its rename)" % rel,
            path=rel,
            hint="this step is not complete; do not resume from it",
        )
    for marker, preds, fetch in tmpl.order_fetch:
        mark = entries.get(marker)
        if mark is None:
            continue
        if absent:
            newest = max([entries[p] for p in preds if p in entries] or [mark])
        else:  # every predecessor exists: one C-level fetch
            newest = max(fetch(entries)) if len(preds) > 1 else entries[preds[0]]
        if mark + MARKER_TOLERANCE < newest:
            v.problem(
                "stale-marker",
                "%s is older than the data it commits (by %.0f s): it is left over from an earlier save and this "
                "save did not finish" % (back(marker), newest - mark),
                path=back(marker),
            )
    _quiet(v, opts, now)
    return v


def _quiet(v, opts, now):
    if v.newest is not None and opts["quiet_seconds"] > 0 and now - v.newest < opts["quiet_seconds"]:
        v.problem(
            "write-too-recent",
            "the newest file was written %.0f s ago, less than quiet_seconds=%d: a save may still be in progress"
            % (max(0.0, now - v.newest), opts["quiet_seconds"]),
            hint="wait until nothing has been written for quiet_seconds, then run the gate again",
        )


def expectation(v, opts):
    return L.expect_cached(
        v.step,
        v.runner,
        v.backend,
        v.world_size,
        grid=v.grid,
        features=v.features,
        critic=v.critic,
        full_weights=opts["full_weights"],
    )


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


# ---------------------------------------------------------------- payloads


def zip_tail_problem(tail, size):
    """Why a torch.save zip whose last bytes are ``tail`` is truncated, or None when it looks whole."""
    start = size - len(tail)
    pos = len(tail)
    while True:
        pos = tail.rfind(EOCD, 0, pos)
        if pos < 0:
            return "no zip end-of-central-directory record (truncated torch.save payload)"
        if len(tail) - pos >= 22:
            _sig, _d, _cd, _nd, total, cd_size, cd_off, comment = struct.unpack("<4sHHHHIIH", tail[pos : pos + 22])
            if pos + 22 + comment == len(tail):
                if cd_off != 0xFFFFFFFF and cd_size != 0xFFFFFFFF and cd_off + cd_size > start + pos:
                    return "zip central directory points past its end record (damaged torch.save payload)"
                if total == 0:
                    return "zip archive with no entries (not a torch.save payload)"
                return None
        if pos == 0:
            return "no zip end-of-central-directory record (truncated torch.save payload)"


def verify_payloads(v, source, opts):
    """Open what the rules say to open; mark the step verified. Errors go to ``v.problems``."""
    exp = expectation(v, opts)
    for rel, kind in exp.entries:
        if kind in (L.FILE, L.ANY_DISTCP):
            continue
        try:
            if kind == L.ZIP:
                tail, size = source.read_tail(v.name, rel, 1024)
                why = zip_tail_problem(tail, size)
                if why and size > len(tail):
                    tail, size = source.read_tail(v.name, rel, ZIP_TAIL)
                    why = zip_tail_problem(tail, size)
                if why:
                    v.problem("truncated-payload", "%s: %s" % (rel, why), path=rel)
            elif kind == L.TRACKER:
                text = source.read_all(v.name, rel, 4096).decode("utf-8", "replace").strip()
                if text != str(v.step):
                    v.problem(
                        "tracker-mismatch",
                        "%s contains %r, not %d: the tracker belongs to another save" % (rel, text[:40], v.step),
                        path=rel,
                    )
            elif kind == L.JSON:
                json.loads(source.read_all(v.name, rel, JSON_LIMIT).decode("utf-8"))
            elif kind == L.DCP_METADATA:
                data = source.read_all(v.name, rel, METADATA_LIMIT + 1)
                _check_dcp(v, data, rel, opts)
        except ValueError as exc:
            v.problem("invalid-json", "%s does not parse as JSON (%s)" % (rel, str(exc)[:80]), path=rel)
        except (OSError, L.GateError) as exc:
            v.problem("unreadable", "%s could not be read: %s" % (rel, getattr(exc, "strerror", None) or exc), path=rel)
    v.verified = True


def _dcp_needs(v, data, rel):
    """{shard file name: minimum size} promised by a DCP ``.metadata``; None when only presence rules apply."""
    if len(data) > METADATA_LIMIT:
        v.problem(
            "dcp-metadata-unverified",
            "%s is larger than %d MiB: its shard list was not read, only the presence rules were applied"
            % (rel, METADATA_LIMIT >> 20),
            severity=WARNING,
            path=rel,
        )
        return None
    try:
        return D.parse(data).needs
    except D.InvalidMetadata as exc:
        v.problem(
            "invalid-dcp-metadata",
            "%s is not a whole DCP commit marker: %s" % (rel, exc),
            path=rel,
            hint="the save was cut off while writing its commit marker; do not resume from this step",
        )
        return None
    except D.UnknownFormat as exc:
        # older torch or another writer: keep the file-name rules, plus any shard names the bytes mention
        v.problem(
            "dcp-metadata-unverified",
            "%s is not a torch DCP Metadata this gate can read (%s): only the presence rules were applied" % (rel, exc),
            severity=WARNING,
            path=rel,
        )
        names = {m.group(0).decode() for m in DISTCP_REF.finditer(data)}
        return dict.fromkeys(names, 0) or None


def _check_dcp(v, data, rel, opts):
    """Every shard a ``.metadata`` references exists and is long enough; unreferenced shards are stale."""
    needs = _dcp_needs(v, data, rel)
    if needs is None:
        return
    parent = rel.rpartition("/")[0]
    present = v.distcp_names.get(parent, {})
    if rel == ACTOR_DCP_METADATA:
        _actor_world_size_from_metadata(v, needs, rel, opts, present)
    else:
        stale = sorted(set(present) - set(needs))
        if stale:
            v.problem(
                "stale-shards",
                "%s holds %d shard file(s) that its .metadata does not reference (%s): left over from another run, "
                "not counted" % (parent, len(stale), ", ".join(stale[:4])),
                severity=WARNING,
                path=parent,
            )
    for name in sorted(set(needs) - set(present)):
        if "%s/%s" % (parent, name) not in v.missing:
            v.missing.append("%s/%s" % (parent, name))
    for name in sorted(needs):
        size = present.get(name)
        if size is not None and size < needs[name]:
            v.problem(
                "truncated-shard",
                "%s/%s is %d bytes but %s references bytes up to %d: %d bytes are missing (the shard was cut off)"
                % (parent, name, size, rel, needs[name], needs[name] - size),
                path="%s/%s" % (parent, name),
                hint="this step is not complete; do not resume from it",
                missing_bytes=needs[name] - size,
            )


def _actor_world_size_from_metadata(v, needs, rel, opts, present):
    """The actor's ``.metadata`` names its shard files: the authoritative world size and shard list."""
    refs = set()
    for name in needs:
        m = L.DISTCP.match(name)
        if m:
            refs.add(int(m.group(1)))
    size = L.contiguous_size(refs)
    if size is None or size == v.world_size:
        return
    if opts["actor_world_size"] is not None:
        v.problem(
            "world-size-mismatch",
            "%s was written by %d ranks, not actor_world_size=%d: it belongs to another run"
            % (rel, size, opts["actor_world_size"]),
            path=rel,
        )
        return
    # the world size was inferred from file names that included stale shards: the marker knows better
    v.problems = [p for p in v.problems if not (p["id"] == "stale-shards" and p["path"] == "actor/dcp_checkpoint")]
    v.missing = [m for m in v.missing if not m.startswith("actor/dcp_checkpoint/__")]
    v.world_size = size
    stale = sorted(n for n in present if n not in needs)
    if stale:
        v.problem(
            "stale-shards",
            "actor/dcp_checkpoint holds %d shard file(s) that .metadata does not reference (%s): left over from a "
            "larger earlier run, not counted" % (len(stale), ", ".join(stale[:4])),
            severity=WARNING,
            path="actor/dcp_checkpoint",
        )


# ---------------------------------------------------------------- selection and result


def _verdict_name(v, opts):
    if v.step is None:
        return VERDICT_UNRECOGNIZED
    if not v.structure_ok:
        return VERDICT_INCOMPLETE
    if opts["verify_payloads"] and not v.verified:
        return VERDICT_UNVERIFIED
    return VERDICT_COMPLETE


def _step_summary(v, source, opts):
    return {
        "name": v.name,
        "step": v.step,
        "checkpoint": source.location(v.name),
        "verdict": _verdict_name(v, opts),
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
        "problems": list(v.problems),
    }


def _confirm(v, source, opts):
    """Structure ok and, when asked, payloads ok."""
    if not v.structure_ok:
        return False
    if opts["verify_payloads"] and not v.verified:
        verify_payloads(v, source, opts)
    return v.structure_ok


def run_gate(source, options):
    """Judge the steps of ``source``; return the module result (without ``changed``/``msg``).

    By default newest first: list the step names once, walk the newest step, then older ones only
    until one is complete (a named step: only that one); siblings are looked at shallowly for the
    cross-step rules. ``full_report`` walks and reports every step.
    """
    opts = normalize_options(options)
    # The walk and the .metadata pickle create ~10^5 small containers and no cycles: the cyclic GC
    # would only rescan them again and again (it doubles the cost of unpickling a large .metadata).
    collecting = gc.isenabled()
    gc.disable()
    try:
        if opts["full_report"]:
            return _run_full(source, opts)
        return _run_newest_first(source, opts)
    finally:
        if collecting:
            gc.enable()


def _no_steps(source):
    return L.GateError(
        "no global_step_* directory under %s: nothing has been saved there (check runner.logger.log_path / "
        "runner.output_dir and the experiment name)%s"
        % (source.describe(), "; found: " + ", ".join(sorted(source.others)[:10]) if source.others else "")
    )


def _only_odd_names(source, names):
    return L.GateError(
        "no global_step_N directory under %s, only names RLinf cannot resume from: %s"
        % (source.describe(), ", ".join(sorted(names)))
    )


def _step_not_found(source, opts, steps):
    return L.GateError(
        "step %s not found under %s; steps present: %s"
        % (opts["step"], source.describe(), ", ".join(str(s) for s in reversed(steps[:20])))
    )


def _run_full(source, opts):
    now = None
    verdicts = []
    for facts in source.scan():
        if now is None:
            now = source.now()
        verdicts.append(judge_structure(facts, opts, now))
    if not verdicts:
        raise _no_steps(source)
    apply_root_consistency(verdicts, opts)
    numbered = sorted((v for v in verdicts if v.step is not None), key=lambda v: v.step, reverse=True)
    if not numbered:
        raise _only_odd_names(source, [v.name for v in verdicts])
    latest_complete = next((v for v in numbered if _confirm(v, source, opts)), None)
    if opts["step"] == "latest":
        chosen = latest_complete or numbered[0]
    else:
        chosen = next((v for v in numbered if v.step == opts["step"]), None)
        if chosen is None:
            raise _step_not_found(source, opts, [v.step for v in numbered])
        _confirm(chosen, source, opts)
    return _result(source, opts, chosen, latest_complete, numbered[0], verdicts, len(verdicts))


def _run_newest_first(source, opts):
    names = source.step_names()
    if not names:
        raise _no_steps(source)
    numbered = sorted(((L.step_number(n), n) for n in names if L.step_number(n) is not None), reverse=True)
    if not numbered:
        raise _only_odd_names(source, names)
    walked = {}
    evidence = []
    now = []

    def judge(name):
        facts = source.walk(name)
        if not now:
            now.append(source.now())
        v = walked[name] = judge_structure(facts, opts, now[0])
        if not evidence:  # siblings are identified from a shallow look, once
            others = [identify(source.probe(n), opts) for _s, n in numbered if n != name]
            evidence.append(root_evidence([v, *others], opts))
        apply_root_rules(v, evidence[0], opts)
        return v

    newest_step, newest_name = numbered[0]
    latest_complete = None
    if opts["step"] == "latest":
        for _s, name in numbered:
            v = judge(name)
            if _confirm(v, source, opts):
                latest_complete = v
                break
        chosen = latest_complete or walked[newest_name]
    else:
        name = next((n for s, n in numbered if s == opts["step"]), None)
        if name is None:
            raise _step_not_found(source, opts, [s for s, _n in numbered])
        chosen = judge(name)
        if _confirm(chosen, source, opts) and chosen.step == newest_step:
            latest_complete = chosen  # older complete steps are not looked for: only the named one is walked
    odd = []
    for n in names:
        if L.step_number(n) is None:
            v = StepVerdict(StepFacts(n))
            v.files = v.bytes = None  # not walked
            odd.append(v)
    newest = walked.get(newest_name)
    if newest is None:  # a named older step: the newest was not walked
        newest = StepVerdict(StepFacts(newest_name))
    return _result(source, opts, chosen, latest_complete, newest, list(walked.values()) + odd, len(names))


def _result(source, opts, chosen, latest_complete, newest, verdicts, found):
    notes = []
    if opts["step"] == "latest" and latest_complete is not None and latest_complete is not newest:
        notes.append(
            finding(
                "newest-step-incomplete",
                "the newest step %s is incomplete (%s); using the newest complete step %s"
                % (newest.name, "; ".join(newest.reasons()[:3]), latest_complete.name),
                severity=WARNING,
                path=newest.name,
            )
        )
    for v in verdicts:
        if v.step is None:
            notes.append(
                finding(
                    "unrecognized-step-name",
                    "%s is not a global_step_N directory; it is reported but never chosen" % v.name,
                    severity=WARNING,
                    path=v.name,
                )
            )
    complete = chosen.structure_ok and (chosen.verified or not opts["verify_payloads"])
    steps = [_step_summary(v, source, opts) for v in sorted(verdicts, key=_order_key)]
    return {
        "complete": complete,
        "step": chosen.step,
        "checkpoint": source.location(chosen.name),
        "runner": chosen.runner,
        "backend": chosen.backend,
        "world_size": chosen.world_size,
        "rule": chosen.rule,
        "missing": list(chosen.missing),
        "problems": _missing_finding(chosen) + list(chosen.problems) + notes,
        "files": chosen.files,
        "bytes": chosen.bytes,
        "newest_mtime": chosen.newest,
        "latest_complete_step": latest_complete.step if latest_complete else None,
        "newest_step": newest.step,
        "steps": steps,
        "steps_found": found,
    }


def _missing_finding(v):
    """``missing`` as one error finding too, so ``problems`` alone tells the whole story."""
    if not v.missing:
        return []
    shown = ", ".join(v.missing[:6]) + (", ..." if len(v.missing) > 6 else "")
    return [
        finding(
            "missing-entries",
            "%d required entr%s of %s missing: %s"
            % (len(v.missing), "y" if len(v.missing) == 1 else "ies", v.name, shown),
            path=v.missing[0],
            hint="the save did not finish; do not resume from this step",
        )
    ]


def _order_key(v):
    return (v.step is None, v.step if v.step is not None else 0, v.name)


def incomplete_message(result):
    """One paragraph: which rule failed and what to do."""
    where = result["checkpoint"]
    head = "Checkpoint %s (step %s, runner %s, backend %s) is incomplete" % (
        where,
        result["step"],
        result["runner"] or "unknown",
        result["backend"] or "unknown",
    )
    errors = [p for p in result["problems"] if p["severity"] == ERROR and p["id"] != "missing-entries"]
    parts = []
    if result["missing"]:
        miss = result["missing"]
        parts.append(
            "%d required entr%s missing (%s%s)"
            % (
                len(miss),
                "y is" if len(miss) == 1 else "ies are",
                ", ".join(miss[:4]),
                ", ..." if len(miss) > 4 else "",
            )
        )
    parts.extend(p["message"] for p in errors[:4])
    rule = (" The rule is: %s." % result["rule"]) if result.get("rule") else ""
    ids = {p["id"] for p in errors}
    if ids & {"integrity-mismatch", "integrity-manifest-unreadable"}:
        todo = (
            "The checkpoint no longer matches the integrity manifest written at guarded stop (or that manifest "
            "cannot be read): do not resume from it."
        )
    elif "write-too-recent" in ids:
        todo = (
            "A save may still be running: do not stop the Job now; wait until nothing has been written for "
            "quiet_seconds and run the gate again."
        )
    elif ids & {"world-size-ambiguous", "parallel-layout-ambiguous", "runner-ambiguous", "no-layout"}:
        todo = "Pass the parameter named above (actor_world_size, the parallel sizes, runner or backend) and run again."
    else:
        todo = (
            "The save did not finish (or a stop cut it off): do not resume from this step and do not stop the Job "
            "until the trainer has written a complete checkpoint"
        )
        if result.get("latest_complete_step") is not None and result["latest_complete_step"] != result["step"]:
            todo += "; the newest complete step is %s" % result["latest_complete_step"]
        todo += "."
    return "%s: %s.%s %s" % (head, "; ".join(parts) or "see problems", rule, todo)
