"""What the e2e tests of the manager checks share: a configuration as the probe identity with a real heartbeat
receiver, one run, and waiting until the real managers lead again."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from outpost.result import Result
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost_sandbox import systems
from outpost_sandbox.backends.kube import Kube

if TYPE_CHECKING:
    from conftest import SandboxInfo


def heartbeat_env(check: str) -> str:
    return "OUTPOST_HEARTBEAT_E2E_" + check.upper().replace("-", "_")


def write_config(tmp_path: Path, sandbox: SandboxInfo, check: str, params: dict[str, Any] | None = None) -> Path:
    """An environment with only `check`, authenticated as the read-only probe, its heartbeat from the env."""
    path = tmp_path / f"{check}.yaml"
    entry: dict[str, Any] = {"heartbeat": f"env:{heartbeat_env(check)}"}
    if params:
        entry["params"] = params
    path.write_text(
        yaml.safe_dump(
            {
                "environment": "e2e",
                "cluster": {
                    "name": "sandbox",
                    "auth": {"mode": "kubeconfig", "path": str(sandbox.probe_kubeconfig)},
                    "deadline_seconds": 20,
                    "read_timeout_seconds": 8,
                },
                "heartbeat": {"timeout_seconds": 2, "retries": 1, "backoff_seconds": 0.1},
                "checks": {check: entry},
            }
        )
    )
    return path


def run_once(config: Path, check: str) -> Result:
    return run_check(load_settings(config), check, log=False)


def wait_leases_settled(sandbox: SandboxInfo, timeout: float = 45) -> None:
    """Until each manager's leader Lease is held by one of its Running pods and renewed (read as admin).

    A manager process that exited (the kubelet restarts it in the same pod) takes its Lease back only once the
    old one expired: a real failover window, which leader-leases reports. A test that needs the settled state
    waits for it here, instead of the check being taught to look away.
    """
    deadline = time.monotonic() + timeout
    with Kube.from_kubeconfig(sandbox.kubeconfig) as kube:
        while not systems.leases_settled(kube):
            if time.monotonic() > deadline:
                raise AssertionError(f"leader Leases not held by their managers' running pods after {timeout:.0f} s")
            time.sleep(1)
