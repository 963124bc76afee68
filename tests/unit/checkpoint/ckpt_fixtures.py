# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only generator of RLinf checkpoint trees, written from the completeness table by hand.

It deliberately does not import the collection's ``layouts`` module: the tests compare two
independent readings of the same table. It is not shared with rlark-sim either.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import pickle
import time
import zipfile

import dcp_format as DF

TRACKER = "latest_checkpointed_iteration.txt"


def zip_payload(tag="payload"):
    """Bytes shaped like a torch.save file: a zip with archive/data.pkl and archive/version."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", pickle.dumps({"tag": tag, "pad": b"x" * 64}))
        zf.writestr("archive/version", "3\n")
    return buf.getvalue()


def dcp_metadata(shard_names):
    """torch DCP's .metadata: three 16-byte items per shard, so a whole shard is SHARD_BYTES long."""
    return DF.metadata_bytes(DF.shard_items(shard_names, items_per_shard=3, item_len=16))


SHARD_BYTES = 48


class Row:
    """One row of the completeness table with concrete sizes, and the files it writes in order."""

    def __init__(self, id, runner, backend, world=2, tp=1, pp=1, ep=1, critic=False, full_weights=True, extra=()):
        self.id = id
        self.runner = runner
        self.backend = backend
        self.world = world
        self.tp, self.pp, self.ep = tp, pp, ep
        self.critic = critic
        self.full_weights = full_weights
        self.extra = set(extra)  # vla, vlm, alpha, local_shard, dist_opt

    @property
    def megatron(self):
        return self.backend.startswith("megatron")

    def gate_params(self):
        params = {"runner": self.runner, "backend": self.backend, "full_weights": self.full_weights}
        if self.megatron:
            params.update(tensor_parallel=self.tp, pipeline_parallel=self.pp, expert_parallel=self.ep)
            params["critic"] = self.critic if self.runner in ("reasoning", "agent") else None
        else:
            params["actor_world_size"] = self.world
        return params

    # ---- layout, written by hand from docs/rlinf-checkpoints.md "Completeness rules"

    def _dcp(self, base, world):
        out = [("%s/__%d_0.distcp" % (base, r), "bin") for r in range(world)]
        out.append(("%s/.metadata" % base, ("meta", ["__%d_0.distcp" % r for r in range(world)])))
        return out

    def _fsdp_model(self, comp, local_shard=False):
        if local_shard:
            out = [("%s/local_shard_checkpoint/checkpoint_rank_%d.pt" % (comp, r), "zip") for r in range(self.world)]
        else:
            out = self._dcp(comp + "/dcp_checkpoint", self.world)
        if self.full_weights:
            out.append((comp + "/model_state_dict/full_weights.pt", "zip"))
        return out

    def _mp_name(self, t, p, e):
        name = "mp_rank_%02d" % t
        if self.pp > 1:
            name += "_%03d" % p
        if self.ep > 1:
            name += "_%03d" % e
        return name

    def _megatron(self, comp, step):
        it = "%s/iter_%07d" % (comp, step)
        out = []
        if self.backend == "megatron_torch_dist":
            out += [(it + "/__0_0.distcp", "bin"), (it + "/__1_0.distcp", "bin"), (it + "/common.pt", "zip")]
            out += [(it + "/metadata.json", "json"), (it + "/.metadata", ("meta", ["__0_0.distcp", "__1_0.distcp"]))]
        else:
            for t in range(self.tp):
                for p in range(self.pp):
                    for e in range(self.ep):
                        d = "%s/%s" % (it, self._mp_name(t, p, e))
                        if "dist_opt" in self.extra:
                            out.append((d + "/distrib_optim.pt", "zip"))
                        out.append((d + "/model_optim_rng.pt", "zip"))
        out.append(("%s/%s" % (comp, TRACKER), ("tracker", step)))
        return out

    def files(self, step):
        """(relpath, content) in write order; the last ones are the commit markers."""
        r = self.runner
        if self.megatron:
            out = self._megatron("actor", step)
            if r in ("reasoning", "agent"):
                if self.critic:
                    out += self._megatron("critic", step)
                out.append(("data/data.pt", "zip"))
            elif "vlm" in self.extra:
                out.append(("actor/data_state.json", "json"))
            return out
        if r == "iql":
            out = []
            for comp in ("actor/actor_policy", "actor/critic", "actor/value"):
                out += self._fsdp_model(comp, local_shard=True)
            return out + [("actor/iql_components/target_critic.pt", "zip"), ("actor/iql_components/state.pt", "zip")]
        out = self._fsdp_model("actor", local_shard="local_shard" in self.extra)
        if r == "sft" and "vla" in self.extra:
            out += [("actor/data.pt", "zip"), ("actor/rng.pt", "zip")]
        if r == "sft" and "vlm" in self.extra:
            out.append(("actor/data_state.json", "json"))
        if r in ("reasoning", "agent"):
            out.append(("data/data.pt", "zip"))
        if r == "sac":
            if "alpha" in self.extra:
                out += self._dcp("actor/sac_components/alpha/dcp_checkpoint", 1)
            out += [("actor/sac_components/target_model/checkpoint_rank_%d.pt" % k, "zip") for k in range(self.world)]
            for k in range(self.world):
                base = "actor/sac_components/replay_buffer/rank_%d/" % k
                out += [(base + "traj_0.pt", "zip"), (base + "metadata.json", "json")]
                out.append((base + "trajectory_index.json", "json"))
        if r == "dagger":
            for k in range(self.world):
                base = "actor/dagger_components/replay_buffer/rank_%d/" % k
                out += [(base + "traj_0.pkl", "bin"), (base + "metadata.json", "json")]
                out.append((base + "trajectory_index.json", "json"))
        return out

    def required(self, step):
        """Entries the table requires (trajectory payloads are not required)."""
        return [rel for rel, _c in self.files(step) if "/traj_" not in rel]

    def markers(self, step):
        """The entries written last (bold in the table)."""
        files = self.required(step)
        last = files[-1]
        if last.endswith("trajectory_index.json"):
            return [f for f in files if f.endswith("trajectory_index.json")]
        return [last]

    def stale_extras(self, step):
        """Rank-indexed entries a larger earlier run would leave behind."""
        if self.megatron:
            if self.backend == "megatron_torch_dist":
                return [("actor/iter_%07d/__7_0.distcp" % step, "bin")]
            d = "actor/iter_%07d/%s" % (step, self._mp_name(self.tp, 0, 0))
            return [(d + "/model_optim_rng.pt", "zip")]
        if self.runner == "iql":
            return [
                ("%s/local_shard_checkpoint/checkpoint_rank_%d.pt" % (c, self.world), "zip")
                for c in ("actor/actor_policy", "actor/critic", "actor/value")
            ]
        if "local_shard" in self.extra:
            out = [
                ("actor/local_shard_checkpoint/checkpoint_rank_%d.pt" % k, "zip")
                for k in range(self.world, 2 * self.world)
            ]
        else:
            out = [("actor/dcp_checkpoint/__%d_0.distcp" % k, "bin") for k in range(self.world, 2 * self.world)]
        if self.runner == "sac":
            out += [("actor/sac_components/target_model/checkpoint_rank_%d.pt" % self.world, "zip")]
        return out


