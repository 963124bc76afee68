# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stop record the guarded-stop runbook asks a person to keep, built from what is known.

Every item is filled from the live Job, the checkpoint gate and (when given) the launch manifest;
an item that cannot be established says so instead of being left out, and an image pinned only by
tag is recorded as "digest not confirmed" (the runbook: do not record such a resume as exact).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.rlark.ops.plugins.module_utils import continuity, hydra, jobspec
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.location import hydra_overrides, parts

NOT_CONFIRMED = "digest not confirmed"
# pending: written before the stop patch; stopped-unconfirmed: sent, then the API server or the records failed.
OUTCOMES = ("pending", "stopped", "stopped-unconfirmed", "failed", "refused")
# RLinf prints the step table after the step's save returned (docs: rlinf-checkpoints.md).
STEP_LINE = re.compile(r"Global Step:\s*(\d+)")
DEFAULT_REASONS = {
    "pending": "the stop patch is about to be sent; a later guarded stop of the Job completes this record",
    "stopped": "spec.stopped patched; no Pod CR left",
}
COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _images(job, manifest):
    recorded = {}
    for role in (manifest or {}).get("roles") or []:
        image = role.get("image") or {}
        if isinstance(image, dict) and image.get("reference"):
            recorded[role.get("name")] = image
    out = []
    for task in jobspec.tasks(job):
        for c in jobspec.containers(task):
            ref = c.get("image") or ""
            entry = {"task": task.get("name"), "container": c.get("name"), "image": ref}
            if "@sha256:" in ref:
                entry["digest"] = ref.split("@", 1)[1]
                entry["digest_status"] = "confirmed (pinned in the Job)"
            elif (recorded.get(task.get("name")) or {}).get("digest"):
                entry["digest"] = recorded[task.get("name")]["digest"]
                entry["digest_status"] = "%s in the Job; the launch manifest records this digest" % NOT_CONFIRMED
            else:
                entry["digest"] = None
                entry["digest_status"] = NOT_CONFIRMED
            out.append(entry)
    return out


def build(resource, manifest=None, location=None, gate=None):
    """The stop record (not yet redacted: the caller redacts the whole record)."""
    job, tasks, pods = parts(resource)
    manifest = manifest or {}
    location = location or {}
    gate = gate or {}
    head = jobspec.head_task(job)
    code = manifest.get("code") or {}
    ckpt = manifest.get("checkpoint") or {}
    data = manifest.get("data") or {}
    step = gate.get("step")
    container_dir = None
    if location.get("container_root") and step is not None:
        container_dir = hydra.step_dir(location["container_root"], step)
    if step is None:
        stored = None  # no complete checkpoint: nothing to point at
    elif location.get("kind") == "s3":
        s3 = location.get("s3") or {}
        stored = "s3://%s/%s/%s" % (s3.get("bucket"), (s3.get("prefix") or "").strip("/"), hydra.step_name(step))
    elif location.get("kind") == "hostPath":
        stored = "node %s:%s/%s" % (location.get("node"), location.get("host_path"), hydra.step_name(step))
    else:
        stored = None
    no_manifest = "not recorded (%s)" % ("not in the launch manifest" if manifest else "no launch manifest given")
    return {
        "job_name": (job.get("metadata") or {}).get("name"),
        "backend": gate.get("backend") or ckpt.get("backend") or "unknown",
        "runner": gate.get("runner") or ckpt.get("runner") or "unknown",
        "global_step": step,
        "rlinf_code": {"repo": code.get("repo"), "ref": code.get("ref")} if code else no_manifest,
        "images": _images(job, manifest),
        "final_config": {
            "hydra": manifest.get("hydra") if manifest else no_manifest,
            "run_script_overrides": hydra_overrides(head.get("runScript")),
            "run_script": head.get("runScript"),
        },
        "data_version": {"location": data.get("location"), "version": data.get("version")} if data else no_manifest,
        "checkpoint": {
            "container_path": container_dir,
            "stored_at": stored,
            "storage_kind": location.get("kind"),
            "gate_checkpoint": gate.get("checkpoint"),
            "files": gate.get("files"),
            "bytes": gate.get("bytes"),
            "newest_mtime": gate.get("newest_mtime"),
        },
        "job_yaml": job,
        "tasks": [
            {
                "name": (t.get("metadata") or {}).get("name"),
                "namespace": (t.get("metadata") or {}).get("namespace"),
                "phase": (t.get("status") or {}).get("phase"),
                "observed_nodes": (t.get("status") or {}).get("observedNodes"),
            }
            for t in tasks
        ],
        "pods": [
            {
                "name": jobspec.pod_local_name(p),
                "node": (p.get("status") or {}).get("node"),
                "phase": (p.get("status") or {}).get("phase"),
            }
            for p in pods
        ],
    }


