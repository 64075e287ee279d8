"""koord-manager-health end to end: the sandbox's koord-manager pods through the real pod proxy, as the probe.

Healthy = ok and exactly one ping. Each of the catalogue's faults aimed at koord-manager (backend down, 500,
hang, slow beyond the 2 s per-pod timeout, wrong body, the Deployment scaled to 0) = failed on the first
run after `break`, every pod (or the Deployment) named, no ping. The backend faults switch the behaviour of
the target for every pod at once (one backend daemon answers for all of them), so no pod stays healthy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from managers_e2e import broken, heartbeat_env, run_once, write_config

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "koord-manager-health"
NS = "koordinator-system"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


@pytest.fixture
def config(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(heartbeat_env(CHECK), receiver.url_for(CHECK))
    return write_config(tmp_path, sandbox, CHECK)


def manager_pods(sandbox: SandboxInfo) -> list[str]:
    out = sandbox.kubectl("get", "pods", "-n", NS, "-l", "koord-app=koord-manager", "-o", "name")
    return sorted(line.removeprefix("pod/") for line in out.stdout.split())


def test_healthy_is_ok_and_pings_once(config: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_once(config, CHECK)
    assert result.status is Status.OK, result.errors
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1
    assert sorted(result.details["pods"]) == manager_pods(sandbox)


@pytest.mark.parametrize(("fault", "detail"), [
    ("backend-down", "HTTP 503 (error trying to reach service"),
    ("backend-500", "HTTP 500 '[-]webhook-ready failed: reason withheld"),
    ("backend-hang", "no answer within 2 s through the API server proxy"),
    ("backend-slow", "no answer within 2 s through the API server proxy"),
    ("backend-wrong-body", "HTTP 200 with body '[-]not-this-body' (want 'ok')"),
])
def test_backend_fault_fails_naming_every_pod(fault: str, detail: str, config: Path, sandbox: SandboxInfo,
                                              receiver: HeartbeatReceiver) -> None:
    pods = manager_pods(sandbox)
    with broken(sandbox, fault, "koord-manager", CHECK):
        result = run_once(config, CHECK)
    assert result.status is Status.FAILED, result.summary
    assert result.status.exit_code == 1
    assert [line.partition(" :8000/readyz: ")[0] for line in result.errors] == [f"pod {NS}/{p}" for p in pods]
    assert all(detail in line for line in result.errors), result.errors
    assert result.reported is False
    assert receiver.pings_for(CHECK) == 0


def test_scaled_to_zero_fails_naming_the_deployment(config: Path, sandbox: SandboxInfo,
                                                    receiver: HeartbeatReceiver) -> None:
    with broken(sandbox, "manager-scaled-to-zero", "koord-manager", CHECK):
        result = run_once(config, CHECK)
    assert result.status is Status.FAILED
    assert result.errors == ["deployment koordinator-system/koord-manager: observed 0 pods (scaled to 0) "
                             "(want at least 1 answering /readyz)"]
    assert receiver.pings_for(CHECK) == 0
