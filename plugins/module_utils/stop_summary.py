# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The guarded-stop summary: one row per Job, stopped / already stopped / refused / failed and why.

In check mode the outcome is "would stop" (a refusal stays "refused", its reason reading "would refuse").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# stopped-unconfirmed: the stop was sent, then the API server or the records failed (a re-run completes it).
OUTCOMES = ("stopped", "already stopped", "refused", "failed", "stopped-unconfirmed", "would stop")
NOT_OK = ("refused", "failed", "stopped-unconfirmed")


def stop_summary(results):
    """``{table, counts, refused, ok}`` for a list of per-Job results ``{job, outcome, reason, ...}``."""
    rows = []
    counts = dict((o, 0) for o in OUTCOMES)
    for r in sorted(results or [], key=lambda r: str(r.get("job"))):
        outcome = r.get("outcome") or "refused"
        if outcome not in counts:
            outcome = "refused"
        counts[outcome] += 1
        step = r.get("step")
        detail = r.get("reason") or ""
        if outcome not in NOT_OK and r.get("checkpoint"):
            detail = "checkpoint %s" % r["checkpoint"] + ("; " + detail if detail else "")
        rows.append((str(r.get("job")), outcome, "" if step is None else str(step), " ".join(str(detail).split())))
    header = ("JOB", "OUTCOME", "STEP", "DETAIL")
    widths = [max([len(header[i])] + [len(row[i]) for row in rows]) for i in range(3)]
    lines = []
    for row in [header] + rows:
        lines.append("  ".join(row[i].ljust(widths[i]) for i in range(3)) + "  " + row[3])
    lines.append(", ".join("%d %s" % (counts[o], o) for o in OUTCOMES if counts[o] or o in OUTCOMES[:3]))
    refused = [row[0] for row in rows if row[1] == "refused"]
    failed = [row[0] for row in rows if row[1] in ("failed", "stopped-unconfirmed")]
    ok = not refused and not failed
    not_ok = (("refused", refused), ("failed or unconfirmed", failed))
    return {
        "table": "\n".join(lines),
        "counts": counts,
        "refused": refused,
        "failed": failed,
        "ok": ok,
        # The summary record's outcome and the stop records it links.
        "outcome": "all stopped"
        if ok
        else "; ".join("%s: %s" % (what, ", ".join(jobs)) for what, jobs in not_ok if jobs),
        "stop_records": [r["record"] for r in results or [] if r.get("record")],
    }


__all__ = ["OUTCOMES", "stop_summary"]
