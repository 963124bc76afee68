# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Job against the records it was rendered from: every rendered field as the records say."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import render
from ansible_collections.rlark.ops.plugins.module_utils.findings import finding
from ansible_collections.rlark.ops.plugins.module_utils.review.job_rules import indexed_tasks, main_container
from ansible_collections.rlark.ops.plugins.module_utils.review.record_rules import COMPUTE_RESOURCES_APPROVAL
from ansible_collections.rlark.ops.plugins.module_utils.review.values import (
    as_dict,
    as_int,
    as_text,
    quantity_text,
)


def consistency_findings(job, manifest, profile):
    """The Job must be exactly what the records describe (Step 6: YAML matches the confirmed results)."""
    found = []
    tasks = {t.get("name"): (i, t) for i, t in indexed_tasks(job)}
    expected = render.render_job(manifest, profile, as_text(as_dict(job.get("metadata")).get("name")) or None)
    exp_spec = expected["spec"]
    spec = as_dict(job.get("spec"))
    if spec.get("domain") and spec.get("domain") != exp_spec.get("domain"):
        found.append(
            finding(
                "domain-unapproved",
                "spec.domain %r is not the approved Domain of a workload that needs cross-cluster traffic."
                % (spec.get("domain"),),
                path="spec.domain",
                hint="Only set a Domain the profile approves (connectivity confirmed) when roles span clusters.",
            )
        )
    if spec.get("sshPublicKey") and spec.get("sshPublicKey") != exp_spec.get("sshPublicKey"):
        found.append(
            finding(
                "ssh-key-unapproved",
                "spec.sshPublicKey is not the key registered in the deployment profile.",
                path="spec.sshPublicKey",
                hint="Only set a public key registered in RLark's SSH key management, when remote access is needed.",
            )
        )
    prof_roles = render.profile_roles(profile)
    roles = {r.get("name"): r for r in render.ordered_roles(manifest.get("roles"))}
    for exp in exp_spec["tasks"]:
        name = exp["name"]
        if name not in tasks:
            found.append(
                finding(
                    "role-template-missing",
                    "No template for manifest role %r." % (name,),
                    path="spec.tasks",
                    hint="Render one template per role.",
                )
            )
            continue
        index, task = tasks[name]
        found.extend(_compare_task(index, task, exp, roles.get(name) or {}, prof_roles.get(name) or {}, profile))
    for name, (index, _task) in sorted(tasks.items(), key=lambda kv: kv[1][0]):
        if name not in roles:
            found.append(
                finding(
                    "role-template-unexpected",
                    "Template %r is not a role of the launch manifest." % (name,),
                    path="spec.tasks[%d].name" % index,
                )
            )
    return found


def _compare_task(index, task, exp, role, entry, profile):
    found = []
    path = "spec.tasks[%d]" % index
    if task.get("role") != exp["role"]:
        found.append(
            finding(
                "role-mismatch",
                "role is %r, the manifest says %r." % (task.get("role"), exp["role"]),
                path=path + ".role",
            )
        )
    if (task.get("head") is True) != exp["head"]:
        found.append(
            finding(
                "head-mismatch",
                "head is %r, the manifest says %r." % (task.get("head"), exp["head"]),
                path=path + ".head",
            )
        )
    if as_dict(task.get("nodeSelector")) != exp["nodeSelector"]:
        found.append(
            finding(
                "selector-mismatch",
                "nodeSelector differs from the admin-verified selector of the profile.",
                path=path + ".nodeSelector",
                hint="Use profile.roles[].selector exactly.",
            )
        )
    workload, exp_w = as_dict(as_dict(task.get("kubernetes")).get("workload")), exp["kubernetes"]["workload"]
    wpath = path + ".kubernetes.workload"
    replicas = workload.get("replicas", 1)
    if as_int(entry.get("replicas")) is not None and replicas != entry.get("replicas"):
        found.append(
            finding(
                "replicas-mismatch",
                "replicas is %r, the profile approves %r." % (replicas, entry.get("replicas")),
                path=wpath + ".replicas",
            )
        )
    main, exp_c = main_container(task) or {}, exp_w["template"]["spec"]["containers"][0]
    cpath = wpath + ".template.spec.containers[0]"
    pinned = render.pinned_image(role.get("image"))
    if pinned and main.get("image") != pinned:
        found.append(
            finding(
                "image-mismatch",
                "image is %r, the manifest records %r." % (main.get("image"), pinned),
                path=cpath + ".image",
            )
        )
    found.extend(_job_resource_findings(as_dict(main.get("resources")), entry, profile, cpath + ".resources"))
    for key, where, actual, wanted in (
        ("runScript", path, task.get("runScript"), exp.get("runScript")),
        ("prepareScript", path, task.get("prepareScript"), exp.get("prepareScript")),
        ("tensorBoardDir", path, task.get("tensorBoardDir"), exp.get("tensorBoardDir")),
        ("env", cpath, main.get("env"), exp_c.get("env")),
        ("volumeMounts", cpath, main.get("volumeMounts"), exp_c.get("volumeMounts")),
        (
            "volumes",
            wpath + ".template.spec",
            as_dict(as_dict(workload.get("template")).get("spec")).get("volumes"),
            exp_w["template"]["spec"].get("volumes"),
        ),
        ("pvcStorageMap", wpath, workload.get("pvcStorageMap"), exp_w.get("pvcStorageMap")),
    ):
        if (actual or None) != (wanted or None):
            found.append(
                finding(
                    "job-differs-from-records",
                    "%s differs from what the launch manifest and deployment profile describe." % key,
                    path="%s.%s" % (where, key),
                    hint="Render the Job from the records (rlark.ops.render_job) instead of editing it by hand.",
                )
            )
    return found


def _job_resource_findings(resources, entry, profile, path):
    found = []
    approved = as_dict(entry.get("resources"))
    compute_ok = as_dict(profile.get("compute_requests")).get("approved") is True
    for section in ("requests", "limits"):
        for name, quantity in sorted(as_dict(resources.get(section)).items()):
            here = "%s.%s[%s]" % (path, section, name)
            if not render.is_device_resource(name) and not compute_ok:
                found.append(
                    finding(
                        "cpu-memory-unapproved",
                        "%s %s is set without an approved CPU/memory submission path." % (section, name),
                        path=here,
                        hint="Remove it, or have the admin approve a supported path (%s)." % COMPUTE_RESOURCES_APPROVAL,
                    )
                )
            elif quantity_text(approved.get(name)) != quantity_text(quantity):
                found.append(
                    finding(
                        "resources-not-approved",
                        "%s %s=%s is not the approved quantity (%s)."
                        % (section, name, quantity_text(quantity), approved.get(name, "none")),
                        path=here,
                        hint="Use the per-worker quantities of the deployment profile.",
                    )
                )
    return found
