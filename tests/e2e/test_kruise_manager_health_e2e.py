"""kruise-manager-health end to end: the real kruise-controller-manager pods (both replicas) through the real pod
proxy, as the probe.

Healthy → ok, each pod's `/readyz` answering 200 `ok` (the only path asked by default), exactly one ping. Asked
for `/healthz` too (kruise-manager registers no liveness check, so nothing serves it), every pod's `/healthz`
answers 404 and is named while `/readyz` passes: failed, exit status 1 from the CLI, no ping.
The manager down, frozen or scaled to 0 is the fault catalogue's (test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from managers_e2e import heartbeat_env, run_once, write_config

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "kruise-manager-health"
NS = "kruise-system"
REPLICAS = 2  # the kruise-controller-manager Deployment as the sandbox installs it


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        monkeypatch.setenv(heartbeat_env(CHECK), running.url_for(CHECK))
        yield running


def manager_pods(sandbox: SandboxInfo) -> list[str]:
    out = sandbox.kubectl("get", "pods", "-n", NS, "-l", "control-plane=controller-manager", "-o", "name")
    return sorted(line.removeprefix("pod/") for line in out.stdout.split())


def test_healthy_is_ok_and_pings_once(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run_once(write_config(tmp_path, sandbox, CHECK), CHECK)
    assert result.status is Status.OK, result.errors
    assert result.reported is True
    assert receiver.pings_for(CHECK) == 1
    pods = manager_pods(sandbox)
    assert len(pods) == REPLICAS
    assert result.details["paths"] == ["/readyz"]
    assert sorted(result.details["pods"]) == pods
    for outcomes in result.details["pods"].values():
        assert [(o["endpoint"], o["status_code"]) for o in outcomes] == [(":8000/readyz", 200)]


def test_asking_healthz_fails_every_pod_with_exit_1(
    tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver
) -> None:
    pods = manager_pods(sandbox)
    config = write_config(tmp_path, sandbox, CHECK, {"paths": ["/healthz", "/readyz"]})
    proc = subprocess.run(
        [sys.executable, "-m", "outpost.cli", "run", CHECK, "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["status"] == "failed"
    assert [line.partition(": ")[0] for line in result["errors"]] == [f"pod {NS}/{pod} :8000/healthz" for pod in pods]
    assert all(": HTTP 404 " in line for line in result["errors"]), result["errors"]
    assert receiver.pings_for(CHECK) == 0
