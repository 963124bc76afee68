# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    # The object-storage target of the checkpoint modules (rlark_ckpt_gate, rlark_ckpt_tree).
    DOCUMENTATION = r"""
options:
  s3:
    description:
      - The checkpoint directory in an S3-compatible bucket, read page by page over the whole prefix.
      - Mutually exclusive with O(path).
    type: dict
    suboptions:
      bucket:
        description: Bucket name.
        type: str
        required: true
      prefix:
        description:
          - Key prefix of the checkpoint directory (for the gate the checkpoints root or one C(global_step_N)
            directory), without the bucket.
        type: str
        default: ''
      endpoint_url:
        description:
          - URL of an S3-compatible endpoint; AWS when unset.
          - Falls back to E(AWS_ENDPOINT_URL_S3), then E(AWS_ENDPOINT_URL).
        type: str
      region:
        description:
          - Region name. Falls back to E(AWS_REGION), then E(AWS_DEFAULT_REGION).
        type: str
      access_key:
        description:
          - Access key id. Falls back to E(AWS_ACCESS_KEY_ID). Reported in error messages; the secret never is.
        type: str
      secret_key:
        description:
          - Secret access key. Falls back to E(AWS_SECRET_ACCESS_KEY).
        type: str
"""
