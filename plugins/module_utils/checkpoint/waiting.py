# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wait on the checkpoint gate: re-judge until the wanted checkpoint is complete, with progress lines.

Two conditions, both optional: a complete step newer than ``newer_than`` (a stop at the next
checkpoint), and the newest step being the newest complete one (no save running or cut off). The
gate itself is the caller's ``judge()`` (in-process or a module run); this only decides and reports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.rlark.ops.plugins.module_utils import step_names
from ansible_collections.rlark.ops.plugins.module_utils.checkpoint.gate_summary import summarize
from ansible_collections.rlark.ops.plugins.module_utils.waiter import Waiter, WaitTimeout


def describe_wait(newer_than=-1, newest_complete=True):
    """What is waited for, in words."""
    parts = []
    if newer_than is not None and newer_than >= 0:
        parts.append("a complete checkpoint newer than %s" % step_names.step_name(newer_than))
    if newest_complete:
        parts.append("the newest checkpoint to be complete and quiet")
    return " and ".join(parts) or "the checkpoint gate"


def satisfied(result, newer_than=-1, newest_complete=True):
    """``(done, summary)`` for one gate result."""
    view = summarize(result)
    if not view["ran"]:
        return False, view["reason"]
    latest = view["latest_complete_step"]
    newest = view["newest_step"]
    state = "newest %s, newest complete %s" % (
        "none" if newest is None else step_names.step_name(newest),
        "none" if latest is None else step_names.step_name(latest),
    )
    if newer_than is not None and newer_than >= 0 and (latest is None or latest <= newer_than):
        return False, state
    if newest_complete and not (view["complete"] and view["newest_complete"]):
        return False, "%s (%s)" % (state, view["reason"] or "not quiet yet")
    return True, state


def not_ready_reason(waited, newer_than=-1, newest_complete=True):
    """Why a wait's result does not let a stop go ('' when it does): what was waited for and the gate's reason."""
    done, _state = satisfied(waited, newer_than, newest_complete)
    if done:
        return ""
    prefix = (waited.get("wait_msg", "") + " ") if waited.get("timed_out") else ""
    return prefix + (summarize(waited)["reason"] or "the newest checkpoint is not complete")


def wait_for_gate(judge, newer_than=-1, newest_complete=True, timeout=0, interval=1.0, progress=None, clock=None):
    """Call ``judge() -> gate result`` until satisfied or ``timeout``; the last result plus wait fields.

    On timeout the result carries ``timed_out: true`` and ``msg`` naming what was waited for.
    """
    what = describe_wait(newer_than, newest_complete)
    kwargs = {"interval": interval, "progress": progress}
    if clock is not None:
        kwargs.update(clock=clock, sleep=lambda s: None)
    waiter = Waiter(max(0.0, float(timeout)), **kwargs)
    last = {}

    def check():
        last["result"] = judge()
        done, summary = satisfied(last["result"], newer_than, newest_complete)
        return done, summary, last["result"]

    out = {"timed_out": False, "wait_for": what}
    try:
        result = waiter.wait(check, what)
    except WaitTimeout as exc:
        result = last.get("result") or {}
        out.update(timed_out=float(timeout) > 0, wait_msg=str(exc))
    out.update(result)
    out.update(wait_log=waiter.log, waited_seconds=round(waiter.clock() - waiter.started, 2), judged_at=time.time())
    return out


__all__ = ["describe_wait", "not_ready_reason", "satisfied", "wait_for_gate"]
