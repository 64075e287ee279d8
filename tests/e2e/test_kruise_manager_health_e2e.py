"""kruise-manager-health end to end: the sandbox's kruise-controller-manager pods' /healthz and /readyz through
the real pod proxy, as the probe.

Healthy = ok and exactly one ping. Each catalogue fault aimed at kruise-manager (backend down, 500, hang, slow
beyond the 2 s per-request timeout, wrong body with the default body match `ok`) and the Deployment scaled to
0 = failed on the first run after `break`, every pod and endpoint (or the Deployment) named, no ping. With the
body match turned off, the wrong body passes: the status code alone is upstream's contract. The exit code is
proven once through the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
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
CHECK = "kruise-manager-health"
NS = "kruise-system"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


@pytest.fixture
def config(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(heartbeat_env(CHECK), receiver.url_for(CHECK))
    return write_config(tmp_path, sandbox, CHECK)


def manager_pods(sandbox: SandboxInfo) -> list[str]:
    out = sandbox.kubectl("get", "pods", "-n", NS, "-l", "control-plane=controller-manager", "-o", "name")
    return sorted(line.removeprefix("pod/") for line in out.stdout.split())


def test_healthy_is_ok_and_pings_once(config: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_once(config, CHECK)
    assert result.status is Status.OK, result.errors
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1
    assert sorted(result.details["pods"]) == manager_pods(sandbox)


@pytest.mark.parametrize(("fault", "detail"), [
    ("backend-down", "HTTP 503 (error trying to reach service"),
    ("backend-500", " failed: reason withheld"),
    ("backend-hang", "no answer within 2 s through the API server proxy"),
    ("backend-slow", "no answer within 2 s through the API server proxy"),
    ("backend-wrong-body", "HTTP 200 with body '[-]not-this-body' (want 'ok')"),
])
def test_backend_fault_fails_naming_every_pod_and_endpoint(fault: str, detail: str, config: Path,
                                                           sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    pods = manager_pods(sandbox)
    with broken(sandbox, fault, "kruise-manager", CHECK):
        result = run_once(config, CHECK)
    assert result.status is Status.FAILED, result.summary
    assert [line.partition(": ")[0] for line in result.errors] == [
        f"pod {NS}/{pod} :8000/{path}" for pod in pods for path in ("healthz", "readyz")]
    assert all(detail in line for line in result.errors), result.errors
    assert result.reported is False
    assert receiver.pings_for(CHECK) == 0


def test_wrong_body_passes_when_judged_by_status_code_only(tmp_path: Path, sandbox: SandboxInfo,
                                                           receiver: HeartbeatReceiver,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(heartbeat_env(CHECK), receiver.url_for(CHECK))
    config = write_config(tmp_path, sandbox, CHECK, {"expect_body": None})
    with broken(sandbox, "backend-wrong-body", "kruise-manager", CHECK):
        result = run_once(config, CHECK)
    assert result.status is Status.OK, result.errors
    assert receiver.pings_for(CHECK) == 1


def test_scaled_to_zero_fails_with_exit_1_and_no_ping(config: Path, sandbox: SandboxInfo,
                                                      receiver: HeartbeatReceiver) -> None:
    with broken(sandbox, "manager-scaled-to-zero", "kruise-controller-manager", CHECK):
        proc = subprocess.run([sys.executable, "-m", "outpost.cli", "run", CHECK, "--config", str(config), "--json"],
                              capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["status"] == "failed"
    assert result["errors"] == ["deployment kruise-system/kruise-controller-manager: observed 0 pods (scaled to 0) "
                                "(want at least 1 answering /healthz, /readyz)"]
    assert receiver.pings_for(CHECK) == 0
