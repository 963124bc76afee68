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
  - Writes O(data) as YAML to C(<records_dir>/<job>/<stamp>/<kind>.yml) on the controller, with secrets masked
    by key name and by value shape, atomically, never overwriting an existing record.
  - Runs entirely in an action plugin on the controller (no module is sent to any host).
  - Records are audit output, not managed state, so the task never reports C(changed); in check mode nothing is
    written.
author:
  - rlark.ops contributors (@rlark-ops)
attributes:
  check_mode:
    support: full
    description: Writes nothing in check mode.
  diff_mode:
    support: none
    description: No diff.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller.
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
  stamp:
    description: UTC timestamp directory (C(20250102T030405Z)); defaults to now. Pass the same value to group records.
    type: str
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
  description: The files written from O(files).
  returned: success
  type: list
  elements: str
directory:
  description: The record directory.
  returned: success
  type: str
stamp:
  description: The timestamp used.
  returned: success
  type: str
"""
