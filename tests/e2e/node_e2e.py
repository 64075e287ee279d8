"""What the node checks' e2e tests share: run one check as the read-only probe against the sandbox
with a real heartbeat receiver, and hold a sandbox fault for the length of a `with` block.

Each run is a cold start of its own (fresh settings), as a scheduled function would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def write_config(directory: Path, check: str, probe_kubeconfig: Path, params: dict[str, Any] | None = None) -> Path:
    path = directory / f"{check}.yaml"
    path.write_text(yaml.safe_dump({
        "environment": "e2e",
        "cluster": {"name": "sandbox", "auth": {"mode": "kubeconfig", "path": str(probe_kubeconfig)},
                    "deadline_seconds": 45, "read_timeout_seconds": 10},
        "heartbeat": {"timeout_seconds": 2, "retries": 1, "backoff_seconds": 0.1},
        "checks": {check: {"heartbeat": f"env:{heartbeat_env(check)}", "params": params or {}}},
    }))
    return path


def run_as_probe(directory: Path, check: str, probe_kubeconfig: Path, receiver: HeartbeatReceiver,
                 params: dict[str, Any] | None = None) -> Result:
    """One run of `check` as the probe identity, reporting to `receiver`."""
    os.environ[heartbeat_env(check)] = receiver.url_for(check)
    return run_check(load_settings(write_config(directory, check, probe_kubeconfig, params)), check, log=False)


def cli_run(config: Path, check: str, receiver: HeartbeatReceiver) -> tuple[int, dict[str, Any]]:
    """`outpost run CHECK --config FILE --json` in a process of its own: (exit status, the result)."""
    env = {**os.environ, heartbeat_env(check): receiver.url_for(check)}
    proc = subprocess.run([sys.executable, "-m", "outpost.cli", "run", check, "--config", str(config), "--json"],
                          capture_output=True, text=True, timeout=120, check=False, env=env)

    (result,) = json.loads(proc.stdout)
    return proc.returncode, result


@contextmanager
def fault(state_dir: Path, name: str, target: str | None = None) -> Iterator[dict[str, Any]]:
    """The fault `name` is active inside the block (break returns once it is observable); healed after."""
    record = faults.break_fault(name, target=target, state_dir=state_dir)
    try:
        yield record
    finally:
        faults.heal(name, state_dir=state_dir)
