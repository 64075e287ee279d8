"""kwok-node-consistency end to end against the sandbox's real kwok and node lifecycle controller.

- healthy → ok and exactly one ping;
- node-lease-stale → failed on the first run after break: the fault hands the node's Lease to a
  foreign holder with `leaseDurationSeconds: 86400` (the only way to make kwok let go of it), so by
  its own duration the Lease looks alive for a day; the check's bound on the duration (60 s) names it;
- kwok-down → NOT visible on the first run after break, and the test says so by asserting it: every
  Lease was renewed at most a quarter of its 40 s duration before kwok stopped, and no API object
  says "kwok is gone". The test then waits exactly until the newest renewal is `leaseDurationSeconds`
  old (read from the Leases themselves), and the next run is failed, naming the stale Leases, no ping.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from node_e2e import fault, run_as_probe
from sandbox_http import get_json

from outpost.kube.timestamps import parse_time
from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "kwok-node-consistency"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


def test_healthy_pings_once(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.OK, result.errors
    assert result.details["selected"] == sandbox.nodes
    assert receiver.pings_for(CHECK) == 1


def test_node_lease_stale_is_failed_on_the_first_run(tmp_path: Path, sandbox: SandboxInfo,
                                                     receiver: HeartbeatReceiver) -> None:
    with fault(sandbox.state_dir, "node-lease-stale") as record:
        node = record["undo"]["node"]
        result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.FAILED, result.summary
    assert result.errors[0] == (f"lease kube-node-lease/{node}: observed leaseDurationSeconds 86400, holder "
                                "outpost-sandbox-fault (want <= 60 s: a holder that stopped renewing would look "
                                "alive for 86400 s)")
    assert result.reported is False
    assert receiver.pings_for(CHECK) == 0


def seconds_until_every_lease_expires(sandbox: SandboxInfo) -> float:
    expiries: list[float] = []
    for lease in get_json(sandbox, LEASES)["items"]:
        renewed = parse_time(lease["spec"]["renewTime"])
        assert renewed is not None
        expiries.append(renewed.timestamp() + float(lease["spec"]["leaseDurationSeconds"]))
    return max(expiries) - time.time()


def test_kwok_down_is_seen_once_the_leases_are_past_their_duration(tmp_path: Path, sandbox: SandboxInfo,
                                                                  receiver: HeartbeatReceiver) -> None:
    with fault(sandbox.state_dir, "kwok-down"):
        first = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
        # The truth right after the stop: Leases fresh, nodes Ready. Not observable yet, by anyone.
        assert first.status is Status.OK, first.errors
        wait = seconds_until_every_lease_expires(sandbox)
        assert 0 < wait <= 40  # the newest renewal is younger than one lease duration
        time.sleep(wait + 1)
        result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.FAILED, result.summary
    assert result.details["stale_lease_count"] == sandbox.nodes
    assert result.errors[0].startswith("lease kube-node-lease/kwok-node-")
    assert "(want within 40 s, its leaseDurationSeconds)" in result.errors[0]
    assert result.reported is False
    assert receiver.pings_for(CHECK) == 1  # the first run's, none since
