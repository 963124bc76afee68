#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rlark_ckpt_gate
short_description: Decide whether an RLinf checkpoint is complete, on a node or in object storage
version_added: 0.1.0
description:
  - Judges every C(global_step_*) directory of an RLinf checkpoints root by the completeness rules of
    its runner and training backend (FSDP/FSDP2 DCP shards and C(.metadata), Megatron C(iter_*/mp_rank_*)
    and C(latest_checkpointed_iteration.txt), critic, dataloader and replay-buffer state) and says whether
    the chosen step is complete and nothing is still being written.
  - Reports missing entries, leftovers such as C(.metadata.tmp), shards beyond the world size (stale files
    of a larger earlier run are never counted), commit markers older than their data, tracker mismatches,
    truncated C(torch.save) payloads, writes newer than O(quiet_seconds) and world sizes that cannot be
    inferred unambiguously.
  - For a host directory (hostPath storage) run it on the node that holds the data; it needs only the
    Python standard library there. For object storage run it on the controller with O(s3); it lists the
    step prefixes with one delimiter listing, then each step it walks page by page (never only the first
    page), and needs boto3.
  - Never deletes anything and writes only the integrity manifest with O(integrity=write) and the step's backup
    with O(backup.make); C(changed) is true only when that manifest was written or files were copied.
author:
  - rlark.ops contributors (@rlark-ops)
