# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_job's options and core: create, update, stop, start, delete or copy one Job, then wait if asked.

One core for the module and for the action plugin that runs it in the worker on a local connection
(``plugin_utils/controller_run.py``): the result is the same wherever it runs. The caller says whether
this is check mode (every write is then a server-side dry run, and nothing is waited for) and where the
wait's progress lines go.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible_collections.rlark.ops.plugins.module_utils import jobspec
from ansible_collections.rlark.ops.plugins.module_utils.findings import WARNING, finding, has_errors
from ansible_collections.rlark.ops.plugins.module_utils.job_diff import make_diff
from ansible_collections.rlark.ops.plugins.module_utils.jobs import (
    Refused,
    absent_check,
    delete_job,
    ensure_present,
    get_job,
    list_tasks,
    phase_check,
    read_tree,
    set_stopped,
    started_check,
    stopped_check,
)
from ansible_collections.rlark.ops.plugins.module_utils.kube import KubeError
from ansible_collections.rlark.ops.plugins.module_utils.naming import name_findings
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact_result
from ansible_collections.rlark.ops.plugins.module_utils.resume import copy_job
from ansible_collections.rlark.ops.plugins.module_utils.wait_options import wait_spec
from ansible_collections.rlark.ops.plugins.module_utils.waiter import Waiter, WaitTimeout
from ansible_collections.rlark.ops.plugins.module_utils.write_checks import check_before_write, replica_change_findings

try:
    import yaml
except ImportError:
    yaml = None
    YAML_IMPORT_ERROR = traceback.format_exc()
else:
    YAML_IMPORT_ERROR = None

PHASES = ["Pending", "Running", "Stopped", "Succeeded", "Failed"]

JOB_WRITE_SPEC = dict(
    state=dict(type="str", default="present", choices=["present", "stopped", "started", "absent"]),
    name=dict(type="str"),
    definition=dict(type="raw", aliases=["resource_definition"]),
    src=dict(type="path"),
    update=dict(type="bool", default=False),
    copy_from=dict(type="str"),
    copy_stopped=dict(type="bool", default=False),
    node_selector=dict(type="dict"),
    resume_dir=dict(type="str"),
    allow_pvc_deletion=dict(type="bool", default=False),
    wait=dict(type="bool", default=False),
    wait_for=dict(type="str", choices=PHASES),
    **wait_spec(300, 2, timeout_type="int", sleep_type="int"),
)
JOB_WRITE_RULES = dict(
    mutually_exclusive=[("definition", "src", "copy_from")],
    required_if=[
        ("state", "stopped", ("name",)),
        ("state", "started", ("name",)),
        ("state", "absent", ("name",)),
        ("state", "present", ("definition", "src", "copy_from"), True),
    ],
    required_by={"copy_from": "name", "resume_dir": "copy_from", "node_selector": "resume_dir"},
)


class DefinitionError(Exception):
    """The Job in ``definition`` or ``src`` cannot be read; ``result`` is the failed task's msg (and exception).

    ``library`` names a missing Python package: the module says so in ansible's words (``missing_required_lib``).
    """

    def __init__(self, msg, exception=None, library=None):
        super().__init__(msg)
        self.result = {"msg": msg, "exception": exception} if exception else {"msg": msg}
        self.library = library


def option_failure(params):
    """The failed result for option combinations the spec's rules cannot say, else None (before any API call)."""
    if params["copy_from"] and params["state"] != "present":
        return {"failed": True, "msg": "copy_from needs state=present."}
    phase, state = params["wait_for"], params["state"]
    if phase and (state == "absent" or ((state == "stopped") != (phase == "Stopped") and state != "present")):
        return {
            "failed": True,
            "msg": "wait_for=%s cannot be reached with state=%s: wait for Stopped after state=stopped, for another "
            "phase after state=started or present, and for none after state=absent." % (phase, state),
        }
    return None


def _no_yaml():
    # Only a module process can lack PyYAML: ansible itself needs it.
    return DefinitionError("Reading the Job needs PyYAML.", exception=YAML_IMPORT_ERROR, library="PyYAML")


def load_definition(params):
    """The Job of ``definition`` or ``src``; raises DefinitionError (unreadable) or Refused (not a usable Job)."""
    definition = params["definition"]
    if params["src"]:
        if yaml is None:
            raise _no_yaml()
        try:
            with open(params["src"]) as handle:
                definition = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError) as exc:
            raise DefinitionError("Cannot read the Job from %s: %s." % (params["src"], exc)) from None
    elif isinstance(definition, str):
        if yaml is None:
            raise _no_yaml()
        try:
            definition = yaml.safe_load(definition)
        except yaml.YAMLError as exc:
            raise DefinitionError("Cannot read the Job from definition: %s." % exc) from None
    if not isinstance(definition, dict):
        raise DefinitionError("The Job definition must be a single YAML/JSON object.")
    found = []
    if definition.get("apiVersion") != jobspec.API_VERSION or definition.get("kind") != jobspec.KIND:
        found.append(
            finding(
                "job-kind",
                "The definition is %s/%s, not %s/%s."
                % (definition.get("apiVersion"), definition.get("kind"), jobspec.API_VERSION, jobspec.KIND),
                path="kind",
            )
        )
    meta = definition.setdefault("metadata", {})
    name = params["name"]
    if name and meta.get("name") and meta["name"] != name:
        found.append(finding("job-name-mismatch", "name %r differs from metadata.name %r." % (name, meta["name"])))
    meta.setdefault("name", name)
    found.extend(name_findings(meta.get("name"), [t.get("name") for t in jobspec.tasks(definition)]))
    if has_errors(found):
        raise Refused("The Job definition is not usable.", found)
    return definition


