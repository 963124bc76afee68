# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pod template of a task: device requests, volumes, mounts over reserved container paths."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import render
from ansible_collections.rlark.ops.plugins.module_utils.findings import WARNING, finding
from ansible_collections.rlark.ops.plugins.module_utils.review.values import (
    as_dict,
    as_list,
    is_under,
    norm_path,
    quantity_text,
)

SUPPORTED_VOLUME_TYPES = ("hostPath", "persistentVolumeClaim", "emptyDir")
# Container paths a mount must never cover: system dirs, RLark's script mount, the head's ~/.ssh.
RESERVED_EXACT = (
    "/",
    "/bin",
    "/boot",
    "/etc",
    "/lib",
    "/lib64",
    "/root",
    "/sbin",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/local/bin",
    "/var",
    "/tmp",
    "/home",
)
RESERVED_TREES = ("/rlark", "/proc", "/sys", "/dev")


def device_findings(resources, path):
    found = []
    requests, limits = as_dict(resources.get("requests")), as_dict(resources.get("limits"))
    for name in sorted(set(requests) | set(limits)):
        if render.is_device_resource(name) and quantity_text(requests.get(name)) != quantity_text(limits.get(name)):
            found.append(
                finding(
                    "device-request-limit-mismatch",
                    "%s is %r in requests and %r in limits; GPUs and devices must be equal in both."
                    % (name, requests.get(name), limits.get(name)),
                    path="%s[%s]" % (path, name),
                )
            )
    return found


def volume_findings(pod, workload, wpath):
    found = []
    volumes = {}
    for vi, volume in enumerate(as_list(pod.get("volumes"))):
        volume = as_dict(volume)
        volumes[volume.get("name")] = volume
        kinds = [k for k in volume if k != "name"]
        if not any(k in SUPPORTED_VOLUME_TYPES for k in kinds):
            found.append(
                finding(
                    "volume-type-unsupported",
                    "Volume %r uses %s; the migration supports hostPath, PVC (incl. object storage) and emptyDir."
                    % (volume.get("name"), ", ".join(kinds) or "no source"),
                    path="%s.template.spec.volumes[%d]" % (wpath, vi),
                )
            )
    for ci, container in enumerate(as_list(pod.get("containers"))):
        for mi, mount in enumerate(as_list(as_dict(container).get("volumeMounts"))):
            mount = as_dict(mount)
            mpath = "%s.template.spec.containers[%d].volumeMounts[%d]" % (wpath, ci, mi)
            if mount.get("name") not in volumes:
                found.append(
                    finding("mount-volume-missing", "volumeMount %r has no volume." % (mount.get("name"),), path=mpath)
                )
            found.extend(reserved_path_findings(mount.get("mountPath"), mpath + ".mountPath"))
    claims = {as_dict(v.get("persistentVolumeClaim")).get("claimName") for v in volumes.values()}
    for claim in sorted(as_dict(workload.get("pvcStorageMap")), key=str):
        if claim not in claims:
            found.append(
                finding(
                    "storage-map-orphan",
                    "pvcStorageMap names claim %r that no volume uses." % (claim,),
                    WARNING,
                    "%s.pvcStorageMap[%s]" % (wpath, claim),
                )
            )
    return found


def reserved_path_findings(target, path):
    target = norm_path(target)
    if not target.startswith("/"):
        return [finding("mount-unclear", "Mount target %r is not an absolute container path." % (target,), path=path)]
    if target in RESERVED_EXACT or any(is_under(target, root) for root in RESERVED_TREES):
        return [
            finding(
                "mount-reserved-path",
                "Mount target %s covers a system or RLark path (RLark mounts its Ray scripts at /rlark/scripts and "
                "writes ~/.ssh for the head)." % target,
                path=path,
                hint="Mount external data under a dedicated directory such as /data or /mnt.",
            )
        ]
    return []
