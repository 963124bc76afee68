# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for rlark.ops.rlark_resume_sentinel: watch a resumed Job's first steps on the controller
(module_utils/resume_sentinel.py decides and stops; this only reads the options and the old run's log)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible_collections.rlark.ops.plugins.module_utils import continuity
from ansible_collections.rlark.ops.plugins.module_utils.joblogs import (
    LOG_SOURCE_SPEC,
    LogSourceError,
    cluster_of,
    clusters_of,
    head_pod_name,
    read_logs,
)
from ansible_collections.rlark.ops.plugins.module_utils.jobs import read_tree
from ansible_collections.rlark.ops.plugins.module_utils.kube import client_from_params
from ansible_collections.rlark.ops.plugins.module_utils.module_options import argument_spec
from ansible_collections.rlark.ops.plugins.module_utils.module_runner import FAILURES, call_counts, failure_result
from ansible_collections.rlark.ops.plugins.module_utils.resume_sentinel import watch
from ansible_collections.rlark.ops.plugins.module_utils.wait_options import wait_spec

SPEC = dict(
    **LOG_SOURCE_SPEC,
    clusters=dict(type="dict", default={}),
    namespace=dict(type="str"),
    name=dict(type="str", required=True),
    original=dict(type="str", required=True),
    step=dict(type="int", required=True),
    resume_dir=dict(type="str", required=True),
    head_task=dict(type="str", required=True),
    original_head_task=dict(type="str"),
    records_dir=dict(type="path", required=True),
    # The wait in the one wait vocabulary (module_utils/wait_options); timeout and interval are the older names.
    **wait_spec(180, 0.25, older=("timeout", "interval")),
)


def old_run(p):
    """The old run's parsed metric tables from its newest stop record's head-log export."""
    head = head_pod_name(p["original"], p["original_head_task"] or p["head_task"])
    found = continuity.old_run_log(p["records_dir"], p["original"], head)
    if found is None:
        return {"record": None, "file": None, "steps": [], "last_step": None}
    steps = continuity.parse_metrics(found["text"])
    return {
        "record": found["record"],
        "file": found["file"],
        "steps": continuity.as_list(steps),
        "last_step": max(steps) if steps else None,
    }


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        p = self.validate_argument_spec(argument_spec=argument_spec(**SPEC))[1]
        reference = old_run(p)
        result["old_run"] = reference
        if self._task.check_mode:
            result.update(changed=False, stopped=False, decided=False, findings=[], msg="check mode: nothing watched")
            return result
        head = head_pod_name(p["name"], p["head_task"])

        def read():
            clusters = p["clusters"]
            if p["log_source"] == "kubeconfig" and not clusters:
                # Each pod is read from the cluster its Task runs in: known once the controller placed the Task.
                clusters = clusters_of(read_tree(client, p["name"], with_pods=False))
                if cluster_of(head, clusters) is None:
                    return {}
            return read_logs(
                p["log_source"],
                p["name"],
                pod_names=[head],
                logs_dir=p["logs_dir"] or None,
                gateway_url=p["gateway_url"] or None,
                kubeconfig=p["data_plane_kubeconfig"] or None,
                kubeconfigs=p["data_plane_kubeconfigs"],
                clusters=clusters,
                namespace=p["namespace"] or None,
            )

        client = None
        try:
            client = client_from_params(p, timeout=p["wait_timeout"] + 60)
            result.update(
                watch(
                    client,
                    p["name"],
                    p["original"],
                    p["step"],
                    p["resume_dir"],
                    reference["steps"],
                    read,
                    head,
                    p["wait_timeout"],
                    interval=p["wait_sleep"],
                )
            )
        except FAILURES as exc:
            result.update(failure_result(exc, client))
        except (LogSourceError, ValueError) as exc:
            result.update(failed=True, changed=False, msg="rlark_resume_sentinel: %s" % exc)
        finally:
            if client is not None:
                result.update(call_counts(client))
                client.close()
        # What the resume-sentinel record keeps: the decision, and the old run's reference without its tables.
        result["record"] = {k: v for k, v in result.items() if k not in ("old_run", "invocation")}
        result["record"]["old_run"] = dict(reference, steps=len(reference["steps"]))
        return result