options:
  path:
    description:
      - A checkpoints root (the C(.../checkpoints) directory that holds C(global_step_N) directories) or one
        C(global_step_N) directory on the host the module runs on.
      - Mutually exclusive with O(s3).
    type: path
  runner:
    description:
      - The RLinf runner that wrote the checkpoint. V(agent) has the layout of V(reasoning);
        V(offline), V(coding) and V(sft) share the V(embodied) layout apart from SFT data state.
      - V(auto) detects the layout family from the files of all steps (a step without a part that sibling
        steps have, such as C(data/data.pt), counts as cut off).
    type: str
    default: auto
    choices: [auto, embodied, offline, sft, reasoning, agent, coding, sac, dagger, iql]
  backend:
    description:
      - Training backend. V(megatron) accepts the torch and torch_dist formats (detected per step);
        V(megatron_torch_dist) requires torch_dist. V(fsdp) and V(fsdp2) share one layout.
      - V(auto) detects it per step.
    type: str
    default: auto
    choices: [auto, fsdp, fsdp2, megatron, megatron_torch_dist]
  actor_world_size:
    description:
      - Number of actor ranks (FSDP shard count). Inferred from the shards when unset; when they do not
        decide it (holes, groups that disagree) the gate asks for it instead of guessing.
    type: int
  tensor_parallel:
    description: Megatron tensor-parallel size; inferred from the C(mp_rank_*) directories when unset.
    type: int
  pipeline_parallel:
    description: Megatron pipeline-parallel size; inferred from the C(mp_rank_*) directories when unset.
    type: int
  expert_parallel:
    description:
      - Megatron expert-parallel size. A two-part name C(mp_rank_TT_NNN) can be a pipeline or an expert rank,
        so with such names pass O(pipeline_parallel) or O(expert_parallel).
    type: int
  critic:
    description:
      - Whether a Megatron critic (C(critic/)) is saved (reasoning/agent runners). Unset detects it from the
        steps of the root.
    type: bool
  full_weights:
    description:
      - Whether C(model_state_dict/full_weights.pt) is written (RLinf C(fsdp_config.save_full_model_weights)).
    type: bool
    default: true
  step:
    description:
      - The step to judge, as a number (V(40)) or RLinf's directory name (V(global_step_40)), or V(latest) for the
        newest complete step (when the newest step is partial the result says so in RV(findings)).
      - A step that does not exist fails with C(no step N under <root> (newest M)) and the steps present.
    type: str
    default: latest
  quiet_seconds:
    description:
      - The newest file of the step must be at least this old; a newer write means a save may be running.
    type: int
    default: 120
  verify_payloads:
    description:
      - Open the payloads of the chosen step(s) - the zip end-of-central-directory record of every C(torch.save)
        C(.pt) (a truncated one lacks it; no torch needed), the tracker contents (must be N), JSON markers (must
        parse) and the DCP C(.metadata).
      - The C(.metadata) is read without torch (an allow-list unpickler that runs no code); every C(*.distcp) it
        references must exist and be at least as long as the largest offset + length of its items, otherwise
        the step is incomplete (C(truncated-shard)). Formats it cannot read fall back to the presence rules with
        the warning C(dcp-metadata-unverified).
    type: bool
    default: true
  full_report:
    description:
      - Walk and judge every step and list them all in RV(steps).
      - By default the gate lists the step names once, walks the newest step and older ones only until one
        is complete (for O(step=latest)) or only the named step, and looks at the other steps shallowly (a few
        directory listings each) for the rules that depend on siblings. The verdict is the same; the cost no
        longer grows with the number of files in older steps.
    type: bool
    default: false
  integrity:
    description:
      - Content integrity of the chosen step, after it passed the gate.
      - V(write) hashes every file of the step (sha256, streamed, O(hash_workers) in parallel) and writes the
        manifest (relative path, size, sha256 of each file) to O(integrity_path); the manifest is also returned
        as the C(manifest) key of RV(integrity), so a role can keep it with the stop record. For object storage without
        O(integrity_path) it is only returned.
      - V(verify) reads the manifest (O(integrity_manifest), else O(integrity_path)) and fails the gate with one
        C(integrity-mismatch) finding per file that is missing, resized or has another sha256. Megatron-style
        C(integrity.json) files (a C(files) list or mapping with path, size and sha256) are read too.
      - Nothing is hashed when the chosen step is already incomplete.
    type: str
    choices: ['off', write, verify]
    default: 'off'
  integrity_path:
    description:
      - Where the integrity manifest is written or read, on the host that runs the module.
      - Default for a host directory is C(<checkpoints root>/rlark-integrity/global_step_N.json), next to the
        checkpoint (not a C(global_step_*) name, so RLinf's resume scan ignores it).
    type: path
  integrity_store:
    description:
      - Where O(integrity=write) keeps the manifest.
      - V(file) writes it to O(integrity_path) (by default next to the checkpoint; object storage without
        O(integrity_path) - only returned).
      - V(result) writes no file anywhere, on the node or in the bucket; the manifest is only returned as the
        C(manifest) key of RV(integrity), for the caller to keep (the guarded stop keeps it in its stop record with
        C(rlark_checkpoint_integrity_store=record)). Not together with O(integrity_path).
    type: str
    choices: [file, result]
    default: file
  integrity_manifest:
    description:
      - The manifest to verify, as data (for example the one a guarded stop returned and recorded); takes
        precedence over O(integrity_path).
    type: dict
  hash_workers:
    description: Threads that hash files in parallel; default the number of CPUs of the host.
    type: int
  fail_when_incomplete:
    description:
      - Fail the task with one paragraph naming the rule that failed and what to do when the chosen step is
        incomplete (or, when waiting, the wait timed out). With V(false) the verdict is only returned.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to keep judging, inside this one module run, until the wait condition holds (see O(after_step) and
        O(newest_complete)); the root is listed again every O(wait_sleep) seconds. V(0) judges once.
      - The result then carries RV(timed_out), RV(wait_for), RV(wait_log) (one line per change of what the gate
        sees), RV(waited_seconds) and RV(judged_at). Integrity (O(integrity)) is applied once, to the step the
        wait ended on.
      - While no C(global_step_*) exists yet the wait goes on; a wrong option fails at once.
    type: int
    default: 0
  wait_sleep:
    description:
      - Seconds between two judgements while waiting.
      - O(wait_timeout), O(wait_sleep) and O(after_step) are the collection's one wait vocabulary
        (C(plugins/module_utils/wait_options.py)); C(wait_interval) is the older name, still accepted.
    type: float
    default: 5.0
    aliases: [wait_interval]
  after_step:
    description:
      - Wait condition - a complete step newer than this step number (the next checkpoint after a stop was
        asked for). Setting it turns waiting on even with O(wait_timeout=0) (judged once against the condition).
    type: int
  newest_complete:
    description:
      - Wait condition - the newest step is complete and quiet (no save running or cut off), as a guarded stop
        needs. Used only when waiting (O(wait_timeout) above 0 or O(after_step) set).
    type: bool
    default: true
extends_documentation_fragment:
  - rlark.ops.s3
  - rlark.ops.backup
attributes:
  check_mode:
    support: full
    description: Check mode runs the same read-only checks and hashes, but writes no integrity manifest.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to diff.
  platform:
    support: full
    platforms: posix
    description: Runs on the node holding a hostPath directory, or on the controller for object storage.
requirements:
  - boto3 (only for O(s3), on the host that runs the module)
notes:
  - The rules follow what RLinf's runners and backends write on save; RLinf itself has no done marker, so the
    gate checks every required entry, the write order of the commit markers and, with O(verify_payloads), the
    payloads that a kill can truncate.
  - Only the step(s) considered for selection have their payloads opened; with O(full_report) other steps are
    judged on their listing and reported with verdict V(unverified) when their structure is complete.
seealso:
  - module: rlark.ops.rlark_job
"""

EXAMPLES = r"""
- name: Gate the newest checkpoint on the node that holds the hostPath
  rlark.ops.rlark_ckpt_gate:
    path: /data/rlinf/logs/run1/checkpoints
    runner: embodied
    backend: fsdp
    actor_world_size: 8
  delegate_to: a100-01

- name: Gate step 40 of a Megatron reasoning run in object storage, without failing the play
  rlark.ops.rlark_ckpt_gate:
    s3:
      bucket: checkpoints
      prefix: results/qwen-grpo/checkpoints
      endpoint_url: http://127.0.0.1:9000
    runner: reasoning
    backend: megatron
    tensor_parallel: 2
    pipeline_parallel: 2
    step: "40"
    fail_when_incomplete: false
  register: gate

- name: Copy step 40 to the backup bucket (resumable), then require that the backup holds it with the same sha256
  rlark.ops.rlark_ckpt_gate:
    path: /data/rlinf/logs/run1/checkpoints
    step: "40"
    integrity: write
    backup:
      s3:
        bucket: ckpt-backup
        prefix: run1/checkpoints
      make: true
      required: true
  delegate_to: a100-01

- name: Wait up to 30 minutes, in this one module run, for the next complete checkpoint after step 40
  rlark.ops.rlark_ckpt_gate:
    path: /data/rlinf/logs/run1/checkpoints
    after_step: 40
    wait_timeout: 1800
    wait_sleep: 30
  delegate_to: a100-01

- name: Show why it is incomplete
  ansible.builtin.debug:
    msg: "{{ gate.missing + (gate.findings | map(attribute='message') | list) }}"
  when: not gate.complete
"""

RETURN = r"""
complete:
  description: Whether the chosen step is complete by its rules, verified and quiet.
  returned: always
  type: bool
  sample: true
step:
  description: The chosen step number (for O(step=latest) the newest complete one, else the newest).
  returned: always
  type: int
  sample: 40
checkpoint:
  description: Path or C(s3://) URI of the chosen C(global_step_N) directory.
  returned: always
  type: str
  sample: /data/rlinf/logs/run1/checkpoints/global_step_40
runner:
  description: The runner given or detected (C(embodied) stands for the actor-only layout family).
  returned: always
  type: str
  sample: embodied
backend:
  description: The backend given or detected for the chosen step.
  returned: always
  type: str
  sample: fsdp
world_size:
  description: The actor world size used for the chosen step (given or inferred); null when unknown.
  returned: always
  type: int
  sample: 8
rule:
  description: The completeness rule applied to the chosen step.
  returned: always
  type: str
missing:
  description: Required entries of the chosen step that do not exist, relative to the step directory.
  returned: always
  type: list
  elements: str
  sample: [actor/dcp_checkpoint/.metadata]
findings:
  description: Findings (C(id), C(severity), C(path), C(message), C(hint)) of the chosen step and the root.
  returned: always
  type: list
  elements: dict
integrity_lists:
  description:
    - The Megatron C(integrity.json) files of the chosen step (relative to it). Every file one lists must exist
      with the listed size (else C(integrity-mismatch) naming the file); with O(integrity=verify) its sha256 is
      checked too. Paths in an C(integrity.json) are relative to the directory that holds it.
  returned: always
  type: list
  elements: str
  sample: [actor/iter_0000040/integrity.json]
timed_out:
  description: Whether the wait ended because O(wait_timeout) passed.
  returned: when waiting
  type: bool
wait_for:
  description: What the wait waited for, in words.
  returned: when waiting
  type: str
wait_log:
  description: One progress line per change of what the gate saw while waiting.
  returned: when waiting
  type: list
  elements: str
waited_seconds:
  description: How long the wait took.
  returned: when waiting
  type: float
judged_at:
  description: Epoch time of the last judgement.
  returned: when waiting
  type: float
files:
  description: Number of files (objects) in the chosen step.
  returned: always
  type: int
bytes:
  description: Total size of the chosen step in bytes.
  returned: always
  type: int
newest_mtime:
  description: Modification time (epoch seconds) of the newest file of the chosen step.
  returned: always
  type: float
latest_complete_step:
  description:
    - The newest step that is complete and verified; null when there is none.
    - For a named O(step) without O(full_report) only that step is walked, so this is the named step when it is
      complete and the newest one, else null.
  returned: always
  type: int
  sample: 40
newest_step:
  description: The newest C(global_step_N) found, complete or not.
  returned: always
  type: int
  sample: 50
backup:
  description:
    - With O(backup) - C(location) of the step's copy, C(kind) (V(dir) or V(s3)), C(required), C(verdict)
      (V(verified), V(failed), V(skipped) when the step is incomplete, V(would-make) in check mode with
      O(backup.make)), C(checked) (what was compared), C(files), C(bytes), C(findings) (C(backup-*)), and with
      O(backup.make) C(made) (C(status), C(copied), C(skipped), C(bytes_copied), C(seconds), C(progress) lines).
  returned: when O(backup) is set
  type: dict
  sample: {location: "s3://backups/run1/global_step_40/", kind: s3, required: true, verdict: verified,
           checked: "files, sizes, times, sha256", files: 12, bytes: 2147483648, findings: []}
integrity:
  description:
    - With O(integrity) other than V(off) - C(mode), C(path), C(status) (V(written), V(would-write) in check
      mode, V(returned), V(verified), V(failed) or V(skipped) with a C(reason)), C(files), C(bytes), C(seconds),
      and for V(write) the C(manifest) itself (C(schema), C(algorithm), C(files) with C(path), C(size), C(sha256)).
  returned: when O(integrity) is not V(off)
  type: dict
steps_found:
  description: Number of C(global_step_*) directories found.
  returned: always
  type: int
  sample: 25
steps:
  description:
    - Without O(full_report) only the steps that were walked (newest first down to the chosen one) and the
      unrecognized names (not walked, C(files) null); with it every directory.
    - Every C(global_step_*) directory found, oldest first, with its verdict (V(complete), V(incomplete),
      V(unverified) when its structure is complete but its payloads were not opened, V(unrecognized) for names
      such as C(global_step_40_bak)), the reasons, and the step's own C(findings) (with C(id) and
      C(severity), e.g. C(write-too-recent) on a step being saved).
  returned: always
  type: list
  elements: dict
  sample:
    - name: global_step_50
      step: 50
      verdict: incomplete
      reasons: ["missing 1 required entry: actor/dcp_checkpoint/.metadata"]
      findings: []
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate_task import gate_task
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.options import argument_spec


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        mutually_exclusive=[("path", "s3")],
        required_one_of=[("path", "s3")],
        supports_check_mode=True,
    )
    result = gate_task(module.params, check_mode=module.check_mode)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
