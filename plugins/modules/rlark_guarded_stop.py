#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_guarded_stop
short_description: Stop an RLark Job only at a complete checkpoint, as one crash-consistent transaction
version_added: 0.2.0
description:
  - The guarded stop of runbook 000 for one Job, in one call (the C(rlark.ops.guarded_stop) role wires it).
  - Checks first that O(records_dir) is writable and has room for the stop record and the logs (estimated from
    the log sizes), before anything else (findings C(records-unwritable), C(records-no-room)).
  - Gates the checkpoint on the task's target (delegate to the node that holds a hostPath checkpoint) as
    O(when) says, and judges the newest checkpoint and the O(done_markers) in the head log read right before
    the patch.
  - Writes the stop record with outcome C(pending) durably (file and directory fsync) before it sends the stop
    patch (C(spec.stopped) and the annotation C(rlark.ops/guarded-stop-run) naming O(run_id), with a
    resourceVersion precondition), then tails the logs until no Pod CR remains (with O(log_source=kubeconfig)
    each pod's log is followed to its container's end, as M(rlark.ops.rlark_stop_with_logs) says) and replaces
    the record with its outcome C(stopped), C(failed) (pods still there after O(wait_timeout)) or
    C(stopped-unconfirmed) (the API server or the records filesystem failed after the patch). A failure after the
    patch is never C(refused).
  - On a Job that is already stopped, completes the record that the run named by its annotation left
    C(pending) or C(stopped-unconfirmed) (outcome C(stopped), C(recovered) in RV(outcome)); a complete record or a Job
    stopped by someone else is C(already stopped).
  - One deadline (O(deadline)) bounds everything from the patch to the record, API retries included, with a
    progress line while the API server does not answer.
extends_documentation_fragment:
  - rlark.ops.controller_action
  - rlark.ops.auth
  - rlark.ops.log_source
attributes:
  check_mode:
    description: Gates and judges (no integrity manifest written), writes no record, sends no patch; the outcome is
      C(would stop) or C(refused) with a reason starting "would refuse".
  platform:
    description: Runs on the controller; the checkpoint gate runs on the task's target.
options:
  name:
    description: Name of the Job.
    type: str
    required: true
  resource:
    description:
      - The M(rlark.ops.rlark_job_info) result item of the Job (C(job), C(tasks), C(pods)); empty when it does not
        exist (refused with C(job-not-found)). A Succeeded or Failed Job that is not stopped is refused
        (C(job-terminal-phase)), since RLark ignores a stop of it.
    type: dict
    default: {}
  run_id:
    description:
      - The run id of this playbook run (C(rlark_run_id)); names the record directory and the annotation.
      - A new one (C(<UTC stamp>-guarded-stop-<suffix>)) when not given.
    type: str
  records_dir:
    description: Records root (C(rlark_records_dir)).
    type: path
    required: true
  records_mode:
    description: File mode of the records (C(rlark_records_mode)), default C(0640).
    type: raw
  gate:
    description:
      - The M(rlark.ops.rlark_ckpt_wait) options for the checkpoint location (the C(checkpoint_gate) role's
        C(options.yml) builds them); the wait options are set from O(when).
      - Empty when the checkpoint cannot be located (O(location) says why); the stop is then refused.
    type: dict
    default: {}
  when:
    description: C(now) (the newest checkpoint must be complete) or C(next_checkpoint) (wait for the next complete one).
    type: str
    default: now
    choices: [now, next_checkpoint]
  save_window_seconds:
    description:
      - At C(now), keep re-judging up to this long for a moment between two saves (C(rlark_save_window_seconds)).
    type: float
    default: 0
  next_checkpoint_wait_timeout:
    description:
      - At C(next_checkpoint), how long to wait for it (C(rlark_next_checkpoint_wait_timeout)).
      - The older name C(next_checkpoint_timeout) is an alias.
    type: float
    default: 3600
    aliases: [next_checkpoint_timeout]
  next_checkpoint_wait_sleep:
    description:
      - At C(next_checkpoint), seconds between two looks.
      - The older name C(next_checkpoint_poll) is an alias.
    type: float
    default: 0.25
    aliases: [next_checkpoint_poll]
  done_markers:
    description: '"Uploads finished" markers: log regexes or C(jmespath:) conditions over C({job, tasks, pods}).'
    type: list
    elements: raw
    default: []
  accept_truncated_logs:
    description: Stop even when a log export is truncated (C(rlark_accept_truncated_logs)).
    type: bool
    default: false
  manifest:
    description: The launch manifest (code ref, data version, image digests) for the record.
    type: dict
    default: {}
  location:
    description: Where the checkpoints live (the C(rlark.ops.checkpoint_location) filter's result).
    type: dict
    default: {}
  selection:
    description: What selected the Job (names, selectors, query), for the record.
    type: dict
    default: {}
  identity:
    description: The API identity (C(username), C(groups)) from M(rlark.ops.rlark_access_check).
    type: dict
    default: {}
  wait:
    description: Wait until every Task has replicas 0 and no Pod CR remains.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for the pods to go (also bounded by O(deadline)).
    type: float
    default: 600
  wait_sleep:
    description: Seconds between two polls of the wait.
    type: float
    default: 1.0
  deadline:
    description: Seconds from the pending record to the final record, API retries included (C(rlark_stop_deadline)).
    type: float
    default: 900
seealso:
  - module: rlark.ops.rlark_ckpt_gate
  - module: rlark.ops.rlark_stop_with_logs
"""

EXAMPLES = r"""
- name: Guarded stop of a Job whose checkpoint lies on a node
  rlark.ops.rlark_guarded_stop:
    name: ppo-demo
    resource: "{{ info.resources[0] }}"
    run_id: "{{ rlark_run_id }}"
    records_dir: /srv/rlark-records
    gate: {path: /data/ckpt/ppo-demo/checkpoints, step: latest}
    logs_dir: /srv/rlark-logs
  delegate_to: gpu-node-1
  register: stopped
"""

RETURN = r"""
outcome:
  description:
    - C(job), C(outcome) (C(stopped), C(already stopped), C(refused), C(failed), C(stopped-unconfirmed),
      C(would stop)), C(reason), C(step), C(checkpoint), C(record) (the stop record's path), C(identity),
      C(findings); C(recovered) when this run completed an earlier run's record.
  returned: always
  type: dict
gate:
  description: The last checkpoint gate result (as M(rlark.ops.rlark_ckpt_wait) returns it).
  returned: when the gate ran
  type: dict
stop:
  description:
    - The transaction's times (C(verdict_at), C(pending_at), C(patched_at), C(pods_gone_at)), run id and wait log.
  returned: when a stop was attempted
  type: dict
findings:
  description: The findings that refused the stop (ids in docs/findings.md).
  returned: always
  type: list
  elements: dict
"""
