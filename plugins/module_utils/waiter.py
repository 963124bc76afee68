# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Polling waits on a monotonic clock with a progress log.

Modules cannot print while they run, so each wait keeps a short log of state changes
(``wait_log``, returned to the user) and passes every line to an optional ``progress`` callback
(``module.log`` in modules, so the lines reach syslog/journal while the task runs).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time


class WaitTimeout(Exception):
    """The condition did not hold before the timeout; ``state`` is the last observed state."""

    def __init__(self, message, state=None, log=None):
        super().__init__(message)
        self.state = state
        self.log = log or []


class Waiter:
    """``wait(check, what)`` polls ``check() -> (done, summary, state)`` until done or the deadline."""

    def __init__(self, timeout, interval=1.0, clock=time.monotonic, sleep=time.sleep, progress=None):
        self.clock = clock
        self.sleep = sleep
        self.interval = interval
        self.started = clock()
        self.deadline = self.started + float(timeout)
        self.timeout = float(timeout)
        self.progress = progress
        self.log = []

    def _note(self, what, summary):
        line = "%6.1fs %s: %s" % (self.clock() - self.started, what, summary)
        self.log.append(line)
        if self.progress is not None:
            self.progress(line)

    def wait(self, check, what):
        last = None
        while True:
            done, summary, state = check()
            if summary != last:
                self._note(what, summary)
                last = summary
            if done:
                return state
            remaining = self.deadline - self.clock()
            if remaining <= 0:
                raise WaitTimeout(
                    "Timed out after %.0fs waiting for %s; last state: %s." % (self.timeout, what, summary),
                    state,
                    self.log,
                )
            self.sleep(min(self.interval, remaining))