ROWS = [
    Row("fsdp-embodied", "embodied", "fsdp"),
    Row("fsdp2-offline", "offline", "fsdp2", world=3),
    Row("fsdp-embodied-nofw", "embodied", "fsdp", full_weights=False),
    Row("fsdp-sft-vla", "sft", "fsdp", extra=["vla"]),
    Row("fsdp-sft-vlm", "sft", "fsdp2", extra=["vlm"]),
    Row("fsdp-sac", "sac", "fsdp", extra=["alpha"]),
    Row("fsdp-sac-local-shard", "sac", "fsdp", extra=["local_shard"]),
    Row("fsdp-dagger", "dagger", "fsdp"),
    Row("fsdp-iql", "iql", "fsdp"),
    Row("fsdp-reasoning", "reasoning", "fsdp"),
    Row("fsdp2-agent", "agent", "fsdp2", world=4),
    Row("megatron-reasoning", "reasoning", "megatron", tp=2, pp=2, critic=True, extra=["dist_opt"]),
    Row("megatron-agent", "agent", "megatron", tp=2, pp=1),
    Row("megatron-coding", "coding", "megatron", tp=2, pp=2, ep=2, extra=["dist_opt"]),
    Row("megatron-sft-vlm", "sft", "megatron", tp=1, pp=2, extra=["vlm"]),
    Row("megatron-torch-dist", "reasoning", "megatron_torch_dist"),
]

CASES = (
    "complete",
    "missing",  # each required entry missing in turn (expanded by the tests)
    "marker-missing",
    "metadata-tmp",
    "stale-shards",
    "stale-marker",
    "tracker-mismatch",
    "truncated",
    "shard-truncated",  # a DCP shard shorter than what its .metadata references
    "too-recent",
)
COMPLETE_CASES = ("complete", "stale-shards")


def render(content, step):
    if content == "zip":
        return zip_payload()
    if content == "json":
        return b'{"ok": true, "entries": [1, 2, 3]}'
    if content == "bin":
        return b"\x00" * SHARD_BYTES
    kind, arg = content
    if kind == "tracker":
        return str(arg).encode()
    if kind == "meta":
        return dcp_metadata(arg)
    raise ValueError(content)


