# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two records on their own: launch manifest and deployment profile (seed 001, \"准备启动清单和部署参数\")."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import render
from ansible_collections.rlark.ops.plugins.module_utils.findings import WARNING, finding
from ansible_collections.rlark.ops.plugins.module_utils.review.mount_rules import mount_findings
from ansible_collections.rlark.ops.plugins.module_utils.review.values import (
    as_dict,
    as_int,
    as_list,
    as_text,
    is_under,
    quantity_text,
)

COMPUTE_RESOURCES_APPROVAL = "profile.compute_requests.approved"
ROBOT_CHECKLIST = ("compatibility", "site", "emergency", "limits", "audit")


def records_findings(manifest, profile):
    """Stop conditions that only the launch manifest and deployment profile can show."""
    found = _link_and_signal_findings(manifest, profile)
    roles = [(i, r) for i, r in enumerate(as_list(manifest.get("roles"))) if isinstance(r, dict)]
    prof_roles = render.profile_roles(profile)
    found.extend(_head_record_findings(roles))
    found.extend(_image_findings(manifest, roles))
    compute_ok = as_dict(profile.get("compute_requests")).get("approved") is True
    for i, role in roles:
        rpath = "manifest.roles[%d]" % i
        entry = prof_roles.get(role.get("name"))
        if entry is None:
            found.append(
                finding(
                    "profile-role-missing",
                    "Role %r has no entry in the deployment profile (selector, matches, replicas, resources)."
                    % (role.get("name"),),
                    path=rpath + ".name",
                    hint="Ask the platform admin to approve this role.",
                )
            )
            entry = {}
        found.extend(_resource_record_findings(role, entry, rpath, compute_ok))
        found.extend(mount_findings(role, rpath, profile, entry))
        found.extend(_robot_findings(manifest, profile, role, entry, rpath))
    names = {r.get("name") for _index, r in roles}
    for pi, entry in enumerate(as_list(profile.get("roles"))):
        if isinstance(entry, dict) and entry.get("name") not in names:
            found.append(
                finding(
                    "profile-role-unknown",
                    "Profile role %r is not in the manifest." % (entry.get("name"),),
                    WARNING,
                    "profile.roles[%d].name" % pi,
                )
            )
    found.extend(_selector_record_findings(profile, roles))
    found.extend(_location_findings(manifest, roles))
    if render.cross_cluster(manifest, profile) and not render.approved_domain(profile):
        found.append(
            finding(
                "domain-unapproved",
                "The roles communicate across clusters (%s) but the profile has no approved Domain with confirmed "
                "connectivity." % (", ".join(render.role_clusters(profile)) or "declared in manifest.network"),
                path="profile.domain",
                hint="Ask the platform admin to create and approve a Domain and confirm end-to-end connectivity.",
            )
        )
    return found


def _link_and_signal_findings(manifest, profile):
    """The records name each other's versions; the manifest records the signals that prove progress."""
    found = []
    m_ver, p_ver = as_text(manifest.get("version")), as_text(profile.get("version"))
    manifest_stale = as_text(as_dict(manifest.get("profile")).get("version")) != p_ver
    if manifest_stale or as_text(as_dict(profile.get("manifest")).get("version")) != m_ver:
        found.append(
            finding(
                "records-not-linked",
                "The launch manifest (version %s, references profile %s) and the deployment profile (version %s, "
                "references manifest %s) do not reference each other."
                % (
                    m_ver,
                    as_dict(manifest.get("profile")).get("version"),
                    p_ver,
                    as_dict(profile.get("manifest")).get("version"),
                ),
                path="manifest.profile.version" if manifest_stale else "profile.manifest.version",
                hint="Each record must name the other's current version.",
            )
        )
    signals = as_dict(manifest.get("signals"))
    for kind in ("startup", "normal"):
        if not as_list(signals.get(kind)):
            found.append(
                finding(
                    "signals-missing",
                    "No expected %s signal: a StatefulSet Task never reports Succeeded/Failed, so 'no failure' "
                    "proves nothing." % kind,
                    path="manifest.signals.%s" % kind,
                    hint="Record the log line, metric or output that proves it.",
                )
            )
    if not as_list(signals.get("failure")):
        found.append(
            finding("signals-failure-missing", "No expected failure signal.", WARNING, "manifest.signals.failure")
        )
    return found


