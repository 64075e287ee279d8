"""kruise-manager-replicas end to end: the sandbox's kruise-controller-manager Deployment, as the probe.

Healthy = ok (2/2 ready) and one ping; scaled to 0 (the API then omits readyReplicas) = failed on the first
run after `break`, naming the Deployment, no ping.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from generated_rbac import probe_granted_for
from managers_e2e import broken, heartbeat_env, run_once, write_config

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "kruise-manager-replicas"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


@pytest.fixture
def config(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(heartbeat_env(CHECK), receiver.url_for(CHECK))
    return write_config(tmp_path, sandbox, CHECK)


def test_healthy_is_ok_and_pings_once(config: Path, receiver: HeartbeatReceiver) -> None:
    result = run_once(config, CHECK)
    assert result.status is Status.OK, result.errors
    assert result.summary == "deployment kruise-system/kruise-controller-manager: 2/2 replicas ready"
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1


def test_scaled_to_zero_fails_naming_the_deployment(config: Path, sandbox: SandboxInfo,
                                                    receiver: HeartbeatReceiver) -> None:
    with broken(sandbox, "manager-scaled-to-zero", "kruise-controller-manager", CHECK):
        result = run_once(config, CHECK)
    assert result.status is Status.FAILED
    assert result.errors == ["deployment kruise-system/kruise-controller-manager: observed 0 ready replicas, "
                             "spec.replicas 0 (want >= 1)"]
    assert result.reported is False
    assert receiver.pings_for(CHECK) == 0


def test_the_deployment_absent_is_failed_naming_it(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster set up another way (here: a name that does not exist) is named, not taken as healthy."""
    monkeypatch.setenv(heartbeat_env(CHECK), receiver.url_for(CHECK))
    config = write_config(tmp_path, sandbox, CHECK, {"deployment": "kruise-manager"})
    with probe_granted_for(sandbox, config):  # an environment configured so: `get` on that name, 404 here
        result = run_once(config, CHECK)
    assert result.status is Status.FAILED
    assert result.errors[0].startswith("deployment kruise-system/kruise-manager: not found")
    assert receiver.pings_for(CHECK) == 0
