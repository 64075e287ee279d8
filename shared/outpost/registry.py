"""The catalogue: one explicit, ordered tuple of every check Outpost ships.

Explicit on purpose (no decorators, no package scanning): adding a check is one import and one line
here, visible in review, and `outpost list` is exactly this tuple.
"""

from __future__ import annotations

from typing import Any

from outpost.checks import (
    admission_dry_run,
    apiserver_cert_expiry,
    apiserver_health,
    apiserver_latency,
    apiserver_triage,
    be_eviction_rate,
    gang_scheduling,
    koord_manager_health,
    koord_webhook,
    koordlet_coverage,
    kruise_daemon_coverage,
    kruise_manager_health,
    kruise_manager_replicas,
    kruise_webhook,
    kwok_node_consistency,
    kwok_pod_reconciler,
    leader_leases,
    ls_latency,
    node_utilization,
    nodemetric_freshness,
    webhook_cert_expiry,
)
from outpost.checks.base import CheckSpec

CHECKS: tuple[CheckSpec[Any, Any], ...] = (
    koord_manager_health.CHECK,
    koord_webhook.CHECK,
    koordlet_coverage.CHECK,
    nodemetric_freshness.CHECK,
    ls_latency.CHECK,
    be_eviction_rate.CHECK,
    gang_scheduling.CHECK,
    node_utilization.CHECK,
    apiserver_health.CHECK,
    apiserver_triage.CHECK,
    apiserver_latency.CHECK,
    apiserver_cert_expiry.CHECK,
    kwok_node_consistency.CHECK,
    kruise_manager_health.CHECK,
    kruise_webhook.CHECK,
    kruise_daemon_coverage.CHECK,
    kruise_manager_replicas.CHECK,
    leader_leases.CHECK,
    admission_dry_run.CHECK,
    webhook_cert_expiry.CHECK,
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
