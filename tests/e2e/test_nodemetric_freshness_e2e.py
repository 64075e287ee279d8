"""nodemetric-freshness end to end: healthy → ok and one ping; nodemetric-stale (one node's NodeMetric
backdated and no longer refreshed) → failed on the first run after break, naming it, no ping."""

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
CHECK = "nodemetric-freshness"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


def test_healthy_pings_once(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.OK, result.errors
    assert result.details["fresh"] == sandbox.nodes
    assert receiver.pings_for(CHECK) == 1


def test_nodemetric_stale_is_failed_naming_it(tmp_path: Path, sandbox: SandboxInfo,
                                              receiver: HeartbeatReceiver) -> None:
    with fault(sandbox.state_dir, "nodemetric-stale") as record:
        node = record["undo"]["node"]
        result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.FAILED, result.summary
    assert len(result.errors) == 1
    assert result.errors[0].startswith(f"nodemetric {node}: observed updateTime ")
    assert result.reported is False
    assert receiver.pings_for(CHECK) == 0
