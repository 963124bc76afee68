# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_resume_decision: one decision of the resume, made by module_utils/resume_decision.

Wiring only, on the controller (no module is sent): the options become the owner's arguments, the stop records are
read under records_dir when asked, and the finished decision is returned with its ``refusal`` ('' when none).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import resume_decision as owner
from ansible_collections.rlark.ops.plugins.module_utils.manifest import InputError
from ansible_collections.rlark.ops.plugins.plugin_utils.controller_preload import preload
from ansible_collections.rlark.ops.plugins.plugin_utils.decision_action import DecisionAction
from ansible_collections.rlark.ops.plugins.plugin_utils.inventory_hosts import node_host

# Loaded in the controller process before a task's workers fork: they inherit the filters (controller_preload).
preload()

SPEC = dict(
    phase=dict(type="str", required=True, choices=list(owner.PHASES)),
    source=dict(type="str", required=True),
    resource=dict(type="dict", default={}),
    earlier=dict(type="list", elements="dict", default=[]),
    step=dict(type="raw", default="latest"),
    new_name=dict(type="str", default=""),
    manifest=dict(type="dict", default={}),
    profile=dict(type="dict", default={}),
    root=dict(type="str", default=""),
    object_storage=dict(type="dict", default={}),
    records_dir=dict(type="path"),
    read_records=dict(type="bool", default=False),
    location=dict(type="dict", default={}),
    gate=dict(type="dict", default={}),
    preview=dict(type="dict", default={}),
    resume_dir=dict(type="str", default=""),
    name=dict(type="str", default=""),
    diff=dict(type="dict", default={}),
    created=dict(type="dict", default={}),
    verify=dict(type="bool", default=True),
    verify_report=dict(type="dict", default={}),
    node=dict(type="str", default=""),
    reference_manifest=dict(type="dict", default={}),
    backup=dict(type="dict", default={}),
    backup_host_known=dict(type="bool", default=False),
)


def decide(p, check_mode):
    """The owner's decision for ``p["phase"]`` (``p`` are the validated options, as plain data)."""
    phase, source = p["phase"], p["source"]
    if phase == "plan":
        records = owner.stop_records(p["records_dir"], source) if p["read_records"] and p["records_dir"] else []
        where = {"manifest": p["manifest"], "root": p["root"], "object_storage": p["object_storage"]}
        return owner.plan(source, p["resource"], p["earlier"], p["step"], p["new_name"], where, records)
    if phase == "backup":
        manifest, known = p["reference_manifest"], p["backup_host_known"]
        return owner.backup(p["location"], p["node"], manifest, source, p["backup"], known, p.get("node_host"))
    if phase == "checkpoint":
        return owner.checkpoint(p["gate"], p["step"], source, p["location"].get("container_root"), p["new_name"])
    if phase == "copy":
        records = {"manifest": p["manifest"], "profile": p["profile"]}
        return owner.copy(
            p["preview"], (p["resource"] or {}).get("job") or {}, records, p["resume_dir"], p["name"],
            p["object_storage"], p["location"].get("node"),
        )  # fmt: skip
    if phase == "tree":
        return owner.tree(p["diff"], p["location"])
    return owner.outcome(source, p["created"], check_mode, p["verify"], p["verify_report"])


class ActionModule(DecisionAction):
    SPEC = SPEC
    ERRORS = (OSError, InputError)

    def decide(self, options, check_mode):
        if options["phase"] == "backup" and options["node"]:
            # The inventory host of the node to resume on (plugin_utils/inventory_hosts, as the node_host filter).
            variables = self.task_vars
            options["node_host"] = node_host(options["node"], variables.get("hostvars"), variables.get("groups"))
        return decide(options, check_mode)

    def describe(self, options, exc):
        return "Could not read the stop records of %s under %s (rlark_records_dir): %s" % (
            options["source"], options["records_dir"], exc,
        )  # fmt: skip
