"""kruise-manager-replicas end to end: the real kruise-controller-manager Deployment, as the probe.

Healthy = ok (2/2 ready) and one ping. A `min_ready` above the Deployment's replicas = failed, naming it with
its ready and desired counts, no ping; a Deployment of another name (a cluster set up another way) = failed,
naming it, never taken as healthy. The Deployment scaled to 0 is the fault catalogue's
(test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from generated_rbac import probe_granted_for
from managers_e2e import heartbeat_env, run_once, write_config

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "kruise-manager-replicas"


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        monkeypatch.setenv(heartbeat_env(CHECK), running.url_for(CHECK))
        yield running


def test_healthy_is_ok_and_pings_once(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_once(write_config(tmp_path, sandbox, CHECK), CHECK)
    assert result.status is Status.OK, result.errors
    assert result.summary == "deployment kruise-system/kruise-controller-manager: 2/2 replicas ready"
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1


def test_fewer_ready_than_min_ready_fails_naming_the_deployment(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver
) -> None:
    result = run_once(write_config(tmp_path, sandbox, CHECK, {"min_ready": 3}), CHECK)
    assert result.status is Status.FAILED
    assert result.errors == [
        "deployment kruise-system/kruise-controller-manager: observed 2 ready replicas, spec.replicas 2 (want >= 3)"
    ]
    assert result.reported is False
    assert receiver.pings_for(CHECK) == 0


def test_the_deployment_absent_is_failed_naming_it(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver
) -> None:
    config = write_config(tmp_path, sandbox, CHECK, {"deployment": "kruise-manager"})
    with probe_granted_for(sandbox, config):  # an environment configured so: `get` on that name, 404 here
        result = run_once(config, CHECK)
    assert result.status is Status.FAILED
    assert result.errors[0].startswith("deployment kruise-system/kruise-manager: not found")
    assert receiver.pings_for(CHECK) == 0
