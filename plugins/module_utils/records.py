# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Team records as YAML files: ``<records_dir>/<job>/<run id>/<kind>.yml``, secrets masked.

Seed 001 asks for a run record linking the manifest version, profile version, Job name and the
reviewed Job YAML; seed 000 for stop and resume records. One playbook run has one **run id**
(``20250102T030405Z-migrate-3fa9c1``, sortable, unique), so the preflight, run and verify records of
a migrate (or the stop, resume and verify records) share one directory per Job, and
``<records_dir>/_index/<job>.yml`` lists every run of that Job with its outcomes. Refused inputs are
recorded under ``<records_dir>/invalid-inputs/`` and never mix with the Job's real runs.

``write_record`` is the one writer: it redacts, strips API noise (managedFields), writes ISO-8601 UTC
times, and creates the file atomically without ever replacing another record (a hard link of a temp
file fails when the name exists, where an ``exists`` check followed by a rename would race).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import getpass
import os
import random
import re
import socket
import string
import tempfile

from ansible_collections.rlark.ops.plugins.module_utils.manifest import dump_yaml, parse_text
from ansible_collections.rlark.ops.plugins.module_utils.redact import redact

_SAFE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
KIND_PATTERN = re.compile(r"^[a-z0-9][-a-z0-9_]*$")
RUN_ID_PATTERN = re.compile(r"^[0-9]{8}T[0-9]{6}Z(-[a-z0-9][-a-z0-9]*)?$")
INVALID_INPUTS = "invalid-inputs"
INDEX_DIR = "_index"  # not a valid Job name, and outside the Job's run directories
DEFAULT_MODE = 0o640
# Server bookkeeping that tells a reader nothing about the run.
_NOISE_METADATA = ("managedFields",)
_NOISE_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def utc_stamp(now=None):
    """``20250102T030405Z``: sortable, filesystem-safe, UTC."""
    return (now or utc_now()).strftime("%Y%m%dT%H%M%SZ")


def iso_utc(value=None):
    """``2025-01-02T03:04:05Z`` from a datetime or epoch seconds (now when None)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = datetime.datetime.fromtimestamp(value, datetime.timezone.utc)
    return (value or utc_now()).astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(kind="run", now=None, rand=random):
    """A run id naming when and what: ``20250102T030405Z-migrate-3fa9c1`` (the suffix keeps two runs apart)."""
    kind = re.sub(r"[^a-z0-9-]+", "-", str(kind).lower()).strip("-") or "run"
    suffix = "".join(rand.choice(string.ascii_lowercase + string.digits) for _i in range(6))
    return "%s-%s-%s" % (utc_stamp(now), kind, suffix)


def record_dir(records_dir, job, run_id):
    if not isinstance(job, str) or not _SAFE.match(job):
        raise ValueError("job name %r is not a safe directory name" % (job,))
    if not RUN_ID_PATTERN.match(str(run_id)):
        raise ValueError("run id %r is not like 20250102T030405Z or 20250102T030405Z-migrate-3fa9c1" % (run_id,))
    return os.path.join(os.path.abspath(os.path.expanduser(records_dir)), job, run_id)


def collection_version():
    """The rlark.ops version from the installed MANIFEST.json or the checkout's galaxy.yml."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name in ("MANIFEST.json", "galaxy.yml"):
        try:
            with open(os.path.join(root, name)) as handle:
                data = parse_text(handle.read(), name)
        except Exception:  # a record is still worth writing without the version
            continue
        version = (data.get("collection_info") or data).get("version")
        if version:
            return str(version)
    return "unknown"


def acting_identity(api_user=None, api_identity=None):
    """Who ran it: the controller user and host, and the API identity (``{username, groups}`` of a
    SelfSubjectReview, else ``api_user``) when the caller knows it."""
    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry in some containers
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    out = {"user": user, "host": socket.gethostname()}
    if api_user:
        out["api_user"] = api_user
    if (api_identity or {}).get("username"):
        out["api_user"] = api_identity["username"]
        out["api_groups"] = list(api_identity.get("groups") or [])
    return out


def file_mode(value):
    """0640 from ``'0640'``, ``'640'``, ``0o640`` or 416; ValueError otherwise."""
    if value in (None, ""):
        return DEFAULT_MODE
    mode = value if isinstance(value, int) else int(str(value), 8)
    if not 0 <= mode <= 0o777:
        raise ValueError("%r is not a file mode such as '0640'" % (value,))
    return mode


def _epoch_seconds_key(key):
    # ``*mtime`` in epoch seconds reads better as ISO-8601; ``*_ns`` values (a tree proof compares them to the
    # nanosecond) stay exact integers.
    key = str(key).lower()
    return "mtime" in key and not key.endswith("_ns")


def without_noise(data):
    """A copy without managedFields and last-applied annotations; epoch ``*mtime`` values as ISO-8601 UTC."""
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            if key in _NOISE_METADATA or key in _NOISE_ANNOTATIONS:
                continue
            if _epoch_seconds_key(key) and isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = iso_utc(value)
            else:
                out[key] = without_noise(value)
        return out
    if isinstance(data, (list, tuple)):
        return [without_noise(v) for v in data]
    return data


def record_header(kind, job=None, run_id=None, outcome=None, identity=None, now=None):
    header = {"record": kind}
    if job:
        header["job"] = job
    if run_id:
        header["run_id"] = run_id
        header["timestamp"] = run_id[:16]
    header["time"] = iso_utc(now)
    header["collection_version"] = collection_version()
    header["identity"] = identity or acting_identity()
    if outcome:
        header["outcome"] = outcome
    return header


