#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_job
short_description: Create, stop, start, copy and delete RLark Jobs safely
version_added: 0.1.0
description:
  - Manages one RLark C(rlinf.io/v1alpha1) Job with guarded, minimal writes.
  - O(state=present) creates the Job when it is absent. When it exists, the normalised spec is compared; a change
    of the task set or of a C(nodeSelector) is refused (RLark would orphan Tasks and workloads), other differences
    are applied only with O(update=true), and C(spec.stopped) is never changed as a side effect.
  - O(state=stopped) and O(state=started) send a JSON merge patch of C(spec.stopped) alone with a resourceVersion
    precondition; a conflict re-reads the Job and decides again. Succeeded and Failed Jobs are refused because
    RLark ignores them.
  - Before a create or update, every template's C(nodeSelector) is resolved the way RLark resolves it (first comma
    value of each key, untrimmed, against the Node CRs of every namespace). A value with whitespace around it
    (C(selector-whitespace)) or a selector matching Nodes in more than one cluster (C(selector-multi-cluster)) is
    refused, because RLark would put the Task in C(default) or create one Task in each cluster.
  - An update that changes replicas warns (C(job-update-stale-annotations)). RLark rewrites a Task's ray
    annotations only when that Task's spec changes, so the others keep stale totals and rank starts until a stop
    and start, or a new Job.
  - Waits key Tasks by namespace and name. A Task name in two namespaces (C(task-duplicate-namespaces)), or for
    V(started) a Task in C(default) (C(task-default-namespace)), fails the wait at once instead of timing out.
  - O(state=absent) deletes the Job with background propagation, refusing while agent-created PVCs would be
    deleted with it unless O(allow_pvc_deletion=true). Never foreground propagation, because RLark's controller
    re-creates the Tasks of a Job being deleted, so a foreground deletion never finishes.
  - O(copy_from) creates a new Job named O(name) from the full stored spec of another Job, every pod field kept,
    optionally resuming from a checkpoint with O(resume_dir). The source Job is never modified.
author:
  - rlark.ops contributors (@rlark-ops)
extends_documentation_fragment:
  - rlark.ops.auth
  - rlark.ops.auth.writes
attributes:
  check_mode:
    support: full
    description: Writes are sent as a server-side dry run (C(dryRun=All)); nothing is stored and no wait happens.
  diff_mode:
    support: full
    description: Shows the Job before and after, without resourceVersion, generation, managedFields and status.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller or any host that can reach the API server.
