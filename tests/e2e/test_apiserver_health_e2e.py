"""apiserver-health end to end: the real sandbox API server, the probe's own identity, a real receiver.

Healthy → ok and exactly one ping, with the probe's kubeconfig and with its token; a wrong token → error, no
ping; API server stopped → error (not observed, never failed), exit status 2 from the CLI, no ping. etcd stopped
is the fault catalogue's (test_fault_catalogue_e2e.py) and the runtime adapters' (test_runtimes_e2e.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from outpost.result import Status
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost_sandbox import faults
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "apiserver-health"
HEARTBEAT_ENV = "OUTPOST_HEARTBEAT_E2E_APISERVER_HEALTH"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


def write_config(tmp_path: Path, auth: dict[str, object]) -> Path:
    path = tmp_path / "e2e.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "environment": "e2e",
                "cluster": {"name": "sandbox", "auth": auth, "deadline_seconds": 20, "read_timeout_seconds": 8},
                "heartbeat": {"timeout_seconds": 2, "retries": 1, "backoff_seconds": 0.1},
                "checks": {CHECK: {"heartbeat": f"env:{HEARTBEAT_ENV}"}},
            }
        )
    )
    return path


@pytest.fixture
def probe_config(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.setenv(HEARTBEAT_ENV, receiver.url_for(CHECK))
    return write_config(tmp_path, {"mode": "kubeconfig", "path": str(sandbox.probe_kubeconfig)})


def wait_ready(sandbox: SandboxInfo, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = sandbox.kubectl("get", "--raw", "/readyz", check=False, timeout=10)
        if proc.returncode == 0:
            return
        time.sleep(1)
    pytest.fail("sandbox API server did not become ready again after the fault was healed")


def test_healthy_pings_once(probe_config: Path, receiver: HeartbeatReceiver) -> None:
    result = run_check(load_settings(probe_config), CHECK, log=False)
    assert result.status is Status.OK, result.errors
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1
    readyz = {c["name"] for c in result.details["readyz"]["checks"]}
    assert {"etcd", "ping", "informer-sync"} <= readyz
    assert all(c["ok"] for c in result.details["readyz"]["checks"])


def test_token_auth_with_probe_identity(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("E2E_PROBE_TOKEN", sandbox.probe_token)
    monkeypatch.setenv(HEARTBEAT_ENV, receiver.url_for(CHECK))
    config = write_config(
        tmp_path,
        {"mode": "token", "server": sandbox.server, "token": "env:E2E_PROBE_TOKEN", "ca_file": str(sandbox.ca_path)},
    )
    result = run_check(load_settings(config), CHECK, log=False)
    assert result.status is Status.OK, result.errors
    assert receiver.pings_for(CHECK) == 1


def test_wrong_token_is_error_and_silent(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("E2E_PROBE_TOKEN", "not-a-valid-token")
    monkeypatch.setenv(HEARTBEAT_ENV, receiver.url_for(CHECK))
    config = write_config(
        tmp_path,
        {"mode": "token", "server": sandbox.server, "token": "env:E2E_PROBE_TOKEN", "ca_file": str(sandbox.ca_path)},
    )
    result = run_check(load_settings(config), CHECK, log=False)
    assert result.status is Status.ERROR
    assert "HTTP 401" in result.summary
    assert "not-a-valid-token" not in result.model_dump_json()
    assert receiver.pings_for(CHECK) == 0


def test_cli_json_against_sandbox(sandbox: SandboxInfo) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "outpost.cli", "run", CHECK, "--kubeconfig", str(sandbox.probe_kubeconfig), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert set(result) == {"check", "status", "summary", "errors", "details", "duration_ms", "reported"}
    assert result["status"] == "ok"
    assert result["reported"] is False


def test_apiserver_down_is_error_exit_2_and_silent(
    probe_config: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver
) -> None:
    faults.break_fault("apiserver-down", state_dir=sandbox.state_dir)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "outpost.cli", "run", CHECK, "--config", str(probe_config), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 2, proc.stdout + proc.stderr
        (result,) = json.loads(proc.stdout)
        assert result["status"] == "error"
        assert "connection refused" in result["summary"]
        assert receiver.pings_for(CHECK) == 0
    finally:
        faults.heal("apiserver-down", state_dir=sandbox.state_dir)
        wait_ready(sandbox)
