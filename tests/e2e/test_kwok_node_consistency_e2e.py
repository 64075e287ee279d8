"""kwok-node-consistency end to end against the sandbox's real kwok and node lifecycle controller.

- healthy → ok, every KWOK fake node judged (the process node, not kwok's, is not), exactly one ping;
- a `max_lease_duration_seconds` below kwok's own Lease duration (40 s here) → failed on a healthy sandbox,
  every fake node's Lease named with its duration: the bound that catches a foreign day-long Lease (default
  600 s) judges the duration each holder writes, not how old the Lease is. The bound is one second below kwok's
  duration: a Lease is judged stale only after kwok missed three renewals in a row (it renews every quarter), as
  the node lifecycle controller would judge it too, not after one slow moment of a loaded machine.
A Lease taken from kwok (node-lease-stale) and kwok stopped (kwok-down) are the fault catalogue's
(test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from check_runs import CheckRuns

from outpost.result import Status
from outpost_sandbox.scale import NODE_LEASE_SECONDS

CHECK = "kwok-node-consistency"


def test_healthy_pings_once(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK, shipped=True)
    assert result.details["selected"] == runs.sandbox.nodes
    assert result.details["max_lease_duration_seconds"] == 600


def test_a_bound_below_kwoks_lease_duration_names_every_lease(runs: CheckRuns) -> None:
    bound = NODE_LEASE_SECONDS - 1
    result = runs.probe(CHECK, {"max_lease_duration_seconds": bound}, shipped=True)
    assert result.status is Status.FAILED, result.summary
    assert result.details["long_lease_count"] == runs.sandbox.nodes
    assert result.details["stale_lease_count"] == 0
    assert result.errors[0].startswith(
        f"lease kube-node-lease/kwok-node-0: observed leaseDurationSeconds {NODE_LEASE_SECONDS}, holder "
    )
    assert result.errors[0].endswith(
        f"(want <= {bound} s: a holder that stopped renewing would look alive for {NODE_LEASE_SECONDS} s)"
    )
    runs.assert_silent(result, CHECK)
