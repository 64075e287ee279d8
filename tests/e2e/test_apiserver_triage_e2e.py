"""apiserver-triage end to end: the real sandbox API server, the probe's own identity, a real receiver.

Healthy → ok (class healthy, every step timed) and exactly one ping. Its faults' classes on the first run
(apiserver-overload → overloaded, apiserver-cert-expired → tls, etcd-down → not-ready, apiserver-down → network) are
asserted by test_fault_catalogue_e2e.py, with one break each.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from probe_runs import heartbeat_env, run, write_config

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "apiserver-triage"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


@pytest.fixture
def config(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(heartbeat_env(CHECK), receiver.url_for(CHECK))
    return write_config(tmp_path, sandbox.probe_kubeconfig, CHECK)


def address(sandbox: SandboxInfo) -> str:
    return sandbox.server.removeprefix("https://")


def test_healthy_ladder_is_ok_timed_and_pings_once(
    config: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver
) -> None:
    result = run(config, CHECK)
    assert result.status is Status.OK, result.summary
    assert result.details["class"] == "healthy"
    steps = {step["step"]: step for step in result.details["steps"]}
    for name in ("tcp", "tls", "readyz", "list"):
        assert steps[name]["outcome"] == "ok"
        assert steps[name]["ms"] is not None
    assert steps["list"]["status_code"] == 200
    assert result.details["address"] == address(sandbox)
    assert receiver.pings_for(CHECK) == 1
