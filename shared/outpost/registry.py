"""The catalogue: one explicit, ordered table of every check Outpost ships, imported only when asked for.

Explicit (no decorators, no scanning) so adding a check is one reviewed line, and every other list of checks is
generated from it (`outpost.tooling.catalogue`). Lazy, because a function runs one check: its cold start imports
that check's module and the core only; `checks()`/`jobs()` import them all for commands that need every check.
"""

from __future__ import annotations

import importlib
from typing import Any, Final

from outpost.check import CheckSpec

_CHECK_MODULES: Final[tuple[tuple[str, str], ...]] = (
    ("koord-manager-health", "koord_manager_health"),
    ("koord-webhook", "koord_webhook"),
    ("koordlet-coverage", "koordlet_coverage"),
    ("nodemetric-freshness", "nodemetric_freshness"),
    ("ls-latency", "ls_latency"),
    ("be-eviction-rate", "be_eviction_rate"),
    ("gang-scheduling", "gang_scheduling"),
    ("node-utilization", "node_utilization"),
    ("apiserver-health", "apiserver_health"),
    ("apiserver-triage", "apiserver_triage"),
    ("apiserver-latency", "apiserver_latency"),
    ("apiserver-cert-expiry", "apiserver_cert_expiry"),
    ("kwok-node-consistency", "kwok_node_consistency"),
    ("kruise-manager-health", "kruise_manager_health"),
    ("kruise-webhook", "kruise_webhook"),
    ("kruise-daemon-coverage", "kruise_daemon_coverage"),
    ("kruise-manager-replicas", "kruise_manager_replicas"),
    ("leader-leases", "leader_leases"),
    ("admission-dry-run", "admission_dry_run"),
    ("webhook-cert-expiry", "webhook_cert_expiry"),
)
"""The catalogue's checks in docs/checks.md's order: (check name, module under `outpost.checks`)."""

_JOB_MODULES: Final[tuple[tuple[str, str], ...]] = (("kwok-pod-reconciler", "kwok_pod_reconciler"),)
"""Jobs are not checks of the catalogue (they change the cluster) but run exactly like one: configured,
scheduled, deployed and reported the same way, under `outpost run NAME`."""

_MODULES: Final[dict[str, str]] = dict(_CHECK_MODULES + _JOB_MODULES)


def names() -> list[str]:
    """Every check's and job's name, in catalogue order (imports no check)."""
    return list(_MODULES)


def module(name: str) -> str:
    """The module defining check or job `name`, e.g. `outpost.checks.koord_webhook` (imports nothing); KeyError
    with the known names otherwise."""
    try:
        return f"outpost.checks.{_MODULES[name]}"
    except KeyError:
        raise KeyError(f"unknown check {name!r} (known: {', '.join(names())})") from None


def get(name: str) -> CheckSpec[Any, Any]:
    """The check called `name` (its module imported now if it was not yet); KeyError with the known names
    otherwise."""
    defined_in = module(name)
    spec: CheckSpec[Any, Any] = importlib.import_module(defined_in).CHECK
    if spec.name != name:  # a row pointing at the wrong module must not run another check under this name
        raise RuntimeError(f"registry row {name!r} names module {defined_in!r}, whose check is {spec.name!r}")
    return spec


def checks() -> tuple[CheckSpec[Any, Any], ...]:
    """Every check of the catalogue, in order (imports them all)."""
    return tuple(get(name) for name, _ in _CHECK_MODULES)


def jobs() -> tuple[CheckSpec[Any, Any], ...]:
    """Every job (imports them all)."""
    return tuple(get(name) for name, _ in _JOB_MODULES)
