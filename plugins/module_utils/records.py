# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Team records as YAML files: ``<records_dir>/<job>/<UTC timestamp>/<kind>.yml``, secrets masked.

Seed 001 asks for a run record linking the manifest version, profile version, Job name and the
reviewed Job YAML; seed 000 for stop and resume records. ``write_record`` is the one writer all of
them use: it redacts, writes atomically (temp file + rename) and never overwrites another record.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os
import re
import tempfile

from ansible_collections.rlark.ops.plugins.module_utils.manifest import dump_yaml
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact

_SAFE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
KIND_PATTERN = re.compile(r"^[a-z0-9][-a-z0-9_]*$")


def utc_stamp(now=None):
    """``20250102T030405Z``: sortable, filesystem-safe, UTC."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ")


def record_dir(records_dir, job, stamp):
    if not isinstance(job, str) or not _SAFE.match(job):
        raise ValueError("job name %r is not a safe directory name" % (job,))
    if not re.match(r"^[0-9]{8}T[0-9]{6}Z$", str(stamp)):
        raise ValueError("timestamp %r is not a UTC stamp like 20250102T030405Z" % (stamp,))
    return os.path.join(os.path.abspath(os.path.expanduser(records_dir)), job, stamp)


def record_document(kind, data, job=None, stamp=None):
    """The redacted YAML text of one record (also usable with ansible.builtin.copy content)."""
    header = {"record": kind}
    if job:
        header["job"] = job
    if stamp:
        header["timestamp"] = stamp
    header["data"] = data
    return dump_yaml(redact(header))


def write_record(records_dir, job, kind, data, stamp=None, wrap=True):
    """Write one redacted record and return its path; refuses to overwrite an existing record.

    ``wrap=False`` writes ``data`` alone (e.g. the reviewed Job YAML, usable with kubectl).
    """
    if not KIND_PATTERN.match(str(kind)):
        raise ValueError("record kind %r must be lower-case letters, digits, '-' or '_'" % (kind,))
    stamp = stamp or utc_stamp()
    directory = record_dir(records_dir, job, stamp)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "%s.yml" % kind)
    if os.path.exists(path):
        raise ValueError("record %s already exists" % path)
    handle, tmp = tempfile.mkstemp(prefix=".%s." % kind, dir=directory)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(record_document(kind, data, job, stamp) if wrap else dump_yaml(redact(data)))
        os.rename(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_preflight_records(records_dir, result, stamp=None):
    """Preflight report (+ the reviewed Job YAML when one was offered); returns the written paths."""
    job = result.get("job_name") or "unnamed"
    stamp = stamp or utc_stamp()
    report = {key: result.get(key) for key in ("ok", "job_name", "manifest_version", "profile_version", "findings")}
    paths = [write_record(records_dir, job, "preflight", report, stamp)]
    if result.get("job") is not None:
        paths.append(write_record(records_dir, job, "job", result["job"], stamp, wrap=False))
    return paths
