"""What `outpost sandbox break` says a fault must fail depends on what it is aimed at.

A backend fault fails only the checks that read that backend; a fault aimed at a system, a Deployment
or a Lease fails that one's checks. A target name shared by two kinds of thing (`kruise-manager` is
both a backend and a leader Lease) must not borrow the other's checks.
"""

from __future__ import annotations

import pytest

from outpost_sandbox.faults import FAULTS


@pytest.mark.parametrize(
    ("fault", "target", "expected"),
    [
        ("backend-500", "koord-manager", ("koord-manager-health",)),
        ("backend-down", "kruise-webhook", ("kruise-webhook", "admission-dry-run")),
        ("backend-slow", "ls-workload", ("ls-latency",)),
        ("backend-500", "koordlet", ()),
        ("leader-lease-stale", "kruise-manager", ("leader-leases",)),
        ("leader-lease-stale", "koordinator-manager", ("leader-leases",)),
        ("webhook-config-deleted", "kruise", ("kruise-webhook", "admission-dry-run")),
        ("webhook-config-deleted", "koordinator", ("koord-webhook", "admission-dry-run")),
        ("manager-scaled-to-zero", "koord-manager", ("koord-manager-health", "leader-leases")),
        ("manager-scaled-to-zero", "kruise-controller-manager",
         ("kruise-manager-health", "kruise-manager-replicas", "leader-leases")),
        ("koordlet-missing", "kwok-node-0", ("koordlet-coverage",)),
    ],
)
def test_checks_that_must_fail_follow_the_target(fault: str, target: str, expected: tuple[str, ...]) -> None:
    assert FAULTS[fault].checks_for(target) == expected


def test_every_targeted_check_list_is_part_of_the_fault() -> None:
    for fault in FAULTS.values():
        for target, checks in fault.checks_by_target.items():
            assert set(checks) <= set(fault.checks), (fault.name, target)
