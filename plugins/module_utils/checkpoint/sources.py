# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checkpoint source a gate option set names: a local path, or an S3 prefix (boto3 imported only then)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.local import LocalSource


def source_from_params(params):
    """``params`` holds ``path`` or ``s3`` (bucket, prefix, endpoint_url, region, access_key, secret_key)."""
    if params["path"]:
        return LocalSource(params["path"])
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.s3 import S3Source

    s3 = params["s3"]
    return S3Source(
        s3["bucket"],
        prefix=s3["prefix"],
        endpoint_url=s3["endpoint_url"],
        region=s3["region"],
        access_key=s3["access_key"],
        secret_key=s3["secret_key"],
    )
