"""The catalogue: one explicit, ordered tuple of every check Outpost ships.

Explicit on purpose (no decorators, no package scanning): adding a check is one import and one line
here, visible in review, and `outpost list` is exactly this tuple.
"""

from __future__ import annotations

from typing import Any

from outpost.checks import apiserver_health, be_eviction_rate, gang_scheduling, kwok_pod_reconciler, ls_latency
from outpost.checks.base import CheckSpec

CHECKS: tuple[CheckSpec[Any, Any], ...] = (
    ls_latency.CHECK,
    be_eviction_rate.CHECK,
    gang_scheduling.CHECK,
    apiserver_health.CHECK,
)

JOBS: tuple[CheckSpec[Any, Any], ...] = (
    kwok_pod_reconciler.CHECK,
)
"""Jobs are not checks of the catalogue (they change the cluster) but run exactly like one: configured,
scheduled, deployed and reported the same way, under `outpost run NAME`."""

_BY_NAME: dict[str, CheckSpec[Any, Any]] = {check.name: check for check in CHECKS + JOBS}


def names() -> list[str]:
    return [check.name for check in CHECKS + JOBS]


def get(name: str) -> CheckSpec[Any, Any]:
    """The check called `name`; KeyError with the known names otherwise."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown check {name!r} (known: {', '.join(names())})") from None
