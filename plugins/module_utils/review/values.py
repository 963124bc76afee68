# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Safe accessors for inputs of any shape: a review turns bad input into findings, never exceptions."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

from ansible_collections.rlark.ops.plugins.module_utils.jobspec import as_dict, as_list


def as_text(value):
    return value if isinstance(value, str) else ""


def as_int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def norm_path(path):
    path = as_text(path)
    return posixpath.normpath(path) if path.startswith("/") else path


def is_under(path, root):
    """``path`` equals ``root`` or lies below it (normalised absolute container/host paths)."""
    path, root = norm_path(path), norm_path(root)
    if not path or not root:
        return False
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def quantity_text(value):
    if isinstance(value, bool):
        return str(value).lower()
    return str(value).strip() if value is not None else ""


__all__ = ["as_dict", "as_int", "as_list", "as_text", "is_under", "norm_path", "quantity_text"]
