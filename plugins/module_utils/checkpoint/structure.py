# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The structure rules: everything that can be decided from the names, sizes and mtimes of one step.

Each rule is a small function of one :class:`Look` at a step, run in the order of ``PIPELINE``;
``RULES`` lists ``(finding id, severity, rule)`` for every finding they emit (docs/findings.md and its
test read it). A rule returns ``STOP`` when judging cannot go on (the quiet-period rule still runs) or
``HALT`` when nothing more is said about the step at all.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import parallelism as P
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.identify import INTEGRITY_LIST, identify_step
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.verdict import StepVerdict
from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, WARNING

# A commit marker may trail its data by clock granularity (S3 LastModified has whole seconds);
# one from an earlier save is older than the new data by far more than this.
MARKER_TOLERANCE = 2.0
STOP = "stop"
HALT = "halt"


class Look:
    """One step under judgement: what its rules share, filled in as they run."""

    def __init__(self, facts, opts, now):
        self.v = StepVerdict(facts)
        self.facts = facts
        self.opts = opts
        self.now = now
        self.children = None
        self.backend = None
        self.megatron = False
        self.groups = []
        self.entries = facts.entries
        self.absent = frozenset()
        self.tmpl = None
        self.placeholder = None  # (real step fragment, template fragment) when paths were made step-free

    def back(self, rel):
        """A template-space path as it is named in this step."""
        return rel.replace(self.placeholder[1], self.placeholder[0]) if self.placeholder else rel


class TemplateView:
    """A step's kept entries seen in the template's step-free path space.

    Keys are translated on each lookup (a few template paths), not the whole listing up front (thousands
    of shards in a torch_dist iteration directory).
    """

    __slots__ = ("entries", "placeholder", "real")

    def __init__(self, entries, real, placeholder):
        self.entries = entries
        self.real = real
        self.placeholder = placeholder

    def __getitem__(self, rel):
        return self.entries[rel.replace(self.placeholder, self.real)]

    def __contains__(self, rel):
        return rel.replace(self.placeholder, self.real) in self.entries

    def get(self, rel, default=None):
        return self.entries.get(rel.replace(self.placeholder, self.real), default)


def judge_structure(facts, opts, now):
    """Run the structure rules on one walked step; its :class:`StepVerdict`."""
    look = Look(facts, opts, now)
    for rule in PIPELINE:
        outcome = rule(look)
        if outcome == HALT:
            return look.v
        if outcome == STOP:
            break
    quiet_period(look)
    return look.v


def unreadable(look):
    for err in look.facts.errors:
        look.v.problem("unreadable", err)


def named_step(look):
    """``global_step_40_bak`` and friends are reported, never judged."""
    return HALT if look.v.step is None else None


def identified(look):
    look.children = look.facts.children()
    v, look.backend = identify_step(look.v, look.facts, look.children, look.opts)
    if look.backend is None:
        return STOP if v.backend is None else HALT
    look.megatron = look.backend.startswith("megatron")
    if look.megatron:
        v.integrity_lists = tuple(
            sorted(
                (p + "/" if p else "") + INTEGRITY_LIST for p, names in look.children.items() if INTEGRITY_LIST in names
            )
        )
    return None


def megatron_grid(look):
    """Megatron (torch format): the TP x PP x EP grid of the mp_rank directories."""
    v = look.v
    if not look.megatron:
        return None
    if "torch_dist" not in v.features:
        v.grid = P.megatron_grid(v, look.children, look.opts)
        if v.grid is None:
            if v.missing:
                v.rule = L.ROW_TEXT["megatron-%s" % v.family]
            return STOP
    v.world_size = look.opts["actor_world_size"]
    return None


def parallel_sizes_ignored(look):
    if look.megatron:
        return
    opts = look.opts
    sizes = [(n, opts[n]) for n in ("tensor_parallel", "pipeline_parallel", "expert_parallel") if (opts[n] or 1) > 1]
    if sizes:
        look.v.problem(
            "parallel-sizes-ignored",
            "%s apply to Megatron only; this step is an FSDP checkpoint, sharded by the actor world size"
            % ", ".join("%s=%d" % s for s in sizes),
            severity=WARNING,
        )


