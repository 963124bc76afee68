# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Exported pod logs into a run's record directory: ``log-<pod>.log``, copied in chunks, never replaced."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import os
import re
import shutil

from ansible_collections.rlark.ops.plugins.module_utils.records import record_dir

_SAFE_POD = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def log_file_name(pod):
    if not isinstance(pod, str) or not _SAFE_POD.match(pod):
        raise ValueError("pod name %r is not a safe file name" % (pod,))
    return "log-%s.log" % pod


def move_exports(records_dir, job, run_id, exports, mode):
    """Copy every export file (``{pod, path}``) into the record directory, then remove the export.

    The directory exists already (the run's record is written first). Returns the paths written.
    """
    directory = record_dir(records_dir, job, run_id)
    written = []
    for export in exports:
        target = os.path.join(directory, log_file_name(export.get("pod")))
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            raise ValueError("record %s already exists" % target) from None
        with os.fdopen(fd, "wb") as out, open(export["path"], "rb") as src:
            shutil.copyfileobj(src, out, 1 << 16)
        os.chmod(target, mode)
        written.append(target)
    for export in exports:
        with contextlib.suppress(OSError):
            os.unlink(export["path"])
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(export["path"]))  # the stop's own export directory, once empty
    return written


__all__ = ["log_file_name", "move_exports"]
