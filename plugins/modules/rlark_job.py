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

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.rlark.ops.plugins.module_utils.job_write import (
    JOB_WRITE_RULES,
    JOB_WRITE_SPEC,
    DefinitionError,
    job_write,
    option_failure,
)
from ansible_collections.rlark.ops.plugins.module_utils.module_options import argument_spec
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import api_client, call_counts


def main():
    module = AnsibleModule(argument_spec=argument_spec(**JOB_WRITE_SPEC), supports_check_mode=True, **JOB_WRITE_RULES)
    failure = option_failure(module.params)
    if failure:
        module.fail_json(msg=failure["msg"])
    try:
        with api_client(module, timeout=module.params["wait_timeout"]) as client:
            result = job_write(client, module.params, check_mode=module.check_mode, log=module.log)
    except DefinitionError as exc:
        if exc.library:
            exc.result["msg"] = missing_required_lib(exc.library)
        module.fail_json(**exc.result)
    for warning in result.pop("warnings"):
        module.warn(warning)
    module.exit_json(**result, **call_counts(client))


if __name__ == "__main__":
    main()