def record_document(kind, data, job=None, stamp=None, outcome=None, identity=None):
    """The redacted YAML text of one record (also usable with ansible.builtin.copy content)."""
    header = record_header(kind, job, stamp, outcome, identity)  # written here, nothing to mask
    header["data"] = redact(without_noise(data))
    return dump_yaml(header)


def fsync_dir(directory):
    """Make a directory entry durable (a created or renamed file survives a crash with its name)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(directory, name, text, mode):
    """A hidden temp file beside ``name`` holding ``text`` on disk (fsync); removed again when writing fails."""
    handle, tmp = tempfile.mkstemp(prefix=".%s." % name, dir=directory)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def replace_record(path, text, mode=DEFAULT_MODE):
    """Replace the record at ``path`` atomically and durably: a reader sees the old or the new text, never a
    part (only a record's own transaction replaces it: a stop record going from pending to its outcome)."""
    directory, name = os.path.split(path)
    tmp = _write_temp(directory, name, text, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    fsync_dir(directory)
    return path


def _create_exclusive(directory, name, text, mode):
    """Write ``text`` to ``directory/name`` atomically and durably; ValueError when the name exists (never
    replaced)."""
    path = os.path.join(directory, name)
    tmp = _write_temp(directory, name, text, mode)
    try:
        try:
            os.link(tmp, path)  # fails with EEXIST instead of replacing, unlike rename
        except FileExistsError:
            raise ValueError("record %s already exists" % path) from None
        except OSError:  # a file system without hard links: exclusive create, then write
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            except FileExistsError:
                raise ValueError("record %s already exists" % path) from None
            try:
                with os.fdopen(fd, "w") as out:
                    out.write(text)
            except BaseException:
                os.unlink(path)  # no partial record
                raise
    finally:
        os.unlink(tmp)
    fsync_dir(directory)
    return path


def _make_dirs(directory, mode):
    # group-readable records need traversable directories (execute bit where read is given)
    dir_mode = mode | ((mode & 0o444) >> 2)
    existed = os.path.isdir(directory)
    os.makedirs(directory, mode=dir_mode, exist_ok=True)
    if not existed:
        os.chmod(directory, dir_mode)  # makedirs' mode is cut by the umask


def write_record(records_dir, job, kind, data, stamp=None, wrap=True, outcome=None, mode=DEFAULT_MODE, identity=None):
    """Write one redacted record and return its path; refuses to overwrite an existing record.

    ``stamp`` is the run id (or a bare UTC stamp); ``wrap=False`` writes ``data`` alone (e.g. the
    reviewed Job YAML, usable with kubectl). ``mode`` is the file mode (default 0640, group-readable).
    """
    if not KIND_PATTERN.match(str(kind)):
        raise ValueError("record kind %r must be lower-case letters, digits, '-' or '_'" % (kind,))
    run_id = stamp or new_run_id(kind)
    directory = record_dir(records_dir, job, run_id)
    _make_dirs(directory, mode)
    if wrap:
        text = record_document(kind, data, job, run_id, outcome, identity)
    else:
        text = dump_yaml(redact(without_noise(data)))
    path = _create_exclusive(directory, "%s.yml" % kind, text, mode)
    if job != INVALID_INPUTS:
        write_index(records_dir, job, mode)
    return path


def run_index(records_dir, job):
    """Every run of ``job``: ``[{run_id, time, records: {kind: outcome or None}}]``, oldest first."""
    base = os.path.join(os.path.abspath(os.path.expanduser(records_dir)), job)
    runs = []
    for run_id in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        directory = os.path.join(base, run_id)
        if not os.path.isdir(directory) or not RUN_ID_PATTERN.match(run_id):
            continue
        entry = {"run_id": run_id, "time": None, "records": {}}
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".yml") or name.startswith("."):
                continue
            header = _header_of(os.path.join(directory, name))
            entry["records"][name[:-4]] = header.get("outcome")
            # The run's time is its first record that has one (job.yml, sorted first, is unwrapped).
            entry["time"] = entry["time"] or header.get("time")
        runs.append(entry)
    return runs


def _header_of(path):
    try:
        with open(path) as handle:
            data = parse_text(handle.read(), path)
    except Exception:  # an unwrapped record (job.yml) or a file being written
        return {}
    return data if isinstance(data, dict) and "record" in data else {}


def write_index(records_dir, job, mode=DEFAULT_MODE):
    """Rewrite ``<records_dir>/_index/<job>.yml`` from the run directories (atomic replace: any writer
    rebuilds it from the same files, so two runs finishing together still leave a complete index)."""
    base = os.path.join(os.path.abspath(os.path.expanduser(records_dir)), INDEX_DIR)
    _make_dirs(base, mode)
    text = dump_yaml({"job": job, "updated": iso_utc(), "runs": run_index(records_dir, job)})
    handle, tmp = tempfile.mkstemp(prefix=".%s." % job, dir=base)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, os.path.join(base, "%s.yml" % job))
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return os.path.join(base, "%s.yml" % job)


def write_preflight_records(records_dir, result, stamp=None, mode=DEFAULT_MODE):
    """Preflight report (+ the reviewed Job YAML when one was offered); returns the written paths.

    Refused inputs go under ``invalid-inputs/`` so they never mix with the Job's real runs.
    """
    job = result.get("job_name") if result.get("ok") else INVALID_INPUTS
    stamp = stamp or new_run_id("preflight")
    report = {key: result.get(key) for key in ("ok", "job_name", "manifest_version", "profile_version", "findings")}
    outcome = "passed" if result.get("ok") else "refused"
    paths = [write_record(records_dir, job or INVALID_INPUTS, "preflight", report, stamp, outcome=outcome, mode=mode)]
    if result.get("job") is not None:
        paths.append(write_record(records_dir, job, "job", result["job"], stamp, wrap=False, mode=mode))
    return paths