def _head_record_findings(roles):
    """Script placement in the manifest (the head count itself is checked on the rendered Job)."""
    found = []
    for i, role in roles:
        if role.get("head") is True and not as_text(role.get("entrypoint")).strip():
            found.append(
                finding(
                    "runscript-missing",
                    "The head role %r has no entrypoint: the Job would have nothing to run." % role.get("name"),
                    path="manifest.roles[%d].entrypoint" % i,
                    hint="Record the exact start command verified in the image.",
                )
            )
        if role.get("head") is not True and (role.get("entrypoint") or role.get("checks")):
            found.append(
                finding(
                    "runscript-outside-head",
                    "Role %r is not the head but declares an entrypoint/checks; only the head runs a script."
                    % role.get("name"),
                    path="manifest.roles[%d].entrypoint" % i,
                    hint="Non-head roles run Ray workers only; move the entrypoint to the head role.",
                )
            )
    return found


def _image_findings(manifest, roles):
    found = []
    digests = {}
    for i, role in roles:
        image = as_dict(role.get("image"))
        ipath = "manifest.roles[%d].image" % i
        _repo, tag, ref_digest = render.split_reference(image.get("reference"))
        digest = image.get("digest")
        if ref_digest and digest and ref_digest != digest:
            found.append(
                finding(
                    "image-digest-conflict",
                    "The reference pins %s but the recorded digest is %s." % (ref_digest, digest),
                    path=ipath + ".digest",
                )
            )
        if not digest and not ref_digest:
            found.append(
                finding(
                    "image-not-pinned",
                    "Image %r has no verified digest%s."
                    % (image.get("reference"), " (tag %r only)" % tag if tag else ""),
                    path=ipath + ".digest",
                    hint="Record the actual sha256 digest the reference resolved to.",
                )
            )
        verification = as_dict(image.get("verification"))
        missing = [k for k in ("verified", "command_verified") if verification.get(k) is not True]
        if missing:
            found.append(
                finding(
                    "image-unverified",
                    "Image content/source/digest or command is not recorded as verified (%s)." % ", ".join(missing),
                    path=ipath + ".verification",
                    hint="Verify the image and the exact command in the workload's own environment first.",
                )
            )
        for key in ("source", "contact"):
            if not as_text(image.get(key)).strip():
                found.append(
                    finding(
                        "image-provenance-missing",
                        "The image has no recorded %s." % key,
                        path="%s.%s" % (ipath, key),
                        hint="Record the build source and the contact person.",
                    )
                )
        pinned = digest or ref_digest
        if pinned:
            digests.setdefault(pinned, i)
    found.extend(_compat_findings(manifest, sorted(digests)))
    return found


def _compat_findings(manifest, digests):
    groups = [set(as_list(as_dict(r).get("images"))) for r in as_list(manifest.get("compatibility"))]
    found = []
    for a_index, a in enumerate(digests):
        for b in digests[a_index + 1 :]:
            if not any(a in g and b in g for g in groups):
                found.append(
                    finding(
                        "image-compat-missing",
                        "Roles use different images %s and %s without a compatibility record." % (a[:19], b[:19]),
                        path="manifest.compatibility",
                        hint="Record that Ray, Python, RLinf, config format, drivers and devices were checked "
                        "for this pair, or use one image.",
                    )
                )
    return found


def _resource_record_findings(role, entry, rpath, compute_ok):
    found = []
    approved = as_dict(entry.get("resources"))
    for name, quantity in sorted(as_dict(role.get("resources")).items()):
        here = "%s.resources[%s]" % (rpath, name)
        if not render.is_device_resource(name) and not compute_ok:
            found.append(
                finding(
                    "cpu-memory-unapproved",
                    "The role needs an explicit %s request but no CPU/memory submission path is approved." % name,
                    path=here,
                    hint="Stop: the console cannot carry CPU/memory; the admin must approve a supported path "
                    "(%s)." % COMPUTE_RESOURCES_APPROVAL,
                )
            )
        if name not in approved or quantity_text(approved[name]) != quantity_text(quantity):
            found.append(
                finding(
                    "resources-not-approved",
                    "The role needs %s=%s but the profile approves %s."
                    % (name, quantity_text(quantity), approved.get(name, "nothing")),
                    path=here,
                    hint="Write the quantity into the approved deployment profile.",
                )
            )
    return found