options:
  state:
    description:
      - V(present) creates the Job or checks (and with O(update), patches) its spec.
      - V(stopped) and V(started) set C(spec.stopped) only.
      - V(absent) deletes the Job.
    type: str
    choices: [present, stopped, started, absent]
    default: present
  name:
    description:
      - Name of the Job. Required unless O(definition) or O(src) gives C(metadata.name).
      - With O(copy_from), the name of the new Job.
    type: str
  definition:
    description:
      - The Job as a dictionary or a YAML/JSON string (C(apiVersion) C(rlinf.io/v1alpha1), C(kind) C(Job)).
      - Only with O(state=present). Mutually exclusive with O(src) and O(copy_from).
    type: raw
    aliases: [resource_definition]
  src:
    description:
      - Path to a YAML or JSON file holding the Job. Only with O(state=present).
    type: path
  update:
    description:
      - With O(state=present) and an existing Job whose spec differs, apply the difference as a merge patch.
      - Task-set and nodeSelector changes are refused even then; C(spec.stopped) is never touched.
    type: bool
    default: false
  copy_from:
    description:
      - Name of an existing Job to copy into a new Job named O(name) (with O(state=present)).
      - Server metadata, status and the C(rlinf.io/workflow) label are stripped; C(spec.stopped) is set from
        O(copy_stopped).
    type: str
  copy_stopped:
    description:
      - The C(spec.stopped) value of a copy made with O(copy_from).
    type: bool
    default: false
  resume_dir:
    description:
      - With O(copy_from), the RLinf checkpoint directory to resume from, ending in C(global_step_N) without a
        trailing slash.
      - It is passed as C(++runner.resume_dir=<dir>) in the head task's C(runScript), replacing any earlier
        C(runner.resume_dir) override, so it works whether or not the training config declares the key.
      - The copy also writes to a directory of its own, never into the source's checkpoints - the Hydra key that
        forms its checkpoint root (C(runner.logger.experiment_name), or C(runner.experiment_name) when the root is
        C(runner.output_dir)/C(runner.experiment_name)) is set to O(name). A run script that names no
        C(runner.logger.log_path) or C(runner.output_dir) is refused (C(resume-output-unknown)).
      - The copy carries label and annotation C(rlark.ops/resumed-from) (the source's name) and annotations
        C(rlark.ops/resume-step) and C(rlark.ops/resume-dir).
    type: str
  node_selector:
    description:
      - With O(copy_from) and O(resume_dir), the C(nodeSelector) of the copy's head task, replacing the source's.
        A resume from the backup of a hostPath checkpoint runs on another approved node, for example
        C(kubernetes.io/hostname=dual-01). The source Job is not changed.
    type: dict
  allow_pvc_deletion:
    description:
      - Allow O(state=absent) to delete a Job whose PVC volumes the agent created (they are deleted with it).
    type: bool
    default: false
  wait:
    description:
      - Wait for the result. V(stopped) waits until every Task has replicas 0 and no Pod CR of the Job remains;
        V(started) until every Task is Running; V(absent) until no Task of the Job remains; V(present) (when
        created) until every Task is Running unless the Job is stopped.
    type: bool
    default: false
  wait_for:
    description:
      - After the action (and after the O(wait) condition, when set), wait until the Job's C(status.phase) is this
        phase, within O(wait_timeout). For example V(Running) after a create or a start, V(Stopped) after a stop.
      - RLark reports V(Stopped) before the pods are gone; use O(wait=true) for "no Pod CR left".
      - A Job that ends V(Succeeded) or V(Failed) instead fails the task at once (RLark never changes those phases).
      - Not with O(state=absent); V(Stopped) only with O(state=stopped) or a stopped O(state=present) Job.
    type: str
    choices: [Pending, Running, Stopped, Succeeded, Failed]
  wait_timeout:
    description:
      - Seconds to wait; also the time budget for retrying API calls.
      - A wait that times out fails the task with finding C(wait-timeout); the task still reports C(changed=true)
        when the create, update, stop, start or delete before the wait was made.
    type: int
    default: 300
  wait_sleep:
    description:
      - Seconds between two polls while waiting.
    type: int
    default: 2
notes:
  - Pod CRs are read only when they tell something. Without O(wait), V(stopped) and V(started) return no RV(pods)
    (stop and start each take at most three API calls).
seealso:
  - module: rlark.ops.rlark_job_info
  - module: rlark.ops.rlark_node_match
"""

EXAMPLES = r"""
- name: Create the Job (check mode runs it as a server-side dry run)
  rlark.ops.rlark_job:
    src: files/ppo-demo.yml
    kubeconfig: ~/.kube/rlark

- name: Stop it and wait until every pod is gone
  rlark.ops.rlark_job:
    name: ppo-demo
    state: stopped
    wait: true
    wait_timeout: 600

- name: Start it again and wait until RLark reports it Running
  rlark.ops.rlark_job:
    name: ppo-demo
    state: started
    wait_for: Running
    wait_timeout: 300

- name: Resume from a checkpoint in a new Job
  rlark.ops.rlark_job:
    copy_from: ppo-demo
    name: ppo-demo-r1
    resume_dir: /data/rlinf/logs/ppo/checkpoints/global_step_200

- name: Delete a Job whose PVCs are backed by a Retain storage class
  rlark.ops.rlark_job:
    name: ppo-demo
    state: absent
    allow_pvc_deletion: true
    wait: true
"""

RETURN = r"""
job:
  description:
    - The Job after the action (the dry-run result in check mode); empty when absent.
    - Secret-looking values (env passwords, tokens, keys, webhook URLs) are masked here, in RV(tasks), RV(pods) and
      in the diff; names, labels and states are not.
  returned: always
  type: dict
tasks:
  description: The Tasks labelled C(rlinf.io/job=<name>) in every namespace, orphaned ones included.
  returned: always
  type: list
  elements: dict
pods:
  description: The Pod CRs of those Tasks (label C(rlark.io/task-name)).
  returned: always
  type: list
  elements: dict
action:
  description: What happened.
  returned: always
  type: str
  sample: stopped
diff:
  description: The Job before and after, without server bookkeeping.
  returned: always
  type: dict
findings:
  description: Warnings and, on refusal, errors, each C({id, severity, path, message, hint}).
  returned: always
  type: list
  elements: dict
wait_log:
  description: Progress lines of the wait, one per change of the observed state.
  returned: always
  type: list
  elements: str
api_calls:
  description: Number of HTTP requests sent to the API server, retries included.
  returned: always
  type: int
api_retries:
  description: How many of those requests were retries (429, 5xx or a dropped connection).
  returned: always
  type: int
  sample: 3
status:
  description: The parsed API Status of a failed request (code, reason, message, causes).
  returned: on API failure
  type: dict
"""

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.findings import WARNING, finding, has_errors
from ansible_collections.rlark.ops.plugins.module_utils.job_diff import make_diff
from ansible_collections.rlark.ops.plugins.module_utils.jobs import (
    Refused,
    absent_check,
    delete_job,
    ensure_present,
    get_job,
    list_tasks,
    phase_check,
    read_tree,
    set_stopped,
    started_check,
    stopped_check,
)
from ansible_collections.rlark.ops.plugins.module_utils.kube import KubeError
from ansible_collections.rlark.ops.plugins.module_utils.module_options import argument_spec
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import api_client, call_counts
from ansible_collections.rlark.ops.plugins.module_utils.naming import name_findings
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact_result
from ansible_collections.rlark.ops.plugins.module_utils.resume import copy_job
from ansible_collections.rlark.ops.plugins.module_utils.wait_options import wait_spec
from ansible_collections.rlark.ops.plugins.module_utils.waiter import Waiter, WaitTimeout
from ansible_collections.rlark.ops.plugins.module_utils.write_checks import check_before_write, replica_change_findings

try:
    import yaml
except ImportError:
    yaml = None
    YAML_IMPORT_ERROR = traceback.format_exc()
else:
    YAML_IMPORT_ERROR = None


def load_definition(module):
    definition = module.params["definition"]
    if module.params["src"]:
        if yaml is None:
            module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
        try:
            with open(module.params["src"]) as handle:
                definition = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError) as exc:
            module.fail_json(msg="Cannot read the Job from %s: %s." % (module.params["src"], exc))
    elif isinstance(definition, str):
        if yaml is None:
            module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
        definition = yaml.safe_load(definition)
    if not isinstance(definition, dict):
        module.fail_json(msg="The Job definition must be a single YAML/JSON object.")
    found = []
    if definition.get("apiVersion") != jobspec.API_VERSION or definition.get("kind") != jobspec.KIND:
        found.append(
            finding(
                "job-kind",
                "The definition is %s/%s, not %s/%s."
                % (definition.get("apiVersion"), definition.get("kind"), jobspec.API_VERSION, jobspec.KIND),
                path="kind",
            )
        )
    meta = definition.setdefault("metadata", {})
    name = module.params["name"]
    if name and meta.get("name") and meta["name"] != name:
        found.append(finding("job-name-mismatch", "name %r differs from metadata.name %r." % (name, meta["name"])))
    meta.setdefault("name", name)
    found.extend(name_findings(meta.get("name"), [t.get("name") for t in jobspec.tasks(definition)]))
    if has_errors(found):
        raise Refused("The Job definition is not usable.", found)
    return definition


def wait_for(module, client, state, name, job):
    if not module.params["wait"] or module.check_mode:
        return None, []
    if state == "stopped" or (state == "present" and (job.get("spec") or {}).get("stopped")):
        check, what = stopped_check(client, name), "Job %s to stop (replicas 0, no Pod CR left)" % name
    elif state in ("started", "present"):
        check, what = started_check(client, name), "every Task of Job %s to be Running" % name
    else:
        check, what = absent_check(client, name), "Job %s and its Tasks to be deleted" % name
    waiter = Waiter(module.params["wait_timeout"], interval=module.params["wait_sleep"], progress=module.log)
    try:
        return waiter.wait(check, what), waiter.log
    except WaitTimeout as exc:
        raise Refused(str(exc), [finding("wait-timeout", str(exc), path="wait_timeout")]) from None


def wait_phase(module, client, name):
    """Wait until the Job's phase is ``wait_for``; returns (tree, wait_log)."""
    phase = module.params["wait_for"]
    waiter = Waiter(module.params["wait_timeout"], interval=module.params["wait_sleep"], progress=module.log)
    try:
        state = waiter.wait(phase_check(client, name, phase), "Job %s to be %s" % (name, phase))
    except WaitTimeout as exc:
        raise Refused(str(exc), [finding("wait-timeout", str(exc), path="wait_timeout")]) from None
    return read_tree(client, name, job=state["job"]), waiter.log


def run(module, client):
    p = module.params
    state = p["state"]
    findings = []
    if p["copy_from"]:
        source = get_job(client, p["copy_from"])
        if source is None:
            raise Refused(
                "Cannot copy.",
                [finding("job-not-found", "Source Job %r does not exist." % p["copy_from"], path="copy_from")],
            )
        desired, found = copy_job(
            source,
            p["name"],
            stopped=p["copy_stopped"],
            resume_dir=p["resume_dir"],
            head_node_selector=p["node_selector"],
        )
        if has_errors(found):
            raise Refused("Refusing to copy Job %r." % p["copy_from"], found)
        findings.extend(found)
        check = check_before_write(client, desired)
        outcome = ensure_present(client, desired, update=False, check_mode=module.check_mode, before_write=check)
        name = p["name"]
    elif state == "present":
        desired = load_definition(module)
        name = desired["metadata"]["name"]
        check = check_before_write(client, desired)
        outcome = ensure_present(client, desired, update=p["update"], check_mode=module.check_mode, before_write=check)
        if outcome["action"] == "updated":
            findings.extend(replica_change_findings(outcome["before"], desired))
    elif state in ("stopped", "started"):
        name = p["name"]
        outcome = set_stopped(client, name, state == "stopped", check_mode=module.check_mode)
    else:
        name = p["name"]
        outcome = delete_job(client, name, allow_pvc_deletion=p["allow_pvc_deletion"], check_mode=module.check_mode)
    findings.extend(outcome.get("findings") or [])
    job = outcome["job"]
    try:
        tree, wait_log = (
            wait_for(module, client, state, name, job or {}) if outcome["changed"] or state != "absent" else (None, [])
        )
        if p["wait_for"] and not module.check_mode:
            tree, phase_log = wait_phase(module, client, name)
            wait_log = wait_log + phase_log
    except (Refused, KubeError) as exc:
        # The write is done even when the wait after it fails: the failed task still reports it.
        exc.changed = outcome["changed"]
        raise
    if state == "absent":
        after = None
        if tree is None:
            # Deleted without wait: the Tasks are still terminating; show them.
            remaining = outcome["changed"] and not module.check_mode
            tree = {"job": None, "tasks": list_tasks(client, name) if remaining else [], "pods": []}
    elif tree is None:
        if module.check_mode and outcome["action"] == "created":
            tree = {"job": job, "tasks": [], "pods": []}
        else:
            # A stop/start without wait skips the Pod CRs: they are still going away or coming up.
            with_pods = state not in ("stopped", "started") or outcome["action"] == "unchanged"
            tree = read_tree(client, name, with_pods=with_pods, job=job)
        after = tree["job"]
    else:
        after = tree["job"] or job
    return dict(
        changed=outcome["changed"],
        action=outcome["action"],
        job=after or {},
        tasks=tree["tasks"],
        pods=tree["pods"],
        diff=make_diff(outcome["before"], after),
        findings=findings,
        wait_log=wait_log,
    )


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(
            state=dict(type="str", default="present", choices=["present", "stopped", "started", "absent"]),
            name=dict(type="str"),
            definition=dict(type="raw", aliases=["resource_definition"]),
            src=dict(type="path"),
            update=dict(type="bool", default=False),
            copy_from=dict(type="str"),
            copy_stopped=dict(type="bool", default=False),
            node_selector=dict(type="dict"),
            resume_dir=dict(type="str"),
            allow_pvc_deletion=dict(type="bool", default=False),
            wait=dict(type="bool", default=False),
            wait_for=dict(type="str", choices=["Pending", "Running", "Stopped", "Succeeded", "Failed"]),
            **wait_spec(300, 2, timeout_type="int", sleep_type="int"),
        ),
        mutually_exclusive=[("definition", "src", "copy_from")],
        required_if=[
            ("state", "stopped", ("name",)),
            ("state", "started", ("name",)),
            ("state", "absent", ("name",)),
            ("state", "present", ("definition", "src", "copy_from"), True),
        ],
        required_by={"copy_from": "name", "resume_dir": "copy_from", "node_selector": "resume_dir"},
        supports_check_mode=True,
    )
    if module.params["copy_from"] and module.params["state"] != "present":
        module.fail_json(msg="copy_from needs state=present.")
    phase, state = module.params["wait_for"], module.params["state"]
    if phase and (state == "absent" or ((state == "stopped") != (phase == "Stopped") and state != "present")):
        module.fail_json(
            msg="wait_for=%s cannot be reached with state=%s: wait for Stopped after state=stopped, for another phase "
            "after state=started or present, and for none after state=absent." % (phase, state)
        )
    with api_client(module, timeout=module.params["wait_timeout"]) as client:
        result = run(module, client)
    for item in result["findings"]:
        if item["severity"] == WARNING:
            module.warn("%s: %s" % (item["id"], item["message"]))
    module.exit_json(**redact_result(result), **call_counts(client))


if __name__ == "__main__":
    main()
