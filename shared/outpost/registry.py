"""The catalogue: one explicit, ordered tuple of every check Outpost ships.

Explicit on purpose (no decorators, no package scanning): adding a check is one import and one line
here, visible in review, and `outpost list` is exactly this tuple.
"""

from __future__ import annotations

from typing import Any

from outpost.checks import (
    apiserver_health,
    koordlet_coverage,
    kruise_daemon_coverage,
    kwok_node_consistency,
    node_utilization,
    nodemetric_freshness,
)
from outpost.checks.base import CheckSpec

CHECKS: tuple[CheckSpec[Any, Any], ...] = (
    koordlet_coverage.CHECK,
    nodemetric_freshness.CHECK,
    node_utilization.CHECK,
    apiserver_health.CHECK,
    kwok_node_consistency.CHECK,
    kruise_daemon_coverage.CHECK,
)

_BY_NAME: dict[str, CheckSpec[Any, Any]] = {check.name: check for check in CHECKS}


def names() -> list[str]:
    return [check.name for check in CHECKS]


def get(name: str) -> CheckSpec[Any, Any]:
    """The check called `name`; KeyError with the known names otherwise."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown check {name!r} (known: {', '.join(names())})") from None
