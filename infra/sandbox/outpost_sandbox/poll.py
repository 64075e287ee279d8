"""`poll_until`: the sandbox's one way of waiting for a condition.

Guarantees: the predicate is tried at once and then every `interval` seconds until it is true or
`timeout` seconds have passed; a timeout raises `fail(message)` with one line naming what was
awaited and how long ("timed out after 30 s waiting for etcd /health"), followed by the last
tolerated error if there was one. Only the exception types in `retry_on` are tolerated; anything
else the predicate raises (a watched process that died, a bug) stops the wait at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class PollTimeout(TimeoutError):
    """A condition did not become true in time."""


def poll_until(
    what: str,
    timeout: float,
    predicate: Callable[[], bool],
    interval: float = 0.5,
    *,
    retry_on: tuple[type[Exception], ...] = (),
    fail: Callable[[str], Exception] = PollTimeout,
) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        try:
            if predicate():
                return
        except retry_on as exc:
            last = f" (last error: {exc})"
        if time.monotonic() >= deadline:
            raise fail(f"timed out after {timeout:.0f} s waiting for {what}{last}")
        time.sleep(interval)
