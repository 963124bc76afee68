#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_record
short_description: Write a redacted team record (preflight, run, stop, resume, verify, logs)
version_added: 0.1.0
description:
  - Writes O(data) as YAML to C(<records_dir>/<job>/<run id>/<kind>.yml) on the controller, with secrets masked
    by key name and by value shape, C(managedFields) stripped, atomically, never overwriting an existing record.
  - Every record starts with a header naming the record kind, the Job, the run id, the time (ISO-8601 UTC), the
    collection version, the acting identity (controller user and host, and the API username and groups from the variable
    C(rlark_api_identity) that the playbooks set from a C(SelfSubjectReview)) and the O(outcome).
  - All records of one playbook run share one run id, so they land in one directory per Job; the playbooks set
    the variable C(rlark_run_id) once at their start and this plugin uses it when O(run_id) is not given.
  - C(<records_dir>/_index/<job>.yml) lists every run of the Job with the outcome of each record.
  - Runs entirely in an action plugin on the controller (no module is sent to any host).
  - Records are audit output, not managed state, so the task never reports C(changed); in check mode nothing is
    written.
extends_documentation_fragment:
  - rlark.ops.controller_action
attributes:
  check_mode:
    description: Writes nothing in check mode.
options:
  records_dir:
    description: Root of the records.
    type: path
    required: true
  job:
    description: Job name (the record's directory).
    type: str
    required: true
  kind:
    description: Record kind, the file name without C(.yml).
    type: str
    required: true
  data:
    description: The record's content.
    type: raw
    required: true
  files:
    description: More records of the same run, file kind to text (for example exported logs).
    type: dict
    default: {}
  log_exports:
    description:
      - Exported pod logs (the RV(rlark.ops.rlark_stop_with_logs#module:log_exports) of a stop), each C({pod, path}).
      - Each file is copied into the record directory as C(log-<pod>.log) in chunks (a log of any size), then
        removed.
    type: list
    elements: dict
    default: []
  run_id:
    description:
      - The run id, the record's directory (C(20250102T030405Z-migrate-3fa9c1)).
      - Defaults to the variable C(rlark_run_id), else O(stamp), else a new id.
    type: str
  stamp:
    description:
      - Older name for the run directory (C(20250102T030405Z)); used when neither O(run_id) nor C(rlark_run_id) is set.
    type: str
  outcome:
    description: What the run came to at this point (for example V(passed), V(refused), V(created), V(verified)).
    type: str
  mode:
    description:
      - File mode of the record files (directories get the matching search bits).
      - Defaults to the variable C(rlark_records_mode), else V(0640), readable by the group so colleagues can read them.
    type: raw
"""

EXAMPLES = r"""
- name: Write the stop record
  rlark.ops.rlark_record:
    records_dir: /srv/rlark-records
    job: ppo-demo
    kind: stop
    data: "{{ stop_record }}"
"""

RETURN = r"""
path:
  description: The record file written (none in check mode).
  returned: always
  type: str
files:
  description: The files written from O(files) and O(log_exports).
  returned: success
  type: list
  elements: str
directory:
  description: The record directory.
  returned: success
  type: str
run_id:
  description: The run id (the record directory's name).
  returned: always
  type: str
  sample: 20250102T030405Z-migrate-3fa9c1
stamp:
  description: Same as RV(run_id), kept for older playbooks.
  returned: success
  type: str
"""
