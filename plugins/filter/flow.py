# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Data steps of the rlark.ops roles as filters (each ~ms on the controller instead of a module run).

Logic lives in module_utils (placement, checkpoint.location, verify, summary); these wrappers only turn
Ansible's objects (hostvars, registered loop results) into plain data and errors into filter errors.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.rlark.ops.plugins.module_utils import (
    placement,
    stop_record,
    summary,
    verify,
)
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint import location
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate_summary import summarize as gate_view
from ansible_collections.rlark.ops.plugins.module_utils.query import QueryError, plain, query

HOST_KEYS = ("rlark_node_name", "rlark_node_cluster", "rlark_node_root", "ansible_host")


def _hosts(hostvars):
    """Only the inventory keys the mapping needs, as plain data (hostvars is lazy and large)."""
    out = {}
    for host in list(hostvars or {}):
        hv = hostvars[host]
        out[str(host)] = {k: plain(hv.get(k)) for k in HOST_KEYS if hv.get(k) is not None}
    return out


def hostpath_plan(job, proof, hostvars, groups):
    return placement.hostpath_plan(plain(job), plain(proof), _hosts(hostvars), plain(dict(groups or {})))


def hostpath_results(plan, loop_results):
    """``loop_results`` is the ``results`` list of a raw task looped over ``plan.hosts``."""
    outputs = {}
    for r in loop_results or []:
        item = r.get("item") or {}
        outputs[item.get("host")] = {
            "stdout": r.get("stdout") or "",
            "rc": r.get("rc"),
            "msg": r.get("msg") or (r.get("stderr") or "").strip(),
        }
    return placement.hostpath_results(plain(plan), outputs)


def node_host(node, hostvars, groups):
    return placement.host_for_node(plain(node), _hosts(hostvars), plain(dict(groups or {})))


def checkpoint_location(resource, manifest=None, root=None, object_storage=None):
    return location.locate(plain(resource), plain(manifest), root or None, plain(object_storage))


def checkpoint_step_dir(container_root, step):
    return location.step_dir(container_root, step)


def without_resume_override(job):
    return location.without_resume_override(plain(job))


def hydra_overrides(script):
    return location.hydra_overrides(script)


def log_report(text, startup=None, failure=None, normal=None, live=None):
    return verify.log_report(text, plain(startup), plain(failure), plain(normal), plain(live))


def resume_report(text, resume_dir, step):
    try:
        return verify.resume_report(text, resume_dir, step)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("rlark.ops.resume_report: %s" % exc) from exc


def job_state(resource, proof=None, job_name=None):
    return verify.job_state(plain(resource), plain(proof), job_name)


def stop_summary(results):
    return summary.stop_summary(plain(results))


def signal_regexes(items):
    return verify.signal_regexes(plain(items))


def resume_patterns(resume_dir):
    return verify.resume_patterns(resume_dir)


def marker_report(markers, text, live=None):
    """The configured "uploads finished" markers: log regexes or ``jmespath:`` conditions that must hold."""
    report = verify.log_report(text, startup=plain(markers), live=plain(live))
    return {"ok": report["ok"], "seen": report["seen"], "missing": report["missing"], "errors": report["errors"]}


def gate_summary(result):
    return gate_view(plain(result))


def expected_nodes(profile):
    """Task name -> the admin's recorded global match list, from a deployment profile."""
    out = {}
    for role in (plain(profile) or {}).get("roles") or []:
        if isinstance(role, dict) and role.get("name") and role.get("global_matches") is not None:
            out[role["name"]] = [m.get("name") if isinstance(m, dict) else m for m in role["global_matches"]]
    return out


def pod_names(pods):
    """Data-plane pod names (``rlark.io/local-pod-name``) of Pod CRs."""
    out = []
    for pod in plain(pods) or []:
        name = ((pod.get("metadata") or {}).get("labels") or {}).get("rlark.io/local-pod-name")
        if name:
            out.append(name)
    return sorted(out)


def log_record_name(item):
    """``{key: pod, value: text}`` -> ``{key: "log-<pod>", value: text}`` for rlark_record ``files``."""
    return {"key": "log-%s" % item["key"], "value": item["value"]}


def select_jobs(resources, expression=""):
    """rlark_job_info resources chosen by a JMESPath expression over that list (names or items)."""
    resources = plain(resources) or []
    if not expression:
        return resources
    try:
        chosen = query(resources, expression)
    except QueryError as exc:
        raise AnsibleFilterError("rlark.ops.select_jobs: %s" % exc) from exc
    if chosen is None:
        return []
    if not isinstance(chosen, list):
        chosen = [chosen]
    names = set()
    for item in chosen:
        if isinstance(item, str):
            names.add(item)
        elif isinstance(item, dict):
            job = item.get("job") if isinstance(item.get("job"), dict) else item
            names.add((job.get("metadata") or {}).get("name"))
    return [r for r in resources if ((r.get("job") or {}).get("metadata") or {}).get("name") in names]


def collect_outcomes(hosts, hostvars):
    """Per-Job outcomes from the job hosts; a host that never reported counts as refused."""
    out = []
    for host in hosts or []:
        hv = hostvars[host]
        outcome = plain(hv.get("guarded_stop_outcome")) or {}
        if not outcome.get("outcome"):
            outcome = refusal(hv.get("rlark_stop_job") or host, "the checks did not finish (see the failed task above)")
        out.append(outcome)
    return out


def refusal(job, reason):
    return {"job": job, "outcome": "refused", "reason": reason}


def build_stop_record(resource, manifest=None, location=None, gate=None):
    return stop_record.build(plain(resource), plain(manifest), plain(location), plain(gate))


class FilterModule:
    def filters(self):
        return {
            "build_stop_record": build_stop_record,
            "collect_outcomes": collect_outcomes,
            "refusal": refusal,
            "select_jobs": select_jobs,
            "checkpoint_location": checkpoint_location,
            "expected_nodes": expected_nodes,
            "gate_summary": gate_summary,
            "log_record_name": log_record_name,
            "pod_names": pod_names,
            "marker_report": marker_report,
            "resume_patterns": resume_patterns,
            "signal_regexes": signal_regexes,
            "checkpoint_step_dir": checkpoint_step_dir,
            "hostpath_plan": hostpath_plan,
            "hostpath_results": hostpath_results,
            "hydra_overrides": hydra_overrides,
            "job_state": job_state,
            "log_report": log_report,
            "node_host": node_host,
            "resume_report": resume_report,
            "stop_summary": stop_summary,
            "without_resume_override": without_resume_override,
        }
