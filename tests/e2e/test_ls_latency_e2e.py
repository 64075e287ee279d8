"""ls-latency end to end: the sandbox's LS workload (Service default/ls-web, backend ls-workload) through the
API server's service proxy, as configured in infra/environments/local.yaml, with the probe's identity.

Healthy → ok and exactly one ping; each backend fault on the target `ls-workload` (down, 500, hang, slow)
→ failed on the first run after `break`, the endpoint named, no ping."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from workload_checks import local_config, run, run_cli

from outpost.result import Status
from outpost_sandbox import faults
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "ls-latency"
NAMED = "ls endpoint ls-web (service default/ls-web:80 /)"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


@pytest.fixture
def config(tmp_path: Path, sandbox: SandboxInfo) -> Path:
    return local_config(tmp_path, sandbox, [CHECK])


def test_healthy_is_ok_and_pings_once(config: Path, receiver: HeartbeatReceiver,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(config, CHECK, receiver, monkeypatch)
    assert result.status is Status.OK, result
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1
    (endpoint,) = result.details["endpoints"]
    assert endpoint["status_code"] == 200
    assert endpoint["elapsed_ms"] < 500


@pytest.mark.parametrize(
    ("fault", "observed"),
    [
        ("backend-down", "observed HTTP 503"),
        ("backend-500", "observed HTTP 500 'internal server error'"),
        ("backend-hang", "observed no answer within 2000 ms"),
        ("backend-slow", "observed no answer within 2000 ms"),
    ],
)
def test_fault_fails_on_the_first_run(fault: str, observed: str, config: Path, sandbox: SandboxInfo,
                                      receiver: HeartbeatReceiver) -> None:
    faults.break_fault(fault, "ls-workload", state_dir=sandbox.state_dir)
    try:
        code, result = run_cli(config, CHECK, receiver)
    finally:
        faults.heal(fault, state_dir=sandbox.state_dir)
    assert (code, result["status"]) == (1, "failed"), result
    assert any(line.startswith(NAMED) and observed in line for line in result["errors"]), result["errors"]
    assert result["reported"] is False
    assert receiver.pings_for(CHECK) == 0
