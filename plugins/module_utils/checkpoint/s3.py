# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checkpoints in S3-compatible object storage: stream ListObjectsV2, aggregate per step.

Pages are consumed as they arrive (continuation tokens until ``IsTruncated`` is false, never one
page or 100 keys); each object feeds the per-step counters at once. Throttling, 5xx and
connection resets are retried with full-jitter exponential backoff; auth failures are reported
with the access key id only. boto3 is imported when an S3 source is created, never on a node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from contextlib import closing

from ansible_collections.rlark.ops.plugins.module_utils import step_names
from ansible_collections.rlark.ops.plugins.module_utils.backoff import Retrying
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.step_listing import StepFacts, shallow_facts

RETRY_CODES = frozenset(
    (
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TooManyRequests",
        "RequestTimeout",
        "InternalError",
        "ServiceUnavailable",
        "503",
        "500",
        "502",
        "504",
    )
)
AUTH_CODES = frozenset(
    (
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "ExpiredToken",
        "InvalidToken",
        "InvalidSecurity",
        "AuthorizationHeaderMalformed",
        "403",
        "Forbidden",
        "XAdminUserNotFound",  # versitygw: unknown access key id (HTTP 404)
    )
)
MISSING_BUCKET_CODES = frozenset(("NoSuchBucket",))
PAGE_SIZE = 1000
ITER_PROBE_KEYS = 8


def import_boto3():
    """(boto3, botocore.config.Config, botocore.exceptions) or raise ImportError."""
    import boto3
    from botocore import exceptions
    from botocore.config import Config

    return boto3, Config, exceptions


def normalize_prefix(prefix):
    prefix = (prefix or "").lstrip("/")
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    return prefix


