# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    # Where the controller reads the Job's pod logs (rlark_stop_with_logs, rlark_resume_sentinel).
    DOCUMENTATION = r"""
options:
  log_source:
    description: Where the logs come from, as for the P(rlark.ops.job_logs#lookup) lookup.
    type: str
    default: files
    choices: [files, kubeconfig, gateway]
  logs_dir:
    description: Directory holding C(<job>/<pod>.log) for O(log_source=files).
    type: str
  gateway_url:
    description: Base URL of the RLark gateway for O(log_source=gateway).
    type: str
  data_plane_kubeconfig:
    description:
      - Kubeconfig of the data-plane cluster for O(log_source=kubeconfig); with O(data_plane_kubeconfigs), the one for
        clusters not listed there.
    type: str
  data_plane_kubeconfigs:
    description:
      - Data-plane cluster ID (the Task's namespace without C(rlark-)) to its kubeconfig path, for
        O(log_source=kubeconfig); each pod is read from the cluster its Task runs in (O(clusters)).
      - A pod whose cluster is in neither this nor O(data_plane_kubeconfig) fails the read, naming the cluster.
    type: dict
    default: {}
  clusters:
    description:
      - Pod or Task object name to the data-plane cluster ID it runs in (the P(rlark.ops.log_clusters#filter) filter
        of the Job's Tasks and Pod CRs); a pod not listed is looked up by its Task's name (the pod name without its
        ordinal).
    type: dict
    default: {}
  namespace:
    description: Namespace of the workloads in the data-plane cluster (default C(rlark-system)).
    type: str
"""
