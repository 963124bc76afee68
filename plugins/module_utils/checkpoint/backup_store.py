# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the backup of a hostPath checkpoint lives: a directory, or an S3 prefix (the checkpoint S3 client).

Both stores hold the same layout as the checkpoints root: ``<root>/global_step_N/<relative path>``, plus
the per-step progress manifest ``<root>/rlark-backup/global_step_N.json`` written by the collection when it
makes the backup. A store lists ``{relative path: (size, mtime)}`` of one step, opens a file, and (to make
a backup) writes one file while hashing it, atomically: a reader never sees half a file under its name.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import errno
import hashlib
import io
import json
import os
import stat

from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.layouts import GateError

PROGRESS_DIR = "rlark-backup"  # not global_step_*: RLinf's resume scan ignores it
CHUNK = 8 * 1024 * 1024
PART_SUFFIX = ".rlark-part"
WINDOW = 1024 * 1024  # a directory copy hashes 1 MiB at a time: the bytes are still in the CPU cache
WRITEBACK = 8 * 1024 * 1024  # and asks the kernel to start writing each 8 MiB it copied
# copy_file_range cannot copy between these two files: copy through Python instead
NO_KERNEL_COPY = (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF, errno.ENOTSUP)


class HashingReader:
    """A non-seekable reader over ``fh`` that hashes what it hands out (one read of the file, in order)."""

    def __init__(self, fh):
        self.fh = fh
        self.digest = hashlib.sha256()
        self.count = 0

    def read(self, size=-1):
        data = self.fh.read(size if size is not None and size >= 0 else CHUNK)
        self.digest.update(data)
        self.count += len(data)
        return data

    def readinto(self, buf):
        n = self.fh.readinto(buf)
        if n:
            self.digest.update(memoryview(buf)[:n])
            self.count += n
        return n


def _kernel_copy(src, dst, off, n):
    """Copy ``n`` bytes at ``off`` of ``src`` to the same offset of ``dst`` in the kernel; bytes copied."""
    done = 0
    while done < n:
        got = os.copy_file_range(src, dst, n - done, off + done, off + done)
        if not got:
            break
        done += got
    return done


def _start_writeback(fd, off, n):
    """Ask the kernel to start writing ``n`` copied bytes at ``off`` to disk now, without waiting for it.

    On Linux, POSIX_FADV_DONTNEED starts the writeback of dirty pages: the disk writes while the next windows
    are hashed, where otherwise it would start only at the file's fsync (a copy far below the dirty limits).
    Only a hint: where it is missing or refused, the fsync still makes the file durable.
    """
    with contextlib.suppress(AttributeError, OSError):
        os.posix_fadvise(fd, off, n, os.POSIX_FADV_DONTNEED)


def _write_all(out, view):
    while view:
        view = view[out.write(view) :]


def _copy_through_python(fh, out):
    """Read ``fh`` into one reused buffer, hash and write each read; ``(sha256, bytes)``."""
    reader = HashingReader(fh)
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    while True:
        n = reader.readinto(buf)
        if not n:
            break
        _write_all(out, view[:n])
    return reader.digest.hexdigest(), reader.count


def copy_hashing(fh, out):
    """Copy the file ``fh`` into ``out`` (both at offset 0), reading each byte once: ``(sha256, bytes)``.

    Window by window, the bytes are read into a reused buffer and hashed, and the kernel copies the same
    window (copy_file_range: no second copy through Python); where it cannot (another filesystem, an old
    kernel) the buffer is written instead. Every WRITEBACK bytes the disk is asked to start writing what was
    copied. A file whose size or mtime moved during the copy raises GateError.
    """
    try:
        src, dst = fh.fileno(), out.fileno()
    except (AttributeError, io.UnsupportedOperation):
        return _copy_through_python(fh, out)
    before = os.fstat(src)
    digest, off, kernel = hashlib.sha256(), 0, hasattr(os, "copy_file_range")
    written = 0  # where the writeback asked for so far ends
    buf = bytearray(WINDOW)
    view = memoryview(buf)
    while True:
        n = os.preadv(src, [buf], off)
        if not n:
            break
        digest.update(view[:n])
        if kernel:
            try:
                copied = _kernel_copy(src, dst, off, n)
            except OSError as exc:
                if exc.errno not in NO_KERNEL_COPY or off:
                    raise
                copied, kernel = -1, False
        if not kernel:
            copied = os.pwrite(dst, view[:n], off)
        if copied != n:
            raise GateError("%s: %d of %d bytes written at offset %d" % (getattr(fh, "name", "?"), copied, n, off))
        off += n
        if off - written >= WRITEBACK:
            _start_writeback(dst, written, off - written)
            written = off
    after = os.fstat(src)
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns) or off != after.st_size:
        raise GateError("%s changed while it was copied (size or mtime moved)" % getattr(fh, "name", "the file"))
    return digest.hexdigest(), off


