"""kwok-node-consistency end to end against the sandbox's real kwok and node lifecycle controller.

- healthy → ok and exactly one ping;
- node-lease-stale → failed on the first run after break: the fault hands the node's Lease to a
  foreign holder with `leaseDurationSeconds: 86400` (the only way to make kwok let go of it), so by
  its own duration the Lease looks alive for a day; the check's bound on the duration (60 s) names it;
- kwok-down → failed on the first run after break, naming the stale Leases, no ping. A kwok stopped a
  second ago leaves every Lease freshly renewed and no API object says "kwok is gone", so the fault's
  `break` returns only once every Lease has outlived its 40 s duration (what anyone can observe of a
  dead kwok); the test asserts that this is so before it runs the check.
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


def leases_past_their_duration(sandbox: SandboxInfo) -> bool:
    now = time.time()
    leases = get_json(sandbox, LEASES)["items"]
    assert leases, "the sandbox has no node Lease"
    for lease in leases:
        renewed = parse_time(lease["spec"]["renewTime"])
        assert renewed is not None
        if renewed.timestamp() + float(lease["spec"]["leaseDurationSeconds"]) >= now:
            return False
    return True


def test_kwok_down_is_failed_on_the_first_run_after_break(tmp_path: Path, sandbox: SandboxInfo,
                                                         receiver: HeartbeatReceiver) -> None:
    with fault(sandbox.state_dir, "kwok-down"):
        assert leases_past_their_duration(sandbox), "break returned before the outage was observable"
        result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.FAILED, result.summary
    assert result.details["stale_lease_count"] == sandbox.nodes
    assert result.errors[0].startswith("lease kube-node-lease/kwok-node-")
    assert "(want within 40 s, its leaseDurationSeconds)" in result.errors[0]
    assert result.reported is False
    assert receiver.pings_for(CHECK) == 0