def _waiter(params, log):
    return Waiter(params["wait_timeout"], interval=params["wait_sleep"], progress=log)


def _timed_out(exc):
    return Refused(str(exc), [finding("wait-timeout", str(exc), path="wait_timeout")])


def wait_for(client, params, state, name, job, log):
    """The ``wait`` condition of ``state``: returns (tree, wait_log); (None, []) without ``wait``."""
    if state == "stopped" or (state == "present" and (job.get("spec") or {}).get("stopped")):
        check, what = stopped_check(client, name), "Job %s to stop (replicas 0, no Pod CR left)" % name
    elif state in ("started", "present"):
        check, what = started_check(client, name), "every Task of Job %s to be Running" % name
    else:
        check, what = absent_check(client, name), "Job %s and its Tasks to be deleted" % name
    waiter = _waiter(params, log)
    try:
        return waiter.wait(check, what), waiter.log
    except WaitTimeout as exc:
        raise _timed_out(exc) from None


def wait_phase(client, params, name, log):
    """Wait until the Job's phase is ``wait_for``; returns (tree, wait_log)."""
    phase = params["wait_for"]
    waiter = _waiter(params, log)
    try:
        state = waiter.wait(phase_check(client, name, phase), "Job %s to be %s" % (name, phase))
    except WaitTimeout as exc:
        raise _timed_out(exc) from None
    return read_tree(client, name, job=state["job"]), waiter.log


def write(client, params, check_mode):
    """The action of ``state`` (or the copy); returns (name, outcome, findings)."""
    state = params["state"]
    findings = []
    if params["copy_from"]:
        source = get_job(client, params["copy_from"])
        if source is None:
            raise Refused(
                "Cannot copy.",
                [finding("job-not-found", "Source Job %r does not exist." % params["copy_from"], path="copy_from")],
            )
        desired, found = copy_job(
            source,
            params["name"],
            stopped=params["copy_stopped"],
            resume_dir=params["resume_dir"],
            head_node_selector=params["node_selector"],
        )
        if has_errors(found):
            raise Refused("Refusing to copy Job %r." % params["copy_from"], found)
        findings.extend(found)
        check = check_before_write(client, desired)
        outcome = ensure_present(client, desired, update=False, check_mode=check_mode, before_write=check)
        name = params["name"]
    elif state == "present":
        desired = load_definition(params)
        name = desired["metadata"]["name"]
        check = check_before_write(client, desired)
        outcome = ensure_present(client, desired, update=params["update"], check_mode=check_mode, before_write=check)
        if outcome["action"] == "updated":
            findings.extend(replica_change_findings(outcome["before"], desired))
    elif state in ("stopped", "started"):
        name = params["name"]
        outcome = set_stopped(client, name, state == "stopped", check_mode=check_mode)
    else:
        name = params["name"]
        outcome = delete_job(client, name, allow_pvc_deletion=params["allow_pvc_deletion"], check_mode=check_mode)
    findings.extend(outcome.get("findings") or [])
    return name, outcome, findings


def job_write(client, params, check_mode=False, log=None):
    """rlark_job's result (redacted; ``warnings`` lists the warning findings); raises Refused, KubeError or
    DefinitionError."""
    state = params["state"]
    name, outcome, findings = write(client, params, check_mode)
    job = outcome["job"]
    tree, wait_log = None, []
    try:
        if params["wait"] and not check_mode and (outcome["changed"] or state != "absent"):
            tree, wait_log = wait_for(client, params, state, name, job or {}, log)
        if params["wait_for"] and not check_mode:
            tree, phase_log = wait_phase(client, params, name, log)
            wait_log = wait_log + phase_log
    except (Refused, KubeError) as exc:
        # The write is done even when the wait after it fails: the failed task still reports it.
        exc.changed = outcome["changed"]
        raise
    if state == "absent":
        after = None
        if tree is None:
            # Deleted without wait: the Tasks are still terminating; show them.
            remaining = outcome["changed"] and not check_mode
            tree = {"job": None, "tasks": list_tasks(client, name) if remaining else [], "pods": []}
    elif tree is None:
        if check_mode and outcome["action"] == "created":
            tree = {"job": job, "tasks": [], "pods": []}
        else:
            # A stop/start without wait skips the Pod CRs: they are still going away or coming up.
            with_pods = state not in ("stopped", "started") or outcome["action"] == "unchanged"
            tree = read_tree(client, name, with_pods=with_pods, job=job)
        after = tree["job"]
    else:
        after = tree["job"] or job
    result = dict(
        changed=outcome["changed"],
        action=outcome["action"],
        job=after or {},
        tasks=tree["tasks"],
        pods=tree["pods"],
        diff=make_diff(outcome["before"], after),
        findings=findings,
        wait_log=wait_log,
    )
    result = redact_result(result)
    result["warnings"] = ["%s: %s" % (f["id"], f["message"]) for f in findings if f["severity"] == WARNING]
    return result


__all__ = [
    "JOB_WRITE_RULES",
    "JOB_WRITE_SPEC",
    "DefinitionError",
    "job_write",
    "load_definition",
    "option_failure",
    "wait_for",
    "wait_phase",
]
