"""be-eviction-rate end to end: evictPodSuccess Events on the sandbox's BE pods (deployment default/be-batch,
scheduled by koord-scheduler), read with the probe's identity.

Healthy → ok and exactly one ping. Read through events.k8s.io/v1 instead of core/v1 (`api`, with the RBAC
generated for it), `be-evictions` (10 Events) → failed on the first run, exit status 1 from the CLI, the evicted
pods named, grouped by reason, no ping. Through core/v1 (local.yaml's) that fault is the fault catalogue's
(test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from generated_rbac import probe_granted_for
from workload_checks import local_config, run, run_cli

from outpost.result import Status
from outpost_sandbox import faults
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "be-eviction-rate"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


def test_healthy_is_ok_and_pings_once(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(local_config(tmp_path, sandbox, [CHECK]), CHECK, receiver, monkeypatch)
    assert result.status is Status.OK, result
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1
    assert result.details["evictions"] == 0


def test_evictions_read_through_events_k8s_io_fail_on_the_first_run(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver
) -> None:
    config = local_config(tmp_path, sandbox, [CHECK], {CHECK: {"api": "events.k8s.io/v1"}})
    faults.break_fault("be-evictions", state_dir=sandbox.state_dir)
    try:
        with probe_granted_for(sandbox, config):  # events.k8s.io is read only by an environment that says so
            code, result = run_cli(config, CHECK, receiver)
    finally:
        faults.heal("be-evictions", state_dir=sandbox.state_dir)
    assert (code, result["status"]) == (1, "failed"), result
    assert result["summary"].startswith("BE pods: observed 10 evictPodSuccess in the last 30 min (want at most 5)")
    assert result["details"]["by_reason"] == {"cpu": 10}
    assert any(
        line.startswith("pod default/be-batch-") and "evictPodByBECPUSatisfaction" in line for line in result["errors"]
    ), result["errors"]
    assert result["reported"] is False
    assert receiver.pings_for(CHECK) == 0
