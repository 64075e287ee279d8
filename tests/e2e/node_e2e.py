"""What the node checks' e2e tests share: run one check as the read-only probe against the sandbox with a real
heartbeat receiver, with the params the sandbox's own environment gives it (or the check's defaults).

The sandbox's nodes are KWOK fake nodes plus one real node (the process node that runs the managers), and its
stand-in koordlet and kruise-daemon report for all of them; the node checks judge real nodes only by default,
so `infra/environments/local.yaml` opts the fake nodes in, and so do these tests unless they test the defaults.
Each run is a cold start of its own (fresh settings), as a scheduled function would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from outpost.result import Result
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

LOCAL = Path(__file__).resolve().parents[2] / "infra" / "environments" / "local.yaml"
REAL_NODES = 1
"""The process node (`outpost_sandbox.kubelet`): the sandbox's one node that is not a KWOK fake node."""


def heartbeat_env(check: str) -> str:
    return "OUTPOST_HEARTBEAT_E2E_" + check.upper().replace("-", "_")


def shipped_params(check: str) -> dict[str, Any]:
    """The check's params in the sandbox's environment as shipped (local.yaml)."""
    entry = yaml.safe_load(LOCAL.read_text())["checks"].get(check) or {}
    return dict(entry.get("params") or {})


def write_config(
    directory: Path, check: str, probe_kubeconfig: Path, params: dict[str, Any] | None = None, *, shipped: bool = True
) -> Path:
    """`params` over local.yaml's for `check` (`shipped`), or over the check's defaults alone."""
    merged = {**(shipped_params(check) if shipped else {}), **(params or {})}
    path = directory / f"{check}.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "environment": "e2e",
                "cluster": {
                    "name": "sandbox",
                    "auth": {"mode": "kubeconfig", "path": str(probe_kubeconfig)},
                    "deadline_seconds": 45,
                    "read_timeout_seconds": 10,
                },
                "heartbeat": {"timeout_seconds": 2, "retries": 1, "backoff_seconds": 0.1},
                "checks": {check: {"heartbeat": f"env:{heartbeat_env(check)}", "params": merged}},
            }
        )
    )
    return path


def run_as_probe(
    directory: Path,
    check: str,
    probe_kubeconfig: Path,
    receiver: HeartbeatReceiver,
    params: dict[str, Any] | None = None,
    *,
    shipped: bool = True,
) -> Result:
    """One run of `check` as the probe identity, reporting to `receiver`."""
    os.environ[heartbeat_env(check)] = receiver.url_for(check)
    config = write_config(directory, check, probe_kubeconfig, params, shipped=shipped)
    return run_check(load_settings(config), check, log=False)


def cli_run(config: Path, check: str, receiver: HeartbeatReceiver) -> tuple[int, dict[str, Any]]:
    """`outpost run CHECK --config FILE --json` in a process of its own: (exit status, the result)."""
    env = {**os.environ, heartbeat_env(check): receiver.url_for(check)}
    proc = subprocess.run(
        [sys.executable, "-m", "outpost.cli", "run", check, "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )

    (result,) = json.loads(proc.stdout)
    return proc.returncode, result
