# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one wait vocabulary of every module, action and role that waits: its home.

``wait_timeout`` (seconds to keep waiting; 0 = look once), ``wait_sleep`` (seconds between two looks) and
``after_step`` (wait for a complete checkpoint step newer than this one). The names are kubernetes.core's
(``k8s`` and ``k8s_info`` wait with ``wait_timeout``/``wait_sleep``), which rlark_job already follows and which users of
kubernetes.core know; ``after_step`` says what it waits for, where ``newer_than`` read like a time.

The older names stay as ``aliases`` of each module that had them (``timeout``, ``interval``, ``wait_interval``,
``poll``, ``newer_than``), so no playbook breaks; :func:`wait_spec` is the only place a module's wait options are
declared. A module that waits for two things names its second wait with a prefix (rlark_guarded_stop's
``next_checkpoint_wait_timeout``/``next_checkpoint_wait_sleep``). Plain Python.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

WAIT_TIMEOUT = "wait_timeout"
WAIT_SLEEP = "wait_sleep"
AFTER_STEP = "after_step"
VOCABULARY = (WAIT_TIMEOUT, WAIT_SLEEP, AFTER_STEP)
# The names modules used before, by the name that replaces them.
OLDER_NAMES = {
    WAIT_TIMEOUT: ("timeout",),
    WAIT_SLEEP: ("interval", "wait_interval", "poll"),
    AFTER_STEP: ("newer_than",),
}


def wait_spec(timeout, sleep, after_step=False, older=(), timeout_type="float", sleep_type="float", prefix=""):
    """The argument-spec entries of a module's wait.

    ``timeout`` and ``sleep`` are the module's defaults; ``after_step`` adds the step option (``True`` for no
    default, else its default, e.g. ``-1``); ``older`` names the older names this module accepted (kept as aliases);
    ``prefix`` names a module's second wait (``next_checkpoint_`` + ``wait_timeout``; its older names carry it too).
    """
    spec = {
        WAIT_TIMEOUT: dict(type=timeout_type, default=timeout),
        WAIT_SLEEP: dict(type=sleep_type, default=sleep),
    }
    if after_step is not False:
        spec[AFTER_STEP] = dict(type="int") if after_step is True else dict(type="int", default=after_step)
    return dict((prefix + name, _with_aliases(entry, name, prefix, older)) for name, entry in spec.items())


def _with_aliases(entry, name, prefix, older):
    aliases = [prefix + old for old in OLDER_NAMES[name] if prefix + old in older]
    if aliases:
        entry["aliases"] = aliases
    return entry


def all_names(spec):
    """Every name ``spec`` accepts (options and their aliases)."""
    names = set(spec)
    for entry in spec.values():
        names.update(entry.get("aliases") or ())
    return names


__all__ = ["AFTER_STEP", "OLDER_NAMES", "VOCABULARY", "WAIT_SLEEP", "WAIT_TIMEOUT", "all_names", "wait_spec"]
