"""ls-latency end to end: the sandbox's LS workload (Service default/ls-web, backend ls-workload) through the
API server's service proxy, as configured in infra/environments/local.yaml, with the probe's identity.

Healthy → ok and exactly one ping. An answer slower than `degraded_ms` but within `failed_ms` (`backend-slow`
with a 1 s delay) → degraded, named, still pinged. A 200 with a body upstream never sends (`backend-wrong-body`)
→ failed with local.yaml's `expect_body`, ok with `expect_body: null` (status code alone). The workload down,
answering 500, hanging or slower than `failed_ms` is the fault catalogue's (test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from workload_checks import ROOT, local_config, run

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


def endpoint_judged_by_status_code(tmp_path: Path, sandbox: SandboxInfo) -> Path:
    """local.yaml's ls-web endpoint with `expect_body: null`, in a directory of its own."""
    shipped = yaml.safe_load((ROOT / "infra" / "environments" / "local.yaml").read_text())
    endpoints: list[dict[str, Any]] = [
        {**e, "expect_body": None} for e in shipped["checks"][CHECK]["params"]["endpoints"]
    ]
    directory = tmp_path / "by-status-code"
    directory.mkdir()
    return local_config(directory, sandbox, [CHECK], {CHECK: {"endpoints": endpoints}})


def test_healthy_is_ok_and_pings_once(
    config: Path, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(config, CHECK, receiver, monkeypatch)
    assert result.status is Status.OK, result
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1
    (endpoint,) = result.details["endpoints"]
    assert endpoint["status_code"] == 200
    assert endpoint["elapsed_ms"] < 500


def test_slower_than_degraded_ms_is_degraded_and_pinged(
    config: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    faults.break_fault("backend-slow", "ls-workload", sandbox.state_dir, delay_ms=1000)
    try:
        result = run(config, CHECK, receiver, monkeypatch)
    finally:
        faults.heal("backend-slow", state_dir=sandbox.state_dir)
    assert result.status is Status.DEGRADED, result.summary
    (line,) = result.errors
    assert line.startswith(f"{NAMED}: observed HTTP 200 in ")
    assert line.endswith("ms (want HTTP 200 within 500 ms)")
    assert receiver.pings_for(CHECK) == 1


def test_a_wrong_body_passes_only_when_judged_by_status_code(
    config: Path, tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_code = endpoint_judged_by_status_code(tmp_path, sandbox)
    faults.break_fault("backend-wrong-body", "ls-workload", sandbox.state_dir)
    try:
        by_body = run(config, CHECK, receiver, monkeypatch)
        by_status = run(by_code, CHECK, receiver, monkeypatch)
    finally:
        faults.heal("backend-wrong-body", state_dir=sandbox.state_dir)
    assert by_body.status is Status.FAILED, by_body.summary
    assert by_body.errors == [f"{NAMED}: observed HTTP 200 without 'ok' in the body ('unexpected')"]
    assert by_status.status is Status.OK, by_status.errors
    assert receiver.pings_for(CHECK) == 1  # the status-code run's only
