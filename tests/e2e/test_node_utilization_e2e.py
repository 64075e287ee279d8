"""node-utilization end to end: the sandbox's NodeMetrics report 62 % CPU (inside the default 60-65 %
band) → ok and one ping; node-utilization-low (20 %) and -high (90 %) → failed on the first run after
break, naming the band and nodes, no ping."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from node_e2e import fault, run_as_probe

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "node-utilization"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


def test_healthy_pings_once(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.OK, result.errors
    assert result.details["mean_percent"] == pytest.approx(62.0, abs=0.1)
    assert receiver.pings_for(CHECK) == 1


@pytest.mark.parametrize(("name", "mean", "side"), [("node-utilization-low", 20.0, "below"),
                                                    ("node-utilization-high", 90.0, "above")])
def test_outside_the_band_is_failed(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver,
                                    name: str, mean: float, side: str) -> None:
    with fault(sandbox.state_dir, name):
        result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.FAILED, result.summary
    assert result.errors[0].startswith(f"nodes: observed mean CPU utilisation of {sandbox.nodes} nodes (NodeMetric) "
                                       f"{mean:.1f} % (want 60 to 65 %); {side} the band, e.g. kwok-node-")
    assert result.reported is False
    assert receiver.pings_for(CHECK) == 0