def tree(row, step, case, drop=None):
    """The files of one case: [(relpath, bytes, age_seconds)], ages decreasing in write order."""
    files = [(rel, render(c, step)) for rel, c in row.files(step)]
    stale = []
    if case == "missing":
        files = [f for f in files if f[0] != drop]
    elif case == "marker-missing":
        markers = set(row.markers(step))
        files = [f for f in files if f[0] not in markers]
    elif case == "metadata-tmp":
        metas = [rel for rel, _b in files if rel.endswith("/.metadata")]
        leftover = (metas[0] if metas else row.markers(step)[0]) + ".tmp"
        files.append((leftover, b"partial"))
    elif case == "stale-shards":
        stale = [(rel, render(c, step)) for rel, c in row.stale_extras(step)]
    elif case == "stale-marker":
        # the commit marker is from an earlier save: it predates the data it claims to commit
        markers = set(row.markers(step))
        stale = [f for f in files if f[0] in markers]
        files = [f for f in files if f[0] not in markers]
    elif case == "tracker-mismatch":
        files = [(rel, str(step - 10).encode() if rel.endswith(TRACKER) else data) for rel, data in files]
    elif case == "shard-truncated":
        shards = [rel for rel, _c in row.files(step) if rel.endswith(".distcp")]
        target = shards[-1]
        files = [(rel, data[:-5] if rel == target else data) for rel, data in files]
    elif case == "truncated":
        zips = [rel for rel, c in row.files(step) if c == "zip" and "/traj_" not in rel]
        target = zips[-1]
        files = [(rel, data[: len(data) // 2] if rel == target else data) for rel, data in files]
    out = [(rel, data, 7200.0 + i) for i, (rel, data) in enumerate(stale)]
    n = len(files)
    base = 0.0 if case == "too-recent" else 3600.0
    out += [(rel, data, base + (n - i) * 0.01) for i, (rel, data) in enumerate(files)]
    return out


def write_local(root, step_name, files, now=None, age=0.0):
    """Write files under root/step_name with mtimes ``now - age - file age``."""
    now = (time.time() if now is None else now) - age
    for rel, data, age in files:
        path = os.path.join(root, step_name, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
        os.utime(path, (now - age, now - age))
    os.makedirs(os.path.join(root, step_name), exist_ok=True)


def write_s3(client, bucket, prefix, step_name, files):
    for rel, data, _age in files:
        client.put_object(Bucket=bucket, Key="%s%s/%s" % (prefix, step_name, rel), Body=data)


def expected_complete(case):
    return case in COMPLETE_CASES


def applicable(row, case):
    """Cases that make sense for a row (only Megatron has a tracker)."""
    if case == "tracker-mismatch":
        return row.megatron
    if case == "shard-truncated":
        return any(rel.endswith(".distcp") for rel, _c in row.files(40))
    if case == "truncated":  # DCP shards are raw and .metadata is renamed into place: only zips truncate
        return any(c == "zip" for _rel, c in row.files(40))
    return True


# The problem id each failure case must raise (besides the verdict itself).
CASE_PROBLEM = {
    "metadata-tmp": "leftover-tmp",
    "stale-shards": "stale-shards",
    "stale-marker": "stale-marker",
    "tracker-mismatch": "tracker-mismatch",
    "truncated": "truncated-payload",
    "shard-truncated": "truncated-shard",
    "too-recent": "write-too-recent",
}


def check_case(result, row, step, case, drop):
    """The verdict a gate result must give for one matrix case (disk and S3 share it)."""
    ids = {p["id"] for p in result["findings"]}
    assert result["complete"] is expected_complete(case), (result["missing"], result["findings"])
    assert result["step"] == step
    if case == "missing":
        found = any(drop == m or (m.endswith("*.distcp") and drop.endswith(".distcp")) for m in result["missing"])
        assert found, (drop, result["missing"])
    elif case == "marker-missing":
        assert set(row.markers(step)) <= set(result["missing"])
    else:
        assert CASE_PROBLEM.get(case, "none") in ids or case == "complete", ids
    if case in ("stale-shards", "too-recent", "complete"):
        assert result["missing"] == []
    if case != "too-recent":
        assert "write-too-recent" not in ids
    summary = {s["step"]: s for s in result["steps"]}
    assert summary[step]["verdict"] == ("complete" if result["complete"] else "incomplete")
    assert result["files"] == len(tree(row, step, case, drop))


VERDICT_KEYS = ("complete", "step", "checkpoint", "runner", "backend", "world_size", "rule", "missing", "files")


def _timeless(problems):
    """Findings without the clock-dependent part ("written 3 s ago" differs between two runs)."""
    return [dict(p, message="") if p["id"] in ("write-too-recent", "newest-step-incomplete") else p for p in problems]


def check_same_verdict(lazy, full, named=False):
    """Newest-first must decide exactly as the full report (only the per-step list is shorter).

    For a named step only that step is walked: the newest complete step is known only when it is the one.
    """
    for key in VERDICT_KEYS:
        assert lazy[key] == full[key], (key, lazy[key], full[key])
    assert _timeless(lazy["findings"]) == _timeless(full["findings"])
    assert lazy["newest_step"] == full["newest_step"]
    if not named or lazy["latest_complete_step"] is not None:
        assert lazy["latest_complete_step"] == full["latest_complete_step"]
    lazy_steps = {s["name"]: s for s in lazy["steps"]}
    for s in full["steps"]:
        if s["name"] in lazy_steps and s["step"] is not None:
            one = lazy_steps[s["name"]]
            # reasons and a step's own write-too-recent message carry the clock ("written 3 s ago")
            assert dict(one, reasons=None, findings=_timeless(one["findings"])) == dict(
                s, reasons=None, findings=_timeless(s["findings"])
            )
            assert len(lazy_steps[s["name"]]["reasons"]) == len(s["reasons"])
