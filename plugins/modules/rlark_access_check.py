#!/usr/bin/python
# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rlark_access_check
short_description: Check that the current identity may stop an RLark Job, before anything is done
version_added: 0.1.0
description:
  - Asks the API server who the credentials are (C(SelfSubjectReview)) and whether they may C(get) and C(patch)
    the Job C(jobs.rlinf.io/<job>) and C(list) C(tasks.rlinf.io) and C(pods.rlinf.io) (one
    C(SelfSubjectAccessReview) each).
  - Fails with one C(permission-denied) finding per denied verb and a message naming the identity, the verbs and
    C(docs/rbac.yml), so that a guarded stop is refused before it exports a log or writes a record.
  - Reviews are answered without storing anything, so the module never reports C(changed) and runs the same in
    check mode.
  - On a local connection it runs in the controller's worker process (no module is sent).
extends_documentation_fragment:
  - rlark.ops.controller_action
  - rlark.ops.auth
attributes:
  check_mode:
    description: Reviews store nothing; the module runs unchanged in check mode.
  platform:
    description: Runs on the controller or any host that can reach the API server.
options:
  job:
    description:
      - Name of the Job to be stopped.
      - Without it only the identity is asked (the playbooks name it in every record header).
    type: str
  timeout:
    description: Seconds for all API calls, retries included.
    type: int
    default: 60
seealso:
  - module: rlark.ops.rlark_job
"""

EXAMPLES = r"""
- name: Refuse early when this token may not stop the Job
  rlark.ops.rlark_access_check:
    job: ppo-demo
    kubeconfig: ~/.kube/rlark
"""

RETURN = r"""
identity:
  description: The identity the API server sees (C(username), C(groups)).
  returned: always
  type: dict
allowed:
  description: The checks that were allowed, each C({verb, resource, name, reason}).
  returned: always
  type: list
  elements: dict
denied:
  description: The checks that were denied, each C({verb, resource, name, reason}).
  returned: always
  type: list
  elements: dict
findings:
  description: One C(permission-denied) error per denied check.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rlark.ops.plugins.module_utils.access import ACCESS_CHECK_SPEC, access_check
from ansible_collections.rlark.ops.plugins.module_utils.module_options import argument_spec
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import run_module_core


def main():
    module = AnsibleModule(argument_spec=argument_spec(**ACCESS_CHECK_SPEC), supports_check_mode=True)
    run_module_core(module, access_check, module.params["timeout"])


if __name__ == "__main__":
    main()
