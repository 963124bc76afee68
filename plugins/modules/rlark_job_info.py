#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_job_info
short_description: Read RLark Jobs with their Tasks, Pod CRs and Nodes
version_added: 0.1.0
description:
  - Reads C(rlinf.io/v1alpha1) Jobs by O(name) or by O(label_selectors), each with its Tasks (label C(rlinf.io/job)
    in every namespace, orphaned ones included), its Pod CRs (label C(rlark.io/task-name)) and the Node CRs those
    pods run on.
  - Lists are paged with C(limit)/C(continue); Tasks and Pod CRs of many Jobs are read in batches.
  - Never changes anything.
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
  name:
    description:
      - Name of one Job. A missing Job gives an empty O(ignore:resources) list.
    type: str
  label_selectors:
    description:
      - Label selectors ANDed together, for example V(team=rl). Without O(name) and O(label_selectors), all Jobs.
    type: list
    elements: str
    default: []
  field_selectors:
    description:
      - Field selectors ANDed together, as in M(kubernetes.core.k8s_info), for example V(status.phase=Running),
        V(spec.stopped!=true) or V(metadata.name=ppo-demo); C(=), C(==) and C(!=) compare the field as a string
        (a missing field is the empty string).
      - RLark's CRDs declare no selectable fields, so the API server filters only C(metadata.name) and
        C(metadata.namespace); every other field is matched on the listed Jobs the same way.
    type: list
    elements: str
    default: []
  nodes:
    description:
      - Also read the Node CRs the pods run on.
    type: bool
    default: true
  timeout:
    description:
      - Seconds the module may spend, retries of API calls included.
    type: int
    default: 120
seealso:
  - module: rlark.ops.rlark_job
"""

EXAMPLES = r"""
- name: Read one Job with its Tasks, Pod CRs and Nodes
  rlark.ops.rlark_job_info:
    name: ppo-demo
  register: info

- name: Read all Jobs of a team
  rlark.ops.rlark_job_info:
    label_selectors:
      - team=rl

- name: The Running Jobs of a team that are not being stopped
  rlark.ops.rlark_job_info:
    label_selectors:
      - team=rl
    field_selectors:
      - status.phase=Running
      - spec.stopped!=true
    nodes: false
"""

RETURN = r"""
resources:
  description:
    - One entry per Job.
    - Secret-looking values (env passwords, tokens, keys) are masked; names, labels and states are not.
  returned: always
  type: list
  elements: dict
  contains:
    job:
      description: The Job.
      type: dict
      returned: always
    tasks:
      description: Its Tasks in every namespace.
      type: list
      elements: dict
      returned: always
    pods:
      description: The Pod CRs of those Tasks.
      type: list
      elements: dict
      returned: always
    findings:
      description:
        - C(task-duplicate-namespaces) when a Task name exists in more than one namespace, C(task-default-namespace)
          when a Task sits in C(default) (no agent runs it). Tasks and Pod CRs are matched by namespace and name.
      type: list
      elements: dict
      returned: always
    nodes:
      description: The Node CRs the pods run on (when O(nodes=true)).
      type: list
      elements: dict
      returned: when O(nodes=true)
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
from ansible_collections.rlark.ops.plugins.module_utils.job_info import JOB_INFO_SPEC, job_info
from ansible_collections.rlark.ops.plugins.module_utils.module_options import argument_spec
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import run_module_core


def main():
    module = AnsibleModule(argument_spec=argument_spec(**JOB_INFO_SPEC), supports_check_mode=True)
    run_module_core(module, job_info, module.params["timeout"])


if __name__ == "__main__":
    main()