def fsdp_world_size(look):
    if look.megatron:
        return None
    v = look.v
    v.world_size, look.groups = P.infer_world_size(v, look.facts, look.children, look.opts["actor_world_size"])
    return STOP if v.world_size is None else None


def required_entries(look):
    """Every entry the layout template requires exists (reported as ``missing``, then ``missing-entries``)."""
    v = look.v
    look.tmpl = tmpl = L.template(
        v.runner, v.backend, v.world_size, v.grid, v.features, v.critic, look.opts["full_weights"]
    )
    v.rule = tmpl.rule_text()
    # compare in the template's step-free path space: one set difference instead of per-entry work
    look.placeholder = frag = L.to_template(v.step, v.backend)
    if frag:
        look.entries = TemplateView(look.facts.entries, *frag)
        absent = frozenset(rel for rel in tmpl.required if rel not in look.entries)
    else:
        absent = tmpl.required.difference(look.entries)
    look.absent = absent
    if absent:
        v.missing.extend(look.back(rel) for rel, _kind in tmpl.entries if rel in absent)
    for rel in tmpl.any_distcp:
        parent = look.back(rel).rpartition("/")[0]
        if not any(n.endswith(".distcp") for n in look.children.get(parent, ())):
            v.missing.append(look.back(rel))


def stale_shards(look):
    if look.megatron:
        P.megatron_stale(look.v, look.children)
    else:
        P.stale_ranks(look.v, look.groups, look.v.world_size)


def leftovers(look):
    for rel in look.facts.leftovers:
        look.v.problem(
            "leftover-tmp",
            "%s is an interrupted write (a save was cut off before its rename)" % rel,
            path=rel,
            hint="this step is not complete; do not resume from it",
        )


def marker_order(look):
    """A commit marker older than the data it commits is left over from an earlier save."""
    entries = look.entries
    for marker, preds, fetch in look.tmpl.order_fetch:
        mark = entries.get(marker)
        if mark is None:
            continue
        if look.absent:
            newest = max([entries[p] for p in preds if p in entries] or [mark])
        else:  # every predecessor exists: one C-level fetch
            newest = max(fetch(entries)) if len(preds) > 1 else entries[preds[0]]
        if mark + MARKER_TOLERANCE < newest:
            look.v.problem(
                "stale-marker",
                "%s is older than the data it commits (by %.0f s): it is left over from an earlier save and this "
                "save did not finish" % (look.back(marker), newest - mark),
                path=look.back(marker),
            )


def quiet_period(look):
    v, opts, now = look.v, look.opts, look.now
    if v.newest is not None and opts["quiet_seconds"] > 0 and now - v.newest < opts["quiet_seconds"]:
        v.problem(
            "write-too-recent",
            "the newest file was written %.0f s ago, less than quiet_seconds=%d: a save may still be in progress"
            % (max(0.0, now - v.newest), opts["quiet_seconds"]),
            hint="wait until nothing has been written for quiet_seconds, then run the gate again",
        )


PIPELINE = (
    unreadable,
    named_step,
    identified,
    megatron_grid,
    parallel_sizes_ignored,
    fsdp_world_size,
    required_entries,
    stale_shards,
    leftovers,
    marker_order,
)
# (finding id, severity, rule that emits it); quiet_period runs last, after a STOP too.
RULES = (
    ("unreadable", ERROR, unreadable),
    ("no-layout", ERROR, identified),
    ("runner-ambiguous", ERROR, identified),
    ("unsupported-layout", ERROR, identified),
    ("parallel-layout-ambiguous", ERROR, megatron_grid),
    ("parallel-layout-mismatch", ERROR, megatron_grid),
    ("parallel-sizes-ignored", WARNING, parallel_sizes_ignored),
    ("world-size-ambiguous", ERROR, fsdp_world_size),
    ("missing-entries", ERROR, required_entries),
    ("stale-iteration", WARNING, stale_shards),
    ("stale-shards", WARNING, stale_shards),
    ("leftover-tmp", ERROR, leftovers),
    ("stale-marker", ERROR, marker_order),
    ("write-too-recent", ERROR, quiet_period),
)
