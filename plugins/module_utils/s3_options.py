# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The object-storage target of the checkpoint modules (rlark_ckpt_gate, rlark_ckpt_tree), and what they need.

Kept apart from module_options: the checkpoint modules run on nodes and must not import the API
client's auth and HTTP code (about 15 ms of every gate run) for an option table.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import env_fallback

S3_ARG_SPEC = dict(
    bucket=dict(type="str", required=True),
    prefix=dict(type="str", default=""),
    endpoint_url=dict(type="str", fallback=(env_fallback, ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"])),
    region=dict(type="str", fallback=(env_fallback, ["AWS_REGION", "AWS_DEFAULT_REGION"])),
    access_key=dict(type="str", no_log=False, fallback=(env_fallback, ["AWS_ACCESS_KEY_ID"])),
    secret_key=dict(type="str", no_log=True, fallback=(env_fallback, ["AWS_SECRET_ACCESS_KEY"])),
)

# The backup of a hostPath checkpoint (rlark_ckpt_gate ``backup``; checkpoint/backup.py decides).
BACKUP_ARG_SPEC = dict(
    path=dict(type="path"),
    host=dict(type="str"),
    s3=dict(type="dict", options=S3_ARG_SPEC),
    required=dict(type="bool", default=False),
    make=dict(type="bool", default=False),
    batch_files=dict(type="int", default=16),
    listing=dict(type="dict"),
)


def boto3_missing(module):
    """The message when ``module`` (an FQCN) cannot import boto3 on its host: which host, and the fix."""
    return (
        "Failed to import the required Python library (boto3) on the host that runs %s. "
        "Install it there (pip install boto3), or point ansible_python_interpreter at a Python that has it." % module
    )
