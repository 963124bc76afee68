# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many ranks wrote a step: the FSDP world size, the Megatron TP x PP x EP grid, and the shards outside them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.findings import WARNING

# Shards of one save are written within minutes; a higher-rank group this much older is a leftover.
STALE_GAP = 600.0


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


def stale_ranks(v, groups, world_size):
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


def megatron_grid(v, children, opts):
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


def megatron_stale(v, children):
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
        if "torch_dist" in v.features:
            continue  # a torch_dist iteration holds shard files, not mp_rank directories
        it = "%s/iter_%07d" % (comp, v.step)
        extra = sorted(
            n for n in children.get(it, ()) if n.startswith("mp_rank_") and n not in expected and L.MP_RANK.match(n)
        )
        if extra:
            v.problem(
                "stale-shards",
                "%s holds %d mp_rank director%s outside the TP x PP x EP grid %s: left over from another run, "
                "not counted" % (it, len(extra), "y" if len(extra) == 1 else "ies", "x".join(map(str, v.grid))),
                severity=WARNING,
                path=it,
            )
