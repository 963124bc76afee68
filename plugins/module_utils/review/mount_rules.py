# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mounts of the records: shadowed image paths, approved host paths, reserved targets."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.findings import ERROR, WARNING, finding
from ansible_collections.rlark.ops.plugins.module_utils.review.values import (
    as_dict,
    as_list,
    as_text,
    is_under,
    norm_path,
)


def image_paths(role):
    return [norm_path(p) for p in as_list(as_dict(role.get("image")).get("paths")) if as_text(p).startswith("/")]


def mount_findings(role, rpath, profile, entry):
    found = []
    workdir = norm_path(role.get("workdir"))
    seen = {}
    classes = {c.get("name"): c for c in as_list(profile.get("storage_classes")) if isinstance(c, dict)}
    for mi, mount in enumerate(as_list(role.get("mounts"))):
        mount = as_dict(mount)
        mpath = "%s.mounts[%d]" % (rpath, mi)
        source, target = as_dict(mount.get("source")), norm_path(mount.get("target"))
        missing = [
            k
            for k, ok in (
                ("source", len(source) == 1),
                ("target", target.startswith("/")),
                ("mode", mount.get("mode") in ("ro", "rw")),
            )
            if not ok
        ]
        if missing:
            found.append(
                finding(
                    "mount-unclear",
                    "Mount %d does not state its %s." % (mi, ", ".join(missing)),
                    path=mpath,
                    hint="Every mount needs exactly one source, an absolute target and ro/rw intent.",
                )
            )
        if target in seen:
            found.append(
                finding(
                    "mount-unclear",
                    "Mounts %d and %d use the same target %s." % (seen[target], mi, target),
                    path=mpath + ".target",
                )
            )
        seen.setdefault(target, mi)
        if target.startswith("/"):
            found.extend(_shadow_findings(mount, target, workdir, image_paths(role), mpath))
        if "host_path" in source:
            found.extend(_host_path_findings(source.get("host_path"), mount.get("mode"), profile, entry, mpath))
        for kind in ("pvc", "object_storage"):
            cls = as_text(as_dict(source.get(kind)).get("storage_class"))
            if kind in source and cls not in classes:
                found.append(
                    finding(
                        "storage-class-unapproved",
                        "StorageClass %r is not approved in the deployment profile." % cls,
                        path="%s.source.%s.storage_class" % (mpath, kind),
                        hint="Use a StorageClass the admin confirmed exists in every target cluster.",
                    )
                )
            elif kind == "object_storage" and kind in source and as_dict(classes.get(cls)).get("kind") != "object":
                found.append(
                    finding(
                        "storage-class-unapproved",
                        "StorageClass %r is not approved as object storage." % cls,
                        path="%s.source.%s.storage_class" % (mpath, kind),
                    )
                )
    return found


def _shadow_findings(mount, target, workdir, image_paths, mpath):
    acknowledged = mount.get("shadows") is True
    protected = ([workdir] if workdir.startswith("/") else []) + image_paths
    for path in protected:
        if is_under(path, target):
            return [
                finding(
                    "mount-shadows-image",
                    "Mount target %s covers %s (image content or the workdir)%s."
                    % (target, path, ", acknowledged" if acknowledged else ""),
                    WARNING if acknowledged else ERROR,
                    mpath + ".target",
                    "Mount outside the image's code/config directories, or set shadows: true after checking "
                    "which files come from the image.",
                )
            ]
        if is_under(target, path) and not acknowledged:
            return [
                finding(
                    "mount-inside-image-path",
                    "Mount target %s lies inside %s: files there are hidden by the mount." % (target, path),
                    WARNING,
                    mpath + ".target",
                    "Confirm the directory is meant to come from outside the image (shadows: true).",
                )
            ]
    return []


def _host_path_findings(host_path, mode, profile, entry, mpath):
    approvals = [
        a for a in as_list(profile.get("host_paths")) if isinstance(a, dict) and is_under(host_path, a.get("path"))
    ]
    problem = None
    if not approvals:
        problem = "hostPath %s is not approved in the deployment profile" % host_path
    else:
        approval = approvals[0]
        nodes = approval.get("nodes")
        matched = [as_text(as_dict(m).get("name")) for m in as_list(entry.get("global_matches"))]
        if not as_text(approval.get("cleanup")).strip():
            problem = "hostPath %s has no cleanup plan" % host_path
        elif mode == "rw" and approval.get("mode") != "rw":
            problem = "hostPath %s is approved read-only but mounted read-write" % host_path
        elif isinstance(nodes, list) and any(n not in nodes for n in matched):
            problem = "hostPath %s is not approved on node(s) %s" % (
                host_path,
                ", ".join(n for n in matched if n not in nodes),
            )
    if problem is None:
        return []
    return [
        finding(
            "hostpath-unapproved",
            problem + ".",
            path=mpath + ".source.host_path",
            hint="Host directories need the admin's approval of path, permissions, read/write impact and cleanup "
            "plan on every matching node; otherwise use managed storage.",
        )
    ]
