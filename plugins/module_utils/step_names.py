# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RLinf's ``global_step_N`` directory names: the one reader and writer of them.

Kept apart from the Hydra override parser (``hydra``, which re-exports these) so that the checkpoint
gate, which needs only step names, does not compile the override grammar on every module run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

STEP_PREFIX = "global_step_"
STEP_NAME = re.compile(r"^%s(\d+)$" % STEP_PREFIX)
LATEST = "latest"


def step_number(path):
    """N of a path ending in ``global_step_N`` (no trailing slash, as RLinf needs), else None."""
    match = STEP_NAME.match(posixpath.basename(path or ""))
    return int(match.group(1)) if match else None


def parse_step(value):
    """What a user asks for as a step: ``latest``, ``N``, ``"N"`` or the directory name ``global_step_N``.

    Returns ``"latest"`` or the int N; None for anything else (a negative number, another name, a bool).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    text = str(value if value is not None else "").strip()
    if text == LATEST:
        return LATEST
    if text.isdigit():
        return int(text)
    match = STEP_NAME.match(text)
    return int(match.group(1)) if match else None


def step_name(step):
    """``global_step_<step>``: the directory name RLinf saves step ``step`` under."""
    return "%s%d" % (STEP_PREFIX, int(step))


def is_step_like(name):
    """A name RLinf's resume scan would take for a step directory (``global_step_40``, ``global_step_40_bak``)."""
    return (name or "").startswith(STEP_PREFIX)


def step_dir(root, step):
    """``<root>/global_step_<step>`` without a trailing slash."""
    return posixpath.join((root or "").rstrip("/"), step_name(step))


__all__ = ["LATEST", "STEP_NAME", "STEP_PREFIX", "is_step_like", "parse_step", "step_dir", "step_name", "step_number"]
