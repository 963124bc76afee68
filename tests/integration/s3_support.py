# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""boto3 against the sandbox's S3 server: the independent reader and writer of test objects.

Imports nothing of the collection, so a test that checks the collection's S3 writes with it stays
independent of the code under test.
"""

import boto3


def s3_client(sandbox):
    return boto3.client(
        "s3",
        endpoint_url=sandbox.s3_endpoint,
        aws_access_key_id=sandbox.s3_access_key,
        aws_secret_access_key=sandbox.s3_secret_key,
        region_name="us-east-1",
    )