class DirStore:
    """A directory on the host that runs the gate (a local disk or an NFS mount of the backup server)."""

    kind = "dir"

    def __init__(self, root, host=None):
        self.root = os.path.abspath(os.path.expanduser(root))
        self.host = host or None

    def location(self, step_name=""):
        where = os.path.join(self.root, step_name) if step_name else self.root
        return "%s:%s" % (self.host, where) if self.host else where

    def step_path(self, step_name, rel=""):
        return os.path.join(self.root, step_name, rel) if rel else os.path.join(self.root, step_name)

    def list(self, step_name):
        """``{relative path: (size, mtime)}`` of every regular file of the step ({} when there is none)."""
        base = self.step_path(step_name)
        out = {}
        stack = [""]
        while stack:
            rel = stack.pop()
            try:
                with os.scandir(os.path.join(base, rel) if rel else base) as it:
                    for entry in it:
                        child = rel + "/" + entry.name if rel else entry.name
                        st = entry.stat(follow_symlinks=False)
                        if stat.S_ISDIR(st.st_mode):
                            stack.append(child)
                        elif stat.S_ISREG(st.st_mode) and not entry.name.endswith(PART_SUFFIX):
                            out[child] = (st.st_size, st.st_mtime)
            except FileNotFoundError:
                if rel:
                    raise
                return {}
            except OSError as exc:
                raise GateError("cannot read %s: %s" % (os.path.join(base, rel), exc.strerror or exc)) from None
        return out

    def open(self, step_name, rel):
        return open(self.step_path(step_name, rel), "rb")

    def put(self, step_name, rel, fh):
        """Copy ``fh`` to the step's ``rel`` (temporary name, fsync, rename); ``(sha256, bytes)`` of what was read."""
        dest = self.step_path(step_name, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = "%s.%d%s" % (dest, os.getpid(), PART_SUFFIX)
        try:
            with open(tmp, "wb", buffering=0) as out:
                digest, count = copy_hashing(fh, out)
                os.fsync(out.fileno())
            os.replace(tmp, dest)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)  # our own temporary file, never a file of the backup
            raise
        return digest, count

    def read_progress(self, step_name):
        path = os.path.join(self.root, PROGRESS_DIR, step_name + ".json")
        try:
            with open(path, "rb") as fh:
                return json.loads(fh.read().decode("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None  # unreadable progress: copy again what it would have skipped

    def write_progress(self, step_name, data):
        path = os.path.join(self.root, PROGRESS_DIR, step_name + ".json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "w") as fh:
            fh.write(json.dumps(data, sort_keys=True))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)


class ListedStore:
    """A directory on a backup-server inventory host, as read there by rlark_ckpt_backup_info (``listing``).

    It is only judged here, never written: ``listing`` is ``{"root", "steps": {step: {rel: [size, mtime,
    sha256 or None]}}}``, read on the backup host (sha256 only for the step it was asked to hash).
    """

    kind = "dir"

    def __init__(self, listing, host):
        self.root = listing.get("root") or ""
        self.host = host
        self.steps = listing.get("steps") or {}

    def location(self, step_name=""):
        return "%s:%s" % (self.host, os.path.join(self.root, step_name) if step_name else self.root)

    def list(self, step_name):
        return {rel: (row[0], row[1]) for rel, row in (self.steps.get(step_name) or {}).items()}

    def sha256(self, step_name, rel):
        row = (self.steps.get(step_name) or {}).get(rel) or ()
        if len(row) < 3 or not row[2]:
            raise GateError(
                "the listing read on rlark_checkpoint_backup_host %s has no sha256 of %s/%s (the backup host hashes "
                "the step named by rlark_checkpoint_step, or its newest step): set rlark_checkpoint_step=%s"
                % (self.host, step_name, rel, step_name.rpartition("_")[2])
            )
        return row[2]


def read_listing(root, step="latest", sha256=False):
    """What rlark_ckpt_backup_info returns on the backup host: every ``global_step_*`` of ``root`` with its
    files' size and mtime, and (``sha256``) the hashes of the step named ``step`` (a number), or of the newest."""
    store = DirStore(root)
    try:
        names = [e.name for e in os.scandir(store.root) if e.is_dir() and e.name.startswith("global_step_")]
    except FileNotFoundError:
        names = []
    except OSError as exc:
        raise GateError("cannot read %s: %s" % (store.root, exc.strerror or exc)) from None
    numbered = sorted((int(n.rpartition("_")[2]), n) for n in names if n.rpartition("_")[2].isdigit())
    hashed = "global_step_%s" % step if str(step).isdigit() else (numbered[-1][1] if numbered else "")
    steps = {}
    for _number, name in numbered:
        rows = store.list(name)
        steps[name] = {
            rel: [size, mtime, sha256_of(store, name, rel) if sha256 and name == hashed else None]
            for rel, (size, mtime) in rows.items()
        }
    return {"root": store.root, "steps": steps, "hashed": hashed if sha256 else ""}


class S3Store:
    """A prefix in a bucket, through the checkpoint gate's S3 client (retries, clear auth errors)."""

    kind = "s3"

    def __init__(self, source):
        self.source = source  # a checkpoint.s3.S3Source on the backup prefix
        self.root = source.root

    def location(self, step_name=""):
        return self.source.uri(self.root + (step_name + "/" if step_name else ""))

    def _key(self, step_name, rel):
        return "%s%s/%s" % (self.root, step_name, rel)

    def list(self, step_name):
        prefix = "%s%s/" % (self.root, step_name)
        out = {}
        for page in self.source.pages(prefix):
            for obj in page.get("Contents") or ():
                if obj["Key"][-1] != "/":
                    out[obj["Key"][len(prefix) :]] = (obj["Size"], obj["LastModified"].timestamp())
        return out

    def open(self, step_name, rel):
        return self.source.open_file(step_name, rel)

    def put(self, step_name, rel, fh):
        """Stream ``fh`` up in CHUNK parts (one part in memory; multipart above CHUNK); ``(sha256, bytes)`` read."""
        src = self.source
        where = {"Bucket": src.bucket, "Key": self._key(step_name, rel)}
        reader = HashingReader(fh)
        data = reader.read(CHUNK)
        if len(data) < CHUNK:
            src._call("PUT", src.client.put_object, Body=data, **where)
            return reader.digest.hexdigest(), reader.count
        upload = src._call("upload", src.client.create_multipart_upload, **where)["UploadId"]
        parts = []
        try:
            while data:
                number = len(parts) + 1
                answer = src._call("upload", src.client.upload_part, UploadId=upload, PartNumber=number, Body=data,
                                   **where)  # fmt: skip
                parts.append({"PartNumber": number, "ETag": answer["ETag"]})
                data = reader.read(CHUNK)
            src._call("upload", src.client.complete_multipart_upload, UploadId=upload,
                      MultipartUpload={"Parts": parts}, **where)  # fmt: skip
        except BaseException:
            with contextlib.suppress(Exception):  # our own unfinished upload: its parts go, no object is touched
                src.client.abort_multipart_upload(UploadId=upload, **where)
            raise
        return reader.digest.hexdigest(), reader.count

    def _progress_key(self, step_name):
        return "%s%s/%s.json" % (self.root, PROGRESS_DIR, step_name)

    def read_progress(self, step_name):
        client = self.source.client
        try:
            body = client.get_object(Bucket=self.source.bucket, Key=self._progress_key(step_name))["Body"].read()
            return json.loads(body.decode("utf-8"))
        except Exception:  # absent or unreadable: copy again what it would have skipped
            return None

    def write_progress(self, step_name, data):
        body = json.dumps(data, sort_keys=True).encode()
        self.source._call("PUT", self.source.client.put_object, Bucket=self.source.bucket,
                          Key=self._progress_key(step_name), Body=body)  # fmt: skip


def open_store(spec):
    """The store a normalized backup option names (``path``, read here or on ``host`` as ``listing``, or ``s3``)."""
    if spec.get("listing"):
        return ListedStore(spec["listing"], spec.get("host"))
    if spec.get("path"):
        return DirStore(spec["path"], spec.get("host"))
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.s3 import S3Source

    s3 = spec["s3"]
    return S3Store(
        S3Source(
            s3["bucket"],
            prefix=s3.get("prefix") or "",
            endpoint_url=s3.get("endpoint_url"),
            region=s3.get("region"),
            access_key=s3.get("access_key"),
            secret_key=s3.get("secret_key"),
        )
    )


def sha256_of(store, step_name, rel):
    """sha256 hex of one file of the store, streamed."""
    from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.integrity import sha256_stream

    return sha256_stream(lambda: store.open(step_name, rel))[0]
