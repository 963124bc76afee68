# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rlark_job_info's options and core: the Jobs a name or selectors pick, each with its Tasks, Pod CRs and Nodes.

One core for the module and for the action plugin that runs it in the worker (``plugin_utils/controller_run.py``),
and for rlark_job_running's reads: the result is the same wherever it runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils import field_selectors
from ansible_collections.rlark.ops.plugins.module_utils.jobs import JOBS, get_job, read_many
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact_result

JOB_INFO_SPEC = dict(
    name=dict(type="str"),
    label_selectors=dict(type="list", elements="str", default=[]),
    field_selectors=dict(type="list", elements="str", default=[]),
    nodes=dict(type="bool", default=True),
    timeout=dict(type="int", default=120),
)


def selected_jobs(client, params, server_fields, local_fields):
    """The Jobs ``params`` name or select: the server filters what it can, the rest is matched here."""
    selector = ",".join(params["label_selectors"]) or None
    if params["name"]:
        job = get_job(client, params["name"])
        jobs = [job] if job is not None else []
        if jobs and (selector or server_fields):
            # Filter one named Job by the selectors the same way the server would.
            name_field = "metadata.name=%s" % params["name"]
            fields = name_field + ("," + server_fields if server_fields else "")
            jobs = client.list(JOBS, label_selector=selector, field_selector=fields)[0]
    else:
        jobs = client.list(JOBS, label_selector=selector, field_selector=server_fields)[0]
    return [j for j in jobs if field_selectors.matches(j, local_fields)]


def job_info(client, params):
    """rlark_job_info's result (redacted); a field selector it cannot read fails before any API call."""
    try:
        server_fields, local_fields = field_selectors.split(field_selectors.parse(params["field_selectors"]))
    except field_selectors.SelectorError as exc:
        return {"failed": True, "changed": False, "msg": str(exc)}
    jobs = selected_jobs(client, params, server_fields, local_fields)
    resources = read_many(client, jobs, with_nodes=params["nodes"]) if jobs else []
    return dict(changed=False, **redact_result({"resources": resources}))


__all__ = ["JOB_INFO_SPEC", "job_info", "selected_jobs"]
