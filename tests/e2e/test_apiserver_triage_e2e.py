"""apiserver-triage end to end: the real sandbox API server, the probe's own identity, a real receiver.

Healthy → ok (class healthy, every step timed) and exactly one ping. On the FIRST run after each of its faults
(faults/catalogue.py): apiserver-overload → overloaded (429 for the probe while /readyz is 200),
apiserver-cert-expired → tls, etcd-down → not-ready, apiserver-down → network; failed, the API server named, no ping.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from probe_runs import assert_silent, broken, heartbeat_env, run, write_config

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


def test_healthy_ladder_is_ok_timed_and_pings_once(config: Path, sandbox: SandboxInfo,
                                                   receiver: HeartbeatReceiver) -> None:
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


@pytest.mark.parametrize(
    ("fault", "triage_class", "error_part"),
    [
        pytest.param("apiserver-overload", "overloaded", "answered 429 Too Many Requests while /readyz is 200",
                     id="apiserver-overload"),
        pytest.param("apiserver-cert-expired", "tls", "certificate verification failed: certificate has expired",
                     id="apiserver-cert-expired"),
        pytest.param("etcd-down", "not-ready", "etcd failed", id="etcd-down"),
        pytest.param("apiserver-down", "network", "Connection refused", id="apiserver-down"),
    ],
)
def test_fault_is_classified_on_the_first_run(fault: str, triage_class: str, error_part: str, config: Path,
                                              sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    with broken(fault, sandbox.state_dir):
        result = run(config, CHECK)
    assert result.status is Status.FAILED, result.summary
    assert result.details["class"] == triage_class
    assert result.summary.startswith(f"apiserver {triage_class}: apiserver {address(sandbox)}")
    (line,) = result.errors
    assert error_part in line
    assert_silent(result, receiver, CHECK)
