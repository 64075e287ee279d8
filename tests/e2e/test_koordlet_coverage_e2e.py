"""koordlet-coverage end to end: the sandbox's real DaemonSet controller, the probe's own identity, a real
heartbeat receiver.

Healthy (local.yaml's params: real and fake nodes) → ok, every node covered, exactly one ping. With the
defaults only the real node (the process node) is judged and the fake ones are counted as left out; a selection
of no node at all is `error` (exit status 2 from the CLI, the opt-in named), never ok. A koordlet missing from a
node is the fault catalogue's (test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from node_e2e import REAL_NODES, cli_run, run_as_probe, write_config

from outpost.kube.nodes import FAKE_OPT_IN
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
    assert result.details["coverage_by_class"] == {
        "real": {"selected": REAL_NODES, "covered": REAL_NODES, "uncovered": 0},
        "fake": {"selected": sandbox.nodes, "covered": sandbox.nodes, "uncovered": 0},
    }


def test_defaults_judge_the_real_node_only(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_as_probe(tmp_path, CHECK, sandbox.probe_kubeconfig, receiver, shipped=False)
    assert result.status is Status.OK, result.errors
    assert result.details["coverage_by_class"] == {
        "real": {"selected": REAL_NODES, "covered": REAL_NODES, "uncovered": 0}
    }
    assert result.details["excluded"] == {"class fake not selected": sandbox.nodes}
    assert receiver.pings_for(CHECK) == 1


def test_no_node_selected_is_error_with_exit_2(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver
) -> None:
    config = write_config(tmp_path, CHECK, sandbox.probe_kubeconfig, {"nodes": {"classes": ["virtual"]}}, shipped=False)
    code, result = cli_run(config, CHECK, receiver)
    assert (code, result["status"]) == (2, "error"), result
    assert "no node selected (virtual nodes; " in result["summary"]
    assert result["summary"].endswith(FAKE_OPT_IN)
    assert result["reported"] is False
    assert receiver.pings_for(CHECK) == 0
