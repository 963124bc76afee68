# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A DCP ``.metadata`` against the shards beside it: every referenced shard exists and is long enough."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import operator
import re

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_metadata as D
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import dcp_prefetch as P
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import layouts as L
from ansible_collections.rlark.ops.plugins.module_utils.findings import WARNING

METADATA_LIMIT = D.METADATA_LIMIT

ACTOR_DCP_METADATA = "actor/dcp_checkpoint/.metadata"

DISTCP_REF = re.compile(rb"__(\d+)_(\d+)\.distcp")


def dcp_needs(v, data, rel):
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
        _invalid(v, rel, exc)
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


def check_dcp(v, data, rel, opts):
    """Every shard a ``.metadata`` references exists and is long enough; unreferenced shards are stale."""
    check_needs(v, dcp_needs(v, data, rel), rel, opts)


def check_dcp_answer(v, answer, rel, opts):
    """The same from a :mod:`dcp_prefetch` answer: ``(OK, needs, size)`` or ``(INVALID, reason, size)``."""
    if answer[0] == P.INVALID:
        _invalid(v, rel, answer[1])
        return
    check_needs(v, answer[1], rel, opts)


def _invalid(v, rel, reason):
    v.problem(
        "invalid-dcp-metadata",
        "%s is not a whole DCP commit marker: %s" % (rel, reason),
        path=rel,
        hint="the save was cut off while writing its commit marker; do not resume from this step",
    )


def check_needs(v, needs, rel, opts):
    """``needs`` ({shard file name: minimum size}, or None for presence rules only) against the shards present."""
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
    # the shards shorter than promised (a missing one counts as its own promise: reported above), in C
    short = itertools.compress(needs, map(operator.lt, map(present.get, needs, needs.values()), needs.values()))
    for name in sorted(short):
        size = present[name]
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
    v.findings = [p for p in v.findings if not (p["id"] == "stale-shards" and p["path"] == "actor/dcp_checkpoint")]
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
