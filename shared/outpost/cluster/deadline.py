"""A deadline shared by every request of one check run (re-exported from `outpost.bounded`).

A check may make several requests (LIST pages, proxy calls); each gets the smaller of its own
timeout and what is left of the run's budget, and `outpost.bounded`'s transport caps every network
operation inside a request too, so a slow or trickling server cannot push the run past the
platform's own timeout (where it would be killed without a result).
"""

from __future__ import annotations

from outpost.bounded import Deadline

__all__ = ["Deadline"]
