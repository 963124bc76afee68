#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rlark_ckpt_tree
short_description: Snapshot a whole checkpoint tree on a node or in object storage, to prove it unchanged later
version_added: 0.1.0
description:
  - Lists every file below a checkpoint directory with its relative path, size and modification time
    (optionally its sha256), or every key below an object-storage prefix with its size, ETag and
    LastModified (all pages of the listing, never only the first).
  - Compares the tree with an earlier snapshot given in O(compare_to) and reports every file that changed,
    vanished or appeared.
  - Reports the C(global_step_*) entries directly below the root, so a caller can refuse to start a run in a
    directory that already holds another run's checkpoints.
  - For a host directory (hostPath storage) run it on the node that holds the data; it needs only the Python
    standard library there. For object storage run it on the controller with O(s3); it needs boto3.
  - Never writes or deletes anything; C(changed) is always false.
author:
  - rlark.ops contributors (@rlark-ops)
options:
  path:
    description:
      - The directory to snapshot on the host the module runs on. A directory that does not exist is an empty
        tree (RV(exists) false).
      - Mutually exclusive with O(s3).
    type: path
  sha256:
    description:
      - Also hash every file (local trees only; object storage has the ETag). Reads every byte, so it is slow
        on large checkpoints.
    type: bool
    default: false
  compare_to:
    description:
      - An earlier RV(tree) of the same root. When given, RV(diff) lists what changed, vanished or appeared.
    type: dict
extends_documentation_fragment:
  - rlark.ops.s3
attributes:
  check_mode:
    support: full
    description: Nothing is ever written, so check mode runs the same read-only listing.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to diff.
  platform:
    support: full
    platforms: posix
    description: Runs on the node holding a hostPath directory, or on the controller for object storage.
requirements:
  - boto3 (only for O(s3), on the host that runs the module)
seealso:
  - module: rlark.ops.rlark_ckpt_gate
"""

EXAMPLES = r"""
- name: Snapshot the original run's checkpoints on the node that holds them
  rlark.ops.rlark_ckpt_tree:
    path: /data/rlinf/logs/run1/checkpoints
  delegate_to: a100-01
  register: before

- name: Prove later that nothing in it changed
  rlark.ops.rlark_ckpt_tree:
    path: /data/rlinf/logs/run1/checkpoints
    compare_to: "{{ before.tree }}"
  delegate_to: a100-01
  register: after
  failed_when: not after.diff.same
"""

RETURN = r"""
exists:
  description: Whether the directory exists (a prefix with at least one key).
  returned: always
  type: bool
tree:
  description:
    - C(root), C(kind) (V(local) or V(s3)), C(files) (relative path to C(size) and C(mtime_ns) plus C(sha256)
      with O(sha256), or to C(size), C(etag) and C(last_modified)) and C(dirs) (relative paths, local only).
  returned: always
  type: dict
summary:
  description: C(root), number of C(files), total C(bytes) and the C(global_step_*) names in C(steps).
  returned: always
  type: dict
  sample: {root: /data/rlinf/logs/run1/checkpoints, files: 12, bytes: 40960, steps: [global_step_3, global_step_6]}
steps:
  description: The C(global_step_*) entries directly below the root, sorted by name.
  returned: always
  type: list
  elements: str
diff:
  description:
    - With O(compare_to), C(same) and the sorted relative paths that C(changed), C(vanished) and C(appeared).
  returned: when O(compare_to) is given
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.tree_task import TREE_RULES, TREE_SPEC, tree_task


def main():
    module = AnsibleModule(argument_spec=TREE_SPEC, supports_check_mode=True, **TREE_RULES)
    result = tree_task(module.params)
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