def error_code(exc):
    response = getattr(exc, "response", None) or {}
    code = str((response.get("Error") or {}).get("Code") or "")
    status = str((response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or "")
    return code, status


class S3Source:
    """A checkpoints root prefix or one ``global_step_N/`` prefix in a bucket."""

    kind = "s3"

    def __init__(
        self,
        bucket,
        prefix="",
        endpoint_url=None,
        region=None,
        access_key=None,
        secret_key=None,
        session_token=None,
        client=None,
        retrying=None,
    ):
        if not bucket:
            raise GateError("s3.bucket is required")
        self.bucket = bucket
        self.endpoint_url = endpoint_url
        self.access_key = access_key
        prefix = normalize_prefix(prefix)
        last = prefix.rstrip("/").rpartition("/")[2]
        self.single_step = last if last and step_names.is_step_like(last) else None
        self.root = prefix[: len(prefix) - len(last) - 1] if self.single_step else prefix
        self.others = []
        self.retrying = retrying or Retrying()
        self._now = None
        self._exceptions = None
        if client is None:
            boto3, config_cls, exceptions = import_boto3()
            self._exceptions = exceptions
            config = config_cls(
                retries={"total_max_attempts": 1},
                s3={"addressing_style": "path"} if endpoint_url else {},
                connect_timeout=10,
                read_timeout=60,
            )
            session = boto3.session.Session(
                aws_access_key_id=access_key or None,
                aws_secret_access_key=secret_key or None,
                aws_session_token=session_token or None,
                region_name=region or None,
            )
            client = session.client("s3", endpoint_url=endpoint_url or None, config=config)
        self.client = client

    # ------------------------------------------------------------ naming

    def uri(self, key=""):
        return "s3://%s/%s" % (self.bucket, key)

    def describe(self):
        return self.uri(self.root + (self.single_step + "/" if self.single_step else ""))

    def location(self, step_name):
        return self.uri("%s%s/" % (self.root, step_name))

    def now(self):
        return self._now if self._now is not None else time.time()

    # ------------------------------------------------------------ errors

    def _retryable(self, exc):
        code, status = error_code(exc)
        if code in RETRY_CODES or status.startswith("5") or status == "429":
            return True
        name = type(exc).__name__
        return name in (
            "EndpointConnectionError",
            "ConnectionClosedError",
            "ReadTimeoutError",
            "ConnectTimeoutError",
            "ResponseStreamingError",
            "ProtocolError",
        )

    def _explain(self, exc, what):
        """Turn a botocore error into one message naming the bucket, never the secret."""
        code, status = error_code(exc)
        name = type(exc).__name__
        where = " at %s" % self.endpoint_url if self.endpoint_url else ""
        if code in AUTH_CODES or status == "403":
            key = self.access_key or "from the environment/instance profile"
            return GateError(
                "S3 refused the credentials for bucket '%s'%s (%s, access key %s): check s3.access_key/s3.secret_key "
                "or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY" % (self.bucket, where, code or status, key)
            )
        if name in ("NoCredentialsError", "PartialCredentialsError"):
            return GateError(
                "no S3 credentials for bucket '%s': set s3.access_key/s3.secret_key or AWS_ACCESS_KEY_ID/"
                "AWS_SECRET_ACCESS_KEY" % self.bucket
            )
        if code in MISSING_BUCKET_CODES or (status == "404" and code in ("", "404", "NotFound") and what == "list"):
            return GateError("S3 bucket '%s' does not exist%s" % (self.bucket, where))
        if self._retryable(exc):
            return GateError(
                "S3 endpoint%s kept failing for bucket '%s' after %d attempts: %s"
                % (where, self.bucket, self.retrying.attempts, code or name)
            )
        message = ((getattr(exc, "response", None) or {}).get("Error") or {}).get("Message") or str(exc)
        return GateError("S3 %s of %s failed: %s %s" % (what, self.describe(), code or name, message[:200]))

    def _call(self, what, fn, **kwargs):
        try:
            return self.retrying(fn, self._retryable, **kwargs)
        except Exception as exc:
            if isinstance(exc, GateError):
                raise
            if type(exc).__module__.startswith("botocore") or getattr(exc, "response", None) is not None:
                raise self._explain(exc, what) from None
            raise

    # ------------------------------------------------------------ listing

    def pages(self, prefix, delimiter=None, max_keys=PAGE_SIZE, first_only=False):
        """Every ListObjectsV2 page under ``prefix``, following continuation tokens to the end."""
        kwargs = {"Bucket": self.bucket, "Prefix": prefix, "MaxKeys": max_keys}
        if delimiter:
            kwargs["Delimiter"] = delimiter
        while True:
            page = self._call("list", self.client.list_objects_v2, **kwargs)
            if self._now is None:
                self._now = _server_time(page)
            yield page
            token = page.get("NextContinuationToken")
            if first_only or not page.get("IsTruncated") or not token:
                return
            kwargs["ContinuationToken"] = token

    def step_names(self):
        """The ``global_step_*`` prefixes under the root: one delimiter listing (a page per 1000 steps)."""
        if self.single_step:
            return [self.single_step]
        names = []
        root_len = len(self.root)
        for page in self.pages(self.root, delimiter="/"):
            for common in page.get("CommonPrefixes") or ():
                name = common["Prefix"][root_len:].rstrip("/")
                (names if step_names.is_step_like(name) else self.others).append(name)
            for obj in page.get("Contents") or ():
                self.others.append(obj["Key"][root_len:])
        return names

    def head_start(self, name):
        """Nothing to start ahead: a step's objects are listed page by page, its markers read when checked."""

    def end_head_start(self):
        """Nothing was started ahead (see :meth:`head_start`)."""

    def walk(self, name):
        for facts in self.scan(self.root + name + "/"):
            return facts
        return StepFacts(name)

    def probe(self, name):
        return shallow_facts(self, name)

    def _listing(self, prefix, max_keys=PAGE_SIZE, first_only=False):
        files, dirs = [], []
        for page in self.pages(prefix, delimiter="/", max_keys=max_keys, first_only=first_only):
            dirs.extend(c["Prefix"][len(prefix) :].rstrip("/") for c in page.get("CommonPrefixes") or ())
            files.extend(o["Key"][len(prefix) :] for o in page.get("Contents") or () if o["Key"] != prefix)
        return files, dirs

    def list_dir(self, name, rel):
        return self._listing("%s%s/%s" % (self.root, name, rel + "/" if rel else ""))

    def iter_dir_names(self, name, rel):
        # keys come sorted: ".metadata", "__*.distcp", "common.pt", "metadata.json", "mp_rank_*/" - a few decide
        return self._listing("%s%s/%s/" % (self.root, name, rel), max_keys=ITER_PROBE_KEYS, first_only=True)

    def scan(self, base=None):
        """Yield one :class:`StepFacts` per ``global_step_*`` prefix, aggregated while pages stream in."""
        if base is None:
            base = self.root + (self.single_step + "/" if self.single_step else "")
        root_len = len(self.root)
        current = None
        seen_others = set()
        for page in self.pages(base):
            for obj in page.get("Contents") or ():
                rel = obj["Key"][root_len:]
                step, sep, rest = rel.partition("/")
                if not sep or not rest or not step_names.is_step_like(step):
                    if step not in seen_others:
                        seen_others.add(step)
                        self.others.append(step)
                    continue
                if current is None or current.name != step:
                    if current is not None:
                        yield current
                    current = StepFacts(step)
                if rest.endswith("/"):
                    current.dirs.add(rest.rstrip("/"))  # a "directory marker" object
                    continue
                current.add_file(rest, obj["Size"], obj["LastModified"].timestamp())
                parent = rest.rpartition("/")[0]
                dirs = current.dirs
                while parent and parent not in dirs:
                    dirs.add(parent)
                    parent = parent.rpartition("/")[0]
        if current is not None:
            yield current

    # ------------------------------------------------------------ payloads

    def _key(self, step_name, rel):
        return "%s%s/%s" % (self.root, step_name, rel)

    def read_tail(self, step_name, rel, nbytes):
        key = self._key(step_name, rel)
        try:
            resp = self.retrying(
                self.client.get_object, self._retryable, Bucket=self.bucket, Key=key, Range="bytes=-%d" % nbytes
            )
        except Exception as exc:
            if error_code(exc)[0] == "InvalidRange":  # an empty object has no last bytes
                return b"", 0
            if getattr(exc, "response", None) is None:
                raise
            raise self._explain(exc, "ranged GET of %s" % self.uri(key)) from None
        body = resp["Body"].read()
        total = str(resp.get("ContentRange") or "").rpartition("/")[2]
        return body, int(total) if total.isdigit() else len(body)

    def list_files(self, name):
        """[(relative path, size)] of every object of a step (for the integrity manifest)."""
        prefix = "%s%s/" % (self.root, name)
        out = []
        for page in self.pages(prefix):
            out.extend((o["Key"][len(prefix) :], o["Size"]) for o in page.get("Contents") or () if o["Key"][-1] != "/")
        return out

    def open_file(self, name, rel):
        resp = self._call("GET", self.client.get_object, Bucket=self.bucket, Key=self._key(name, rel))
        return closing(resp["Body"])

    def read_all(self, step_name, rel, limit):
        resp = self._call("GET", self.client.get_object, Bucket=self.bucket, Key=self._key(step_name, rel))
        return resp["Body"].read(limit)


def _server_time(page):
    """The server's clock from the response Date header: the quiet period must not depend on local skew."""
    headers = (page.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
    date = headers.get("date")
    if date:
        from email.utils import parsedate_to_datetime

        try:
            return parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError):
            return None
    return None
