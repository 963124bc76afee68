# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One rlark_ckpt_tree task on validated parameters: the snapshot, its summary and steps, the diff when asked.

The module and its action plugin (which runs it in the controller's worker on a local connection) both
return :func:`tree_task`'s result unchanged; a failed result says why in ``msg``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.s3 import import_boto3
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.sources import source_from_params
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.tree import (
    local_tree,
    s3_tree,
    step_names,
    tree_diff,
    tree_summary,
)
from ansible_collections.rlark.ops.plugins.module_utils.s3_options import S3_ARG_SPEC, boto3_missing

TREE_SPEC = dict(
    path=dict(type="path"),
    s3=dict(type="dict", options=S3_ARG_SPEC),
    sha256=dict(type="bool", default=False),
    compare_to=dict(type="dict"),
)
TREE_RULES = dict(mutually_exclusive=[("path", "s3")], required_one_of=[("path", "s3")])


def tree_task(params):
    """rlark_ckpt_tree's result for ``params`` (never writes anything)."""
    if not params["path"]:
        try:
            import_boto3()
        except ImportError as exc:
            return {
                "failed": True,
                "changed": False,
                "msg": boto3_missing("rlark.ops.rlark_ckpt_tree"),
                "exception": str(exc),
            }
    try:
        tree = (
            local_tree(params["path"], sha256=params["sha256"])
            if params["path"]
            else s3_tree(source_from_params(params))
        )
    except GateError as exc:
        return {"failed": True, "changed": False, "msg": str(exc)}
    result = dict(changed=False, exists=tree["exists"], tree=tree, summary=tree_summary(tree), steps=step_names(tree))
    if params["compare_to"] is not None:
        result["diff"] = tree_diff(params["compare_to"], tree)
    return result


__all__ = ["TREE_RULES", "TREE_SPEC", "tree_task"]
