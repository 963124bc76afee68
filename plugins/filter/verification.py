# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over a running Job's objects (logic in module_utils). The verify role's verdicts are
rlark_verify_decision's (module_utils/verify_decision.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.query import plain


def pod_names(pods):
    """Data-plane pod names (``rlark.io/local-pod-name``) of Pod CRs."""
    out = []
    for pod in plain(pods) or []:
        name = jobspec.pod_local_name(pod)
        if name:
            out.append(name)
    return sorted(out)


class FilterModule:
    def filters(self):
        return {"pod_names": pod_names}
