"""The simulated run's per-step metrics and RLinf's metrics table (rlinf/utils/metric_utils.py print_metrics_table).

A metric is a deterministic function of (seed, trained steps): a run from scratch has trained s steps at its
step s; a run that loaded a checkpoint holding step K and counts from N has trained K + (s - N). So a correct
resume (K == N) logs exactly the old run's values, a resume that loaded another checkpoint does not, and a
restart from scratch logs the old run's first steps again.
"""

import hashlib
import io
import json
import pickle
import zipfile

WIDTH = 120
ROLLOUT = ("advantages_max", "advantages_mean", "advantages_min", "returns_mean", "rewards")
ACTOR = ("actor/approx_kl", "actor/grad_norm", "actor/lr", "actor/policy_loss", "actor/clip_fraction")


def _unit(seed, trained, name):
    digest = hashlib.sha256(("%s|%d|%s" % (seed, trained, name)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / float(1 << 64)


def values(seed, trained):
    """``{metric key: float}`` of the step after ``trained`` steps of training (RLinf's keys)."""
    out = {}
    for name in ROLLOUT:
        out["rollout/" + name] = round(0.05 + 0.9 * _unit(seed, trained, name), 6)
    for name in ACTOR:
        out["train/" + name] = round(0.02 + 0.5 * _unit(seed, trained, name), 6)
    return out


def _fmt(value):
    if isinstance(value, float):
        if abs(value) < 0.001 and value != 0:
            return "%.2e" % value
        if abs(value) < 0.01:
            return "%.4f" % value
        if abs(value) > 10000:
            return "%.2e" % value
        if abs(value) > 100:
            return "%.1f" % value
        return "%.3f" % value
    return str(value)


def _fit(text, width):
    return text + " " * (width - len(text)) if len(text) <= width else text[: width - 1] + "…"


def _title(title):
    text = " %s " % title
    pad = WIDTH - 2 - len(text)
    return "├%s%s%s┤" % ("─" * (pad // 2), text, "─" * (pad - pad // 2))


def _clock(seconds):
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return "%02d:%02d:%02d" % (hours, minutes, secs) if hours else "%02d:%02d" % (minutes, secs)


def table(step, total, elapsed, steps_done, metrics):
    """The lines RLinf prints for one step (``step`` is 1-based, as in ``Global Step``)."""
    progress = step / float(total) * 100
    filled = int(40 * progress / 100)
    bar = "█" * filled + "░" * (40 - filled)
    per_step = elapsed / steps_done if steps_done > 0 else 0.0
    lines = ["", "╭%s╮" % ("─" * (WIDTH - 2)), _title("Metric Table")]
    head = "│ Global Step: %4d/%d │ Progress: %s │ %5.1f%%" % (step, total, bar, progress)
    lines.append(_fit(head, WIDTH - 2) + " │")
    clock = "│ Elapsed: %s │ ETA: %s │ Step Time: %.3fs" % (
        _clock(elapsed),
        _clock(per_step * (total - step)),
        per_step,
    )
    lines.append(_fit(clock, WIDTH - 2) + " │")
    sections = (
        ("Time", "time/"),
        ("Rollout", "rollout/"),
        ("Training/Actor", "train/actor/"),
    )
    widths = [39, 39, 38]
    for title, prefix in sections:
        items = sorted(
            (k[len(prefix) :] if title != "Training/Actor" else k[len("train/") :], v)
            for k, v in metrics.items()
            if k.startswith(prefix)
        )
        if not items:
            continue
        lines += [_title(title), "│%s│" % (" " * (WIDTH - 2))]
        for i in range(0, len(items), 3):
            cells = ["%s=%s" % (n, _fmt(v)) for n, v in items[i : i + 3]] + ["", ""]
            lines.append("│%s│%s│%s│" % tuple(_fit(c, w) for c, w in zip(cells, widths)))
        lines.append("│%s│" % (" " * (WIDTH - 2)))
    lines += ["╰%s╯" % ("─" * (WIDTH - 2)), ""]
    return lines


def held_step(data):
    """The step a checkpoint file of the simulator holds (layouts.payload wrote it), or None."""
    if data.startswith(b"RLARKSIM-DCP\x00"):
        return int(data.split(b"\x00")[2])
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            name = next((n for n in zf.namelist() if n.endswith("/data.pkl")), None)
            return pickle.loads(zf.read(name)).get("global_step") if name else None
    try:
        parsed = json.loads(data.decode())
    except ValueError:
        return None
    if isinstance(parsed, dict):
        return parsed.get("global_step")
    return parsed if isinstance(parsed, int) else None
