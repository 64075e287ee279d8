"""A deadline shared by every request of one check run.

A check may make several requests (LIST pages, proxy calls); each gets the smaller of its own
timeout and what is left of the run's budget, so a slow first request cannot push the whole run
past the platform's own timeout (where it would be killed without a result).
"""

from __future__ import annotations

import time


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._monotonic = time.monotonic
        self._expires = self._monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self._expires - self._monotonic())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def cap(self, timeout: float) -> float:
        """`timeout`, shortened to what is left of the deadline."""
        return min(timeout, self.remaining())
