#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_ckpt_wait
short_description: Wait until an RLinf checkpoint is complete by the rules of rlark_ckpt_gate, with progress lines
version_added: 0.1.0
description:
  - Runs the checkpoint gate of M(rlark.ops.rlark_ckpt_gate) again and again until a complete step newer than
    O(after_step) exists and (with O(newest_complete)) the newest step is complete and quiet, or
    O(wait_timeout) passes.
  - Prints one progress line per change of what it sees (newest step, newest complete step, why not yet) instead
    of retry lines, and returns the last gate result with RV(timed_out) and RV(wait_msg) naming what it waited for.
  - On a local connection the gate runs in the controller's worker process (one directory walk or bucket listing
    per poll); on any other connection every poll runs M(rlark.ops.rlark_ckpt_gate) on the target.
  - Never deletes anything and writes only the integrity manifest with O(integrity=write); C(changed) is true only
    when it wrote one.
attributes:
  check_mode:
    description: Reads only in check mode (O(integrity=write) hashes but writes no manifest).
  platform:
    description: The gate runs where the data is (the node for a host directory, the controller for S3).
options:
  path:
    description: Checkpoints root on the host (as for M(rlark.ops.rlark_ckpt_gate)). Mutually exclusive with O(s3).
    type: path
  s3:
    description: Checkpoints root in object storage (as for M(rlark.ops.rlark_ckpt_gate)).
    type: dict
  runner:
    description: RLinf runner (as for M(rlark.ops.rlark_ckpt_gate)).
    type: str
    default: auto
  backend:
    description: Training backend (as for M(rlark.ops.rlark_ckpt_gate)).
    type: str
    default: auto
  actor_world_size:
    description: Actor world size.
    type: int
  tensor_parallel:
    description: Megatron tensor parallel size.
    type: int
  pipeline_parallel:
    description: Megatron pipeline parallel size.
    type: int
  expert_parallel:
    description: Megatron expert parallel size.
    type: int
  critic:
    description: Whether a critic is saved.
    type: bool
  full_weights:
    description: Whether full weights are saved.
    type: bool
    default: true
  step:
    description: The step to judge (C(latest), a number or C(global_step_N)).
    type: str
    default: latest
  quiet_seconds:
    description: Seconds without writes before a step counts as complete.
    type: int
    default: 120
  verify_payloads:
    description: Open payloads (zip tails, trackers, DCP metadata) of the chosen step.
    type: bool
    default: true
  integrity:
    description:
      - Content integrity of the step the wait ended on, checked once after the wait (never on every poll), as
        O(rlark.ops.rlark_ckpt_gate#module:integrity) does it.
      - V(write) hashes every file of the step and writes the manifest; V(verify) compares the step with a manifest
        and makes the result incomplete with one C(integrity-mismatch) finding per differing file.
      - Nothing is hashed when the wait ended without a complete step.
    type: str
    choices: ['off', write, verify]
    default: 'off'
  integrity_path:
    description:
      - Where the manifest is written or read, on the host that runs the gate.
      - Default C(<checkpoints root>/rlark-integrity/global_step_N.json).
    type: path
  integrity_store:
    description:
      - Where O(integrity=write) keeps the manifest, as O(rlark.ops.rlark_ckpt_gate#module:integrity_store) does
        it - V(file) (O(integrity_path)) or V(result) (no file anywhere, only the C(manifest) key of RV(integrity)).
    type: str
    choices: [file, result]
    default: file
  integrity_manifest:
    description: The manifest to verify, as data (for example from a stop record); wins over O(integrity_path).
    type: dict
  hash_workers:
    description: Threads that hash files in parallel; default the number of CPUs.
    type: int
  fail_when_incomplete:
    description: Ignored; the wait reports instead of failing.
    type: bool
    default: true
  after_step:
    description:
      - Wait for a complete step newer than this one (V(-1) = any).
      - O(wait_timeout), O(wait_sleep) and O(after_step) are the collection's one wait vocabulary
        (C(plugins/module_utils/wait_options.py)); C(newer_than), C(timeout) and C(interval) are the older names,
        still accepted.
    type: int
    default: -1
    aliases: [newer_than]
  newest_complete:
    description: Also wait for the newest step to be the newest complete one (no save running or cut off).
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait; V(0) judges once.
    type: float
    default: 0
    aliases: [timeout]
  wait_sleep:
    description: Seconds between two polls.
    type: float
    default: 1.0
    aliases: [interval]
extends_documentation_fragment:
  - rlark.ops.controller_action
  - rlark.ops.backup
seealso:
  - module: rlark.ops.rlark_ckpt_gate
"""

EXAMPLES = r"""
- name: Wait for the next checkpoint after step 40
  rlark.ops.rlark_ckpt_wait:
    path: /data/rlinf/logs/run1/checkpoints
    after_step: 40
    wait_timeout: 3600
    wait_sleep: 0.5
  register: next_ckpt
"""

RETURN = r"""
timed_out:
  description: Whether O(wait_timeout) passed before the condition held.
  returned: always
  type: bool
wait_for:
  description: What was waited for, in words.
  returned: always
  type: str
wait_msg:
  description: Why the wait ended without the condition (what, how long, last state).
  returned: when the condition did not hold
  type: str
wait_log:
  description: The progress lines.
  returned: always
  type: list
  elements: str
waited_seconds:
  description: How long the wait took.
  returned: always
  type: float
judged_at:
  description: Epoch time of the last judgement.
  returned: always
  type: float
integrity:
  description: As returned by M(rlark.ops.rlark_ckpt_gate) (C(mode), C(path), C(status), C(files), C(manifest), ...).
  returned: when O(integrity) is not V(off) and the wait ended on a complete step
  type: dict
backup:
  description: As returned by M(rlark.ops.rlark_ckpt_gate) (C(location), C(verdict), C(checked), C(findings), C(made)).
  returned: when O(backup) is set and the wait ended on a complete step
  type: dict
complete:
  description: As returned by M(rlark.ops.rlark_ckpt_gate), with all its other return values.
  returned: always
  type: bool
"""
