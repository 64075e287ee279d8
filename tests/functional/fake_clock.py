"""A clock only the test moves, for what takes an injectable clock (the Vigilmon stand-in's alert rule)."""

from __future__ import annotations


class FakeClock:
    """Seconds from any origin: the stand-in judges ages, never dates."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
