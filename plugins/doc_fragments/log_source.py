# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


# The one description of the choice, for the modules' O(log_source) and the lookup's O(source).
_SOURCE = r"""
    description:
      - Where the logs come from (the playbook variable C(rlark_log_source)).
      - C(files) reads C(<logs_dir>/<job>/<pod>.log) and keeps the whole history; C(kubeconfig) reads the pods in
        the data-plane cluster each pod's Task runs in; C(gateway) calls RLark's C(/jobs/<job>/logs) endpoint, which
        only has the last 1000 lines of Running pods.
    type: str
    default: files
    choices: [files, kubeconfig, gateway]
"""


class ModuleDocFragment:
    # Where a task reads a Job's logs (rlark_stop_with_logs, rlark_guarded_stop); the argument spec is
    # joblogs.LOG_SOURCE_SPEC. A new source is added there, in _SOURCE above and in joblogs.py's readers.
    DOCUMENTATION = (
        r"""
options:
  log_source:"""
        + _SOURCE
        + r"""  logs_dir:
    description: Directory holding C(<job>/<pod>.log) for O(log_source=files) (C(rlark_logs_dir)).
    type: str
  gateway_url:
    description: Base URL of the RLark gateway for O(log_source=gateway) (C(rlark_gateway_url)).
    type: str
  data_plane_kubeconfig:
    description:
      - Kubeconfig of the data-plane cluster for O(log_source=kubeconfig); with O(data_plane_kubeconfigs), the one for
        clusters not listed there.
    type: str
  data_plane_kubeconfigs:
    description:
      - Data-plane cluster ID (the Task's namespace without C(rlark-)) to its kubeconfig path, for
        O(log_source=kubeconfig); each pod is read from the cluster its Task runs in.
      - A pod whose cluster is in neither this nor O(data_plane_kubeconfig) fails the read, naming the cluster.
    type: dict
    default: {}
"""
    )

    # The job_logs lookup names the same choice O(source).
    LOOKUP = (
        r"""
options:
  source:"""
        + _SOURCE
    )
