# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-memory S3 client for the unit tests of the S3 reader (the integration tests run versitygw)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import io

OLD = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
# The server's clock (each listing's Date header): two hours after OLD.
SERVER_NOW = datetime.datetime(2026, 1, 1, 2, 0, 0, tzinfo=datetime.timezone.utc)


class FakeS3:
    """ListObjectsV2 in pages of ``page`` keys with opaque continuation tokens; ranged GETs. Objects were
    modified at OLD unless ``modified`` (key: datetime) says otherwise."""

    def __init__(self, objects, page=100, failures=(), modified=None):
        self.objects = dict(objects)
        self.modified = modified or {}
        self.page = page
        self.failures = list(failures)
        self.list_calls = 0

    def list_objects_v2(self, Bucket, Prefix, MaxKeys, ContinuationToken=None, Delimiter=None):
        self.list_calls += 1
        if self.failures:
            raise self.failures.pop(0)
        rows = []  # (sort key, is common prefix)
        seen = set()
        for k in sorted(k for k in self.objects if k.startswith(Prefix)):
            rest = k[len(Prefix) :]
            if Delimiter and Delimiter in rest:
                common = Prefix + rest.split(Delimiter, 1)[0] + Delimiter
                if common not in seen:
                    seen.add(common)
                    rows.append((common, True))
            else:
                rows.append((k, False))
        start = int(ContinuationToken[3:]) if ContinuationToken else 0
        chunk = rows[start : start + min(self.page, MaxKeys)]
        out = {
            "Contents": [
                {"Key": k, "Size": len(self.objects[k]), "LastModified": self.modified.get(k, OLD)}
                for k, common in chunk
                if not common
            ],
            "CommonPrefixes": [{"Prefix": k} for k, common in chunk if common],
            "IsTruncated": start + len(chunk) < len(rows),
            "ResponseMetadata": {"HTTPHeaders": {"date": SERVER_NOW.strftime("%a, %d %b %Y %H:%M:%S GMT")}},
        }
        if out["IsTruncated"]:
            out["NextContinuationToken"] = "tok%d" % (start + len(chunk))
        return out

    def get_object(self, Bucket, Key, Range=None):
        data = self.objects[Key]
        if Range:
            n = int(Range.split("-")[-1])
            part = data[-n:]
            return {
                "Body": io.BytesIO(part),
                "ContentRange": "bytes %d-%d/%d" % (len(data) - len(part), len(data) - 1, len(data)),
            }
        return {"Body": io.BytesIO(data)}
