"""koordlet-coverage end to end: the sandbox's real DaemonSet controller, the probe's own identity, a
real heartbeat receiver. Healthy → ok and exactly one ping; koordlet-missing (the DaemonSet stops
targeting one node, so its own counters stay "all ready") → failed on the first run after break,
the node named, exit status 1 from the CLI, no ping."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from node_e2e import cli_run, fault, run_as_probe, write_config

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "koordlet-coverage"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


def test_healthy_pings_once(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver)
    assert result.status is Status.OK, result.errors
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1
    assert result.details["coverage_by_class"]["fake"] == {"selected": sandbox.nodes, "covered": sandbox.nodes,
                                                           "uncovered": 0}


def test_koordlet_missing_is_failed_naming_the_node(tmp_path: Path, sandbox: SandboxInfo,
                                                    receiver: HeartbeatReceiver) -> None:
    config = write_config(tmp_path, CHECK, sandbox.probe_kubeconfig)
    with fault(sandbox.state_dir, "koordlet-missing") as record:
        node = record["undo"]["node"]
        code, result = cli_run(config, CHECK, receiver)
    assert code == 1, result
    assert result["status"] == "failed"
    assert result["errors"] == [f"daemonset koordinator-system/koordlet: node {node} has no pod"]
    assert result["reported"] is False
    assert receiver.pings_for(CHECK) == 0
