# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one retry backoff: capped exponential steps with jitter, for the API client and S3."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random
import time


def backoff_delay(attempt, base, cap, rand=random.random, floor=0.0):
    """Seconds to wait before retry ``attempt + 1``.

    The step doubles from ``base`` up to ``cap``; ``floor`` is the share of the step always waited
    (0: full jitter, spreads many clients best; 0.5: equal jitter, never retries at once).
    """
    step = min(cap, base * (2**attempt))
    return step * (floor + (1.0 - floor) * rand())


class Retrying:
    """Call ``fn`` again after a full-jitter backoff while ``retryable(exc)`` and attempts remain."""

    def __init__(self, attempts=6, base=0.2, cap=5.0, sleep=time.sleep, rand=random.random):
        self.attempts = attempts
        self.base = base
        self.cap = cap
        self.sleep = sleep
        self.rand = rand

    def __call__(self, fn, retryable, **kwargs):
        attempt = 0
        while True:
            try:
                return fn(**kwargs)
            except Exception as exc:
                attempt += 1
                if attempt >= self.attempts or not retryable(exc):
                    raise
                self.sleep(backoff_delay(attempt, self.base, self.cap, self.rand))


__all__ = ["Retrying", "backoff_delay"]
