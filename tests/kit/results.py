"""Reading a check's `Result` in a test: the failure class of each error line.

`failures` also asserts that every error line has its next step, so a test that reads the classes checks that too.
"""

from __future__ import annotations

from outpost.result import Result


def failures(result: Result) -> list[str]:
    """Each error line's failure class, checking that every line has its step."""
    assert len(result.next_steps) == len(result.errors)
    return [step.failure for step in result.next_steps]