def _robot_findings(manifest, profile, role, entry, rpath):
    selector = as_dict(entry.get("selector"))
    needs = (
        role.get("real_robot") is True
        or any(
            str(k).startswith("rlinf.io/device")
            for k in list(as_dict(role.get("resources"))) + list(as_dict(entry.get("resources")))
        )
        or selector.get("rlark.io/node-category") == "robot"
        or selector.get("rlark.io/node-category-robot") == "true"
    )
    if not needs:
        return []
    checklist = as_dict(as_dict(profile.get("robot_safety")).get("checklist"))
    missing = [k for k in ROBOT_CHECKLIST if as_dict(checklist.get(k)).get("confirmed") is not True]
    if not as_dict(profile.get("robot_safety")).get("approved_by"):
        missing.insert(0, "approved_by")
    if not isinstance(manifest.get("robot_safety"), dict):
        missing.append("manifest.robot_safety (approval and stop plan)")
    if not missing:
        return []
    return [
        finding(
            "robot-safety-missing",
            "Role %r may drive real hardware (robot node or rlinf.io/device) but the safety approval is incomplete: "
            "%s." % (role.get("name"), ", ".join(missing)),
            path=rpath,
            hint="Stop and use simulation until the device team and safety approver confirm every checklist item "
            "(profile.robot_safety.checklist) and the approval and stop plan are in the manifest.",
        )
    ]


def _selector_record_findings(profile, roles):
    found = []
    default = profile.get("cluster")
    heads = {r.get("name") for _index, r in roles if r.get("head") is True}
    for pi, entry in enumerate(as_list(profile.get("roles"))):
        if not isinstance(entry, dict):
            continue
        ppath = "profile.roles[%d]" % pi
        cluster = entry.get("cluster") or default
        matches = [m for m in as_list(entry.get("global_matches")) if isinstance(m, dict)]
        replicas = as_int(entry.get("replicas"))
        if not matches:
            found.append(
                finding(
                    "selector-unproven",
                    "No global match record for role %r: the creator only shows one cluster's nodes."
                    % (entry.get("name"),),
                    path=ppath + ".global_matches",
                    hint="Have the admin apply the full selector to the global Node list and record every match "
                    "(rlark.ops.rlark_node_match does it).",
                )
            )
            continue
        others = sorted({as_text(m.get("namespace")) for m in matches if m.get("namespace") != cluster})
        if others:
            found.append(
                finding(
                    "selector-other-cluster",
                    "The selector of role %r also matches Nodes in %s, not only in %s: RLark may place the Task in "
                    "another cluster." % (entry.get("name"), ", ".join(others), cluster),
                    path=ppath + ".selector",
                    hint="Add a label that makes the selector unique to the target cluster.",
                )
            )
        if entry.get("name") in heads and len(matches) != 1:
            found.append(
                finding(
                    "head-match-count",
                    "The head selector matches %d Nodes globally; it must match exactly 1." % len(matches),
                    path=ppath + ".global_matches",
                    hint="Narrow the head selector (e.g. kubernetes.io/hostname) to one Node.",
                )
            )
        elif replicas is not None and replicas != len(matches):
            found.append(
                finding(
                    "replicas-match-mismatch",
                    "Role %r has %d replicas but the global match record lists %d Nodes (one pod per node)."
                    % (entry.get("name"), replicas, len(matches)),
                    path=ppath + ".replicas",
                    hint="Set replicas to the admin's recorded match count.",
                )
            )
    return found


def _location_findings(manifest, roles):
    """Checkpoint and output must land on a persistent read-write mount of the head role."""
    found = []
    head = next((r for _index, r in roles if r.get("head") is True), None)
    if head is None:
        return found
    mounts = [as_dict(m) for m in as_list(head.get("mounts"))]
    for key, loc in (
        ("checkpoint", as_dict(manifest.get("checkpoint")).get("root")),
        ("output", as_dict(manifest.get("output")).get("location")),
    ):
        if not as_text(loc).startswith("/"):
            continue
        covering = [m for m in mounts if is_under(loc, m.get("target"))]
        if not any(m.get("mode") == "rw" for m in covering):
            found.append(
                finding(
                    "location-not-persistent",
                    "The %s location %s is not inside a read-write mount of the head role: it would vanish with "
                    "the pod." % (key, loc),
                    path="manifest.%s" % ("checkpoint.root" if key == "checkpoint" else "output.location"),
                    hint="Mount persistent storage (object storage, PVC or an approved hostPath) read-write at or "
                    "above it.",
                )
            )
    return found
