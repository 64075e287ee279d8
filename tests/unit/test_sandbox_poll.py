"""`outpost_sandbox.poll.poll_until`: the one wait loop of the sandbox (real clock, short intervals)."""

from __future__ import annotations

import pytest

from outpost_sandbox.poll import PollTimeout, poll_until


class Flaky(Exception):
    pass


def test_returns_once_the_predicate_is_true() -> None:
    calls: list[int] = []

    def third_time() -> bool:
        calls.append(1)
        return len(calls) >= 3

    poll_until("the third call", 5, third_time, interval=0.01)
    assert len(calls) == 3


def test_timeout_names_what_was_awaited_and_the_last_tolerated_error() -> None:
    def always_failing() -> bool:
        raise Flaky("API answered 503")

    with pytest.raises(PollTimeout) as caught:
        poll_until("etcd /health", 0.05, always_failing, interval=0.01, retry_on=(Flaky,))
    assert str(caught.value) == "timed out after 0 s waiting for etcd /health (last error: API answered 503)"


def test_fail_chooses_the_exception_and_other_errors_stop_the_wait_at_once() -> None:
    with pytest.raises(RuntimeError, match=r"^timed out after 0 s waiting for never$"):
        poll_until("never", 0.02, lambda: False, interval=0.01, fail=RuntimeError)

    def broken() -> bool:
        raise Flaky("process exited")

    with pytest.raises(Flaky, match="process exited"):
        poll_until("a dead process", 30, broken, interval=0.01)
