"""Running one check against the sandbox as a deployed function would: the probe identity's kubeconfig, a real
heartbeat receiver, the runner (shared by the apiserver-* and webhook-cert-expiry e2e tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from outpost.result import Result
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost_sandbox import faults
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver


def heartbeat_env(check: str) -> str:
    return "OUTPOST_HEARTBEAT_E2E_" + check.upper().replace("-", "_")


def write_config(
    tmp_path: Path, probe_kubeconfig: Path, check: str, params: dict[str, Any] | None = None, deadline: float = 30
) -> Path:
    path = tmp_path / f"{check}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "environment": "e2e",
                "cluster": {
                    "name": "sandbox",
                    "auth": {"mode": "kubeconfig", "path": str(probe_kubeconfig)},
                    "deadline_seconds": deadline,
                    "connect_timeout_seconds": 3,
                    "read_timeout_seconds": 10,
                },
                "heartbeat": {"timeout_seconds": 2, "retries": 1, "backoff_seconds": 0.1},
                "checks": {check: {"heartbeat": f"env:{heartbeat_env(check)}", "params": params or {}}},
            }
        )
    )
    return path


def run(config: Path, check: str) -> Result:
    return run_check(load_settings(config), check, log=False)


@contextmanager
def broken(fault: str, state_dir: Path, **options: Any) -> Iterator[None]:
    """`fault` active for the block, healed after it whatever happened (heal returns once the cluster works)."""
    faults.break_fault(fault, state_dir=state_dir, **options)
    try:
        yield
    finally:
        faults.heal(fault, state_dir=state_dir)


def assert_silent(result: Result, receiver: HeartbeatReceiver, check: str) -> None:
    assert result.reported is False
    assert receiver.pings_for(check) == 0
