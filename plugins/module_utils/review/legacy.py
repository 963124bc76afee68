# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Legacy (pre-RLark) fields in the records or the Job: seed 001, \"从旧模型迁移到当前模型\"."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import manifest as manifest_io
from ansible_collections.rlark.ops.plugins.module_utils.findings import finding

# Seed 001, "从旧模型迁移到当前模型": legacy names and what replaces them.
LEGACY_FIELDS = {
    "worker_group": "one spec.tasks[] template per role that needs its own image, resources or prepare steps "
    "(manifest roles[])",
    "node_names": "each template's single-value nodeSelector plus replicas, proven against the global Node list "
    "(profile roles[].selector, global_matches, replicas)",
    "num_workers": "the template's replicas, equal to the admin's global match count (profile roles[].replicas); "
    "per-worker GPUs/devices go to container requests and limits",
    "disable_ray": "nothing: RLark always starts Ray (head/worker scripts); do not invent a field",
    "submit_job": "nothing: create a new rlinf.io/v1alpha1 Job (rlark.ops.rlark_job); never copy the legacy JobSpec",
    "runtime_env_json": "the image (dependencies), non-secret role env (manifest roles[].env) and prepareScript",
    "extra_files": "mounts (hostPath, PVC or object storage via pvcStorageMap) or files baked into the image",
    "rlinf_node_rank": "nothing: RLark derives RLINF_NODE_RANK from template order and pod ordinal; keep the head "
    "first",
    "run_on_host": "nothing: workloads run as Kubernetes StatefulSets (agentType Kubernetes); node directories "
    "are hostPath mounts approved in the profile",
}


def legacy_findings(data, prefix):
    """Legacy keys anywhere in a document (seed 001 migration table)."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                here = manifest_io.field_path([key], path)
                norm = str(key).lower().replace("-", "_")
                if norm in LEGACY_FIELDS:
                    found.append(
                        finding(
                            "legacy-field",
                            "'%s' is a legacy field, not part of the current RLark Job API." % key,
                            path=here,
                            hint="Current equivalent: %s." % LEGACY_FIELDS[norm],
                        )
                    )
                walk(value, here)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, "%s[%d]" % (path, index))

    walk(data, prefix)
    return found


def is_legacy_key(name):
    return str(name).lower().replace("-", "_") in LEGACY_FIELDS
