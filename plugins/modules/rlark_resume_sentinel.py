#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_resume_sentinel
short_description: Stop a resumed RLark Job that silently restarted from scratch, before its first checkpoint save
version_added: 0.1.0
description:
  - Reads the head log of the NEW Job created by a resume from its start and judges its first logged training step
    against checkpoint step O(step) (N) and the old run's metrics.
  - The old run's metrics come from its newest stop record under O(records_dir) (C(<original>/<run>/stop.yml) and
    its C(log-<head pod>.log) export, written by the guarded stop); RLinf's per-step metric tables are parsed by the
    collection's one parser (C(module_utils/continuity.py)).
  - A step counter that starts below N+1, or metrics at step N+1 equal to the old run's step 1 and not its step N+1
    (a fresh start under the right number), is finding C(resume-restarted-from-scratch) (error). The new Job is
    then stopped at once with the guarded stop patch (C(spec.stopped) alone, as
    M(rlark.ops.rlark_job) O(rlark.ops.rlark_job#module:state=stopped) does), before its first checkpoint save.
  - The original Job O(original) is never patched; naming it as O(name) fails.
  - A scratch or load-failure line of RLinf, or a first step that is N+1 with other metrics, is left to the
    verification (M(rlark.ops.rlark_job_running) and M(rlark.ops.rlark_verify_decision) in the C(rlark.ops.verify)
    role), which also judges the whole continuity window.
  - With O(log_source=kubeconfig) and no O(clusters), the head pod is read from the cluster its Task runs in (read
    from the Job's Tasks until the controller placed them).
  - Runs entirely in an action plugin on the controller, where the log sources are read.
extends_documentation_fragment:
  - rlark.ops.controller_action
  - rlark.ops.auth
  - rlark.ops.log_source
attributes:
  check_mode:
    description: Reads the old run's record only; nothing is watched or stopped.
options:
  name:
    description: Name of the new (resumed) Job to watch and, on a restart, stop.
    type: str
    required: true
  original:
    description: Name of the original Job (whose stop record holds the old run's log); never patched.
    type: str
    required: true
  step:
    description: The checkpoint step N the new Job was resumed from; its first step must be N+1.
    type: int
    required: true
  resume_dir:
    description: The C(runner.resume_dir) of the new Job (the checkpoint directory it must load).
    type: str
    required: true
  head_task:
    description: Name of the new Job's head task template; its head pod is C(<name>-<head_task>-0).
    type: str
    required: true
  original_head_task:
    description: Head task of the original Job when it differs from O(head_task).
    type: str
  records_dir:
    description: The records directory (C(rlark_records_dir)) holding the original's stop records.
    type: path
    required: true
  clusters:
    description:
      - Pod or Task object name to the data-plane cluster ID it runs in (P(rlark.ops.log_clusters#filter)); with
        O(log_source=kubeconfig) and none given, read from the Job's Tasks.
    type: dict
    default: {}
  namespace:
    description: Namespace of the workloads in the data-plane cluster (default C(rlark-system)).
    type: str
  wait_timeout:
    description:
      - Seconds to wait for the first logged step; without one the sentinel decides nothing.
      - O(wait_timeout) and O(wait_sleep) are the collection's one wait vocabulary
        (C(plugins/module_utils/wait_options.py)); C(timeout) and C(interval) are the older names, still accepted.
    type: float
    default: 180
    aliases: [timeout]
  wait_sleep:
    description: Seconds between two log reads (the sentinel must decide within a training step).
    type: float
    default: 0.25
    aliases: [interval]
seealso:
  - module: rlark.ops.rlark_job
  - module: rlark.ops.rlark_verify_decision
"""

EXAMPLES = r"""
- name: Stop the resumed Job if it restarted from scratch
  rlark.ops.rlark_resume_sentinel:
    name: ppo-demo-r40
    original: ppo-demo
    step: 40
    resume_dir: /data/rlinf/logs/ppo-demo/checkpoints/global_step_40
    head_task: actor
    records_dir: rlark-records
    logs_dir: /srv/rlark-logs
  register: sentinel

- name: Fail when it did
  ansible.builtin.fail:
    msg: "{{ sentinel.findings | rlark.ops.findings_table('resume sentinel') }}"
  when: sentinel.stopped
"""

RETURN = r"""
stopped:
  description: The new Job was found restarted and stopped (C(changed) says whether this call patched it).
  returned: always
  type: bool
decided:
  description: A first step was logged and judged (false when O(wait_timeout) passed first).
  returned: always
  type: bool
timed_out:
  description: O(wait_timeout) passed before a decision.
  returned: when watched
  type: bool
first_step:
  description: The first step counter the new Job logged (null when none).
  returned: when watched
  type: int
expected_first_step:
  description: N+1.
  returned: when watched
  type: int
first_step_seen_after_seconds:
  description: Seconds from the start of the watch to the first logged step.
  returned: when watched
  type: float
stopped_after_seconds:
  description: Seconds from the start of the watch to the answered stop patch.
  returned: when stopped
  type: float
saved_before_decision:
  description: The new Job's log already had a checkpoint save line when the decision was made.
  returned: when watched
  type: bool
findings:
  description: C(resume-restarted-from-scratch) when the Job was stopped, else empty.
  returned: always
  type: list
  elements: dict
original_job:
  description: The original Job (never patched).
  returned: when watched
  type: str
record:
  description: What a record of the decision keeps (every other return value; C(old_run) with the number of steps).
  returned: always
  type: dict
old_run:
  description:
    - The old run's reference, C(record) and C(file) (its stop record and head-log export, null when none),
      C(steps) (the parsed metric tables, C([{step, metrics, step_time, max_steps}])) and C(last_step).
  returned: always
  type: dict
"""
