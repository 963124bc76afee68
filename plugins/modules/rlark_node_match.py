#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_node_match
short_description: Prove that every nodeSelector of a Job selects exactly what it should
version_added: 0.1.0
description:
  - Evaluates each task's C(nodeSelector) with RLark's own rule against the Node CRs of B(every) namespace
    (a Task's cluster is the namespace of the first Node matching the first value of each key; nothing
    matching means C(default)), and the pods' placement rule inside that cluster (one of the comma values per key).
  - Returns a proof (what matched where, when, against which API server and list resourceVersion) and findings
    with stable ids, for example C(selector-empty), C(selector-multivalue), C(selector-cr-only-key),
    C(selector-annotation-key), C(selector-multi-cluster), C(selector-wrong-cluster), C(selector-no-match),
    C(head-match-count), C(head-replicas), C(replicas-match-mismatch), C(node-offline), C(node-cordoned),
    C(node-disk-pressure), C(node-insufficient-resources) and C(selector-drift).
  - One call proves all selectors of a Job. Node CRs are filtered server-side, one paged list per distinct selector.
  - Fails when a finding is an error unless O(fail_on_findings=false). Never changes anything.
author:
  - rlark.ops contributors (@rlark-ops)
extends_documentation_fragment:
  - rlark.ops.auth
attributes:
  check_mode:
    support: full
    description: Read-only; runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller or any host that can reach the API server.
options:
  job:
    description:
      - A Job dictionary; each task template gives its C(nodeSelector), replicas, C(head) flag and per-worker
        GPU/device requests. Mutually exclusive with O(selectors).
    type: dict
  selectors:
    description:
      - The selectors to prove when there is no Job dictionary.
    type: list
    elements: dict
    suboptions:
      name:
        description: Task name.
        type: str
        required: true
      selector:
        description: The nodeSelector (label key to value; a value may be a comma list).
        type: dict
        default: {}
      replicas:
        description: Replicas of the task.
        type: int
        default: 1
      head:
        description: Whether this is the head task.
        type: bool
        default: false
      requests:
        description: Per-worker accelerator requests, for example V(nvidia.com/gpu=8) as a dictionary.
        type: dict
        default: {}
  cluster_id:
    description:
      - The approved target cluster, as its id (V(a100)) or namespace (V(rlark-a100)).
    type: str
  expected_nodes:
    description:
      - The admin's recorded match list per task name, for drift detection.
      - When not given, read from O(profile).
    type: dict
  profile:
    description:
      - The deployment profile; its C(roles[].global_matches[].name) are the recorded match lists when
        O(expected_nodes) is not given (as the filter C(rlark.ops.expected_nodes) reads them).
    type: dict
  own_job:
    description:
      - Name of a live Job whose own pods do not count as used, so re-proving a running Job (a second migrate
        run) does not report the GPUs it holds itself as taken.
      - A Node's C(status.used) is the sum of the requests of its non-terminal pods; the proof subtracts this Job's
        template requests times its non-terminal Pod CRs (label C(rlark.io/task-name)) on each node before comparing
        allocatable minus used with the per-worker request.
      - Costs two more reads (the Job, its Pod CRs); an absent Job holds nothing.
    type: str
  fail_on_findings:
    description:
      - Fail when any finding is an error.
    type: bool
    default: true
  timeout:
    description:
      - Seconds the module may spend, retries of API calls included.
    type: int
    default: 120
notes:
  - On a local connection an action plugin runs the proof inside the controller's worker process (it only reads
    the API), which saves the module start-up; on any other connection, or when the task sets C(environment),
    the module runs on the target host as usual.
seealso:
  - module: rlark.ops.rlark_job
"""

EXAMPLES = r"""
- name: Prove the selectors of the rendered Job against the approved cluster
  rlark.ops.rlark_node_match:
    job: "{{ rendered_job }}"
    cluster_id: a100
    expected_nodes:
      actor: [a100-01]
      rollout: [a100-02, a100-03]
  register: selector_proof

- name: Re-prove a Job that already runs (its own pods do not count as used)
  rlark.ops.rlark_node_match:
    job: "{{ rendered_job }}"
    own_job: "{{ rendered_job.metadata.name }}"

- name: Prove two selectors and only report problems
  rlark.ops.rlark_node_match:
    selectors:
      - name: actor
        selector: {kubernetes.io/hostname: a100-01}
        head: true
      - name: rollout
        selector: {rlinf.io/pool: rollout}
        replicas: 2
    fail_on_findings: false
"""

RETURN = r"""
proof:
  description: What was checked and what matched.
  returned: always
  type: dict
  contains:
    checked_at:
      description: UTC time of the check (ISO 8601).
      type: str
      returned: always
    api_server:
      description: The API server URL.
      type: str
      returned: always
    resource_version:
      description: The newest list resourceVersion among the Node lists.
      type: str
      returned: always
    cluster_id:
      description: The O(cluster_id) checked against, if any.
      type: str
      returned: always
    own_job:
      description: The O(own_job) whose pods were not counted as used, if any.
      type: str
      returned: always
    tasks:
      description: Per task, C(name), C(selector), C(resolution_selector), C(label_selector), C(replicas), C(head),
        C(matches) (name, namespace, cluster, phase, schedulable, disk_pressure, allocatable, used, and
        C(own_used) when O(own_job)'s pods hold resources on that node), C(count), C(cluster), C(clusters) and C(ok).
      type: list
      elements: dict
      returned: always
findings:
  description:
    - Findings, each C({id, severity, path, message, hint}); every id is documented in the collection's
      C(docs/findings.md).
    - Findings about one node (C(node-offline), C(node-cordoned), C(node-disk-pressure),
      C(node-insufficient-resources)) also carry C(node) and C(namespace), the Node CR they are about.
  returned: always
  type: list
  elements: dict
ok:
  description: Whether no finding is an error.
  returned: always
  type: bool
api_calls:
  description: Number of HTTP requests sent to the API server, retries included.
  returned: always
  type: int
api_retries:
  description: How many of those requests were retries (429, 5xx or a dropped connection).
  returned: always
  type: int
status:
  description: The parsed API Status of a failed request (code, reason, message, causes).
  returned: on API failure
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rlark.ops.plugins.module_utils.module_options import (
    NODE_MATCH_RULES,
    NODE_MATCH_SPEC,
    argument_spec,
)
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import run_module_core
from ansible_collections.rlark.ops.plugins.module_utils.nodes import node_match, node_match_timeout


def main():
    module = AnsibleModule(argument_spec=argument_spec(**NODE_MATCH_SPEC), supports_check_mode=True, **NODE_MATCH_RULES)
    run_module_core(module, node_match, node_match_timeout(module.params))


if __name__ == "__main__":
    main()