def collection_version(root=COLLECTION_ROOT):
    """The version of this collection: MANIFEST.json when installed, galaxy.yml in a checkout."""
    try:
        with open(os.path.join(root, "MANIFEST.json")) as fh:
            return json.load(fh)["collection_info"]["version"]
    except (OSError, ValueError, KeyError):
        pass
    try:
        with open(os.path.join(root, "galaxy.yml")) as fh:
            found = re.search(r"^version:\s*['\"]?([^'\"\s]+)", fh.read(), re.MULTILINE)
    except OSError:
        found = None
    return found.group(1) if found else "unknown"


def lost_work(head_log, step):
    """Steps the head logged after the recorded checkpoint (work a resume from it repeats).

    Counted after the last save line of that step, so that an earlier run of the same Job in the
    same log (a restart keeps a log shipper's file) does not count.
    """
    text = head_log or ""
    if step is None:
        return {"steps_after_checkpoint": None, "last_logged_step": None, "note": "no checkpoint step recorded"}
    anchors = list(re.finditer(r"Saving checkpoint at step %d\.|Global Step:\s*%d\b" % (int(step), int(step)), text))
    after = text[anchors[-1].start() :] if anchors else text
    seen = [int(m.group(1)) for m in STEP_LINE.finditer(after)]
    if not seen:
        return {"steps_after_checkpoint": None, "last_logged_step": None, "note": "no step lines in the head log"}
    last = max(seen)
    out = {"steps_after_checkpoint": max(0, last - int(step)), "last_logged_step": last}
    out.update(lost_seconds(continuity.parse_metrics(after), int(step), last))
    return out


def lost_seconds(tables, step, last):
    """Seconds of the steps after ``step`` up to ``last`` from RLinf's metric tables, and the continuity window.

    Each step's ``time/step`` when the table has it, else the table's mean ``Step Time`` times the steps.
    """
    window = {"first_step": step + 1, "last_step": last} if last > step else None
    lost = [tables[s] for s in range(step + 1, last + 1) if s in tables]
    per_step = [float(t["metrics"]["Time/step"]) for t in lost if "Time/step" in t["metrics"]]
    if lost and len(per_step) == len(lost) == last - step:
        return {
            "seconds_after_checkpoint": round(sum(per_step), 3),
            "seconds_from": "time/step of each step",
            "continuity_window": window,
        }
    means = [t["step_time"] for t in tables.values() if t.get("step_time")]
    if window and means:
        return {
            "seconds_after_checkpoint": round(means[-1] * (last - step), 3),
            "seconds_from": "mean Step Time x steps",
            "continuity_window": window,
        }
    return {
        "seconds_after_checkpoint": 0.0 if window is None else None,
        "seconds_from": "no step after the checkpoint" if window is None else "no metric table in the head log",
        "continuity_window": window,
    }


def outcome_fields(outcome, reason="", identity=None, selection=None, stop=None, step=None):
    """What a stop record says about the stop itself, so that a refused or failed stop never reads as one.

    ``stop`` is the rlark_stop_with_logs result (times, logs); ``selection`` the selectors/query/names used.
    """
    if outcome not in OUTCOMES:
        raise ValueError("unknown stop outcome %r" % (outcome,))
    stop = stop or {}
    return {
        "outcome": outcome,
        "reason": reason or DEFAULT_REASONS.get(outcome, "not given"),
        "identity": identity or {"username": "not checked"},
        "selection": selection or {},
        "collection_version": collection_version(),
        "stop_patched_at": stop.get("patched_at"),
        "pods_gone_at": stop.get("pods_gone_at"),
        "logs": {
            "last_exported_line_seen_at": stop.get("head_last_line_seen_at"),
            "per_pod_last_line_seen_at": stop.get("last_line_seen_at") or {},
            "read_errors": stop.get("log_errors") or [],
            "complete": bool(stop.get("logs_complete")),
            "exports": [
                dict({k: v for k, v in e.items() if k != "path"}, file="log-%s.log" % e.get("pod"))
                for e in stop.get("log_exports") or []
            ],
            "note": "read right before the stop patch; then followed until each container ended (kubeconfig source) "
            "or read on every poll until no Pod CR remained",
        },
        "lost_work": lost_work(stop.get("head_log"), step),
    }


__all__ = ["NOT_CONFIRMED", "OUTCOMES", "build", "collection_version", "lost_work", "outcome_fields"]
