"""nodemetric-freshness end to end: the NodeMetrics koord-manager creates for every node, whose status the
sandbox's stand-in koordlet keeps fresh.

Healthy (local.yaml's params: real and fake nodes) → ok, every node's NodeMetric fresh, one ping; with the
defaults only the real node (the process node) is judged. A NodeMetric no longer refreshed is the fault
catalogue's (test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from node_e2e import REAL_NODES, run_as_probe

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "nodemetric-freshness"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


def test_healthy_pings_once(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.OK, result.errors
    assert result.details["fresh"] == sandbox.nodes + REAL_NODES
    assert result.details["expiry_seconds"] == 180
    assert receiver.pings_for(CHECK) == 1


def test_defaults_judge_the_real_node_only(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver, shipped=False)
    assert result.status is Status.OK, result.errors
    assert result.details["fresh"] == REAL_NODES
    assert result.details["excluded"] == {"class fake not selected": sandbox.nodes}
    assert receiver.pings_for(CHECK) == 1
