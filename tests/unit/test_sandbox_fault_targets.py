"""What `outpost sandbox break` says a fault must fail depends on what it is aimed at.

A backend fault fails only the checks that read that backend; a fault aimed at a system, a manager
Deployment or a Lease fails that one's checks (a scheduler's outage shows only in its Lease).
"""

from __future__ import annotations

import pytest

from outpost_sandbox.faults import FAULTS

KOORD_DOWN = ("koord-manager-health", "koord-webhook", "admission-dry-run", "leader-leases")
KRUISE_DOWN = (
    "kruise-manager-health",
    "kruise-webhook",
    "admission-dry-run",
    "kruise-manager-replicas",
    "leader-leases",
)


@pytest.mark.parametrize(
    ("fault", "target", "expected"),
    [
        ("backend-500", "kruise-daemon", ("kruise-daemon-coverage",)),
        ("backend-down", "ls-workload", ("ls-latency",)),
        ("backend-slow", "ls-workload", ("ls-latency",)),
        ("backend-500", "koordlet", ()),
        ("manager-down", "koord-manager", KOORD_DOWN),
        ("manager-down", "kruise-controller-manager", KRUISE_DOWN),
        ("manager-down", "koord-scheduler", ("leader-leases",)),
        ("manager-frozen", "koord-manager", KOORD_DOWN),
        ("manager-lease-stolen", "kruise-manager", ("leader-leases",)),
        ("webhook-config-deleted", "kruise", ("kruise-webhook", "admission-dry-run", "webhook-cert-expiry")),
        ("webhook-config-deleted", "koordinator", ("koord-webhook", "admission-dry-run", "webhook-cert-expiry")),
        ("manager-scaled-to-zero", "koord-manager", KOORD_DOWN),
        ("manager-scaled-to-zero", "kruise-controller-manager", KRUISE_DOWN),
        ("webhook-cert-expiring", "kruise", ("webhook-cert-expiry", *KRUISE_DOWN)),
        ("webhook-certs-deleted", "koordinator", ("webhook-cert-expiry", *KOORD_DOWN)),
        ("koordlet-missing", "kwok-node-0", ("koordlet-coverage",)),
        # The process node's real agents: a killed koordlet is NotReady and unreported, a frozen one only unreported.
        ("koordlet-down", None, ("koordlet-coverage", "nodemetric-freshness")),
        ("koordlet-frozen", None, ("nodemetric-freshness",)),
        ("kruise-daemon-down", None, ("kruise-daemon-coverage",)),
    ],
)
def test_checks_that_must_fail_follow_the_target(fault: str, target: str, expected: tuple[str, ...]) -> None:
    assert FAULTS[fault].checks_for(target) == expected


def test_every_targeted_check_list_is_part_of_the_fault() -> None:
    for fault in FAULTS.values():
        for target, checks in fault.checks_by_target.items():
            assert set(checks) <= set(fault.checks), (fault.name, target)
