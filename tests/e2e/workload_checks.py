"""What the e2e tests of ls-latency, be-eviction-rate, gang-scheduling and kwok-pod-reconciler share:
the shipped `local` configuration pointed at this session's sandbox, and a check run as a deployed
function would run it (its heartbeat a real receiver's URL)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from outpost.result import Result
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

ROOT = Path(__file__).resolve().parents[2]


def heartbeat_env(name: str) -> str:
    return "OUTPOST_HEARTBEAT_" + name.upper().replace("-", "_")


def local_config(
    tmp_path: Path, sandbox: SandboxInfo, names: list[str], params: dict[str, dict[str, Any]] | None = None
) -> Path:
    """infra/environments/local.yaml with only `names` enabled, its kubeconfig paths (the probe's, and the
    reconciler's own) pointed at this session's sandbox, and `params` merged over the shipped ones."""
    doc = yaml.safe_load((ROOT / "infra" / "environments" / "local.yaml").read_text())
    doc["cluster"]["auth"]["path"] = str(sandbox.probe_kubeconfig)
    checks = {}
    for name in names:
        entry = dict(doc["checks"][name])
        auth = entry.get("cluster_auth")
        if auth is not None:
            entry["cluster_auth"] = {**auth, "path": str(sandbox.state_dir / Path(auth["path"]).name)}
        entry["params"] = {**entry.get("params", {}), **(params or {}).get(name, {})}
        checks[name] = entry
    doc["checks"] = checks
    path = tmp_path / f"local-{'-'.join(names)}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run(config: Path, name: str, receiver: HeartbeatReceiver, monkeypatch: Any) -> Result:
    monkeypatch.setenv(heartbeat_env(name), receiver.url_for(name))
    return run_check(load_settings(config), name, log=False)


def run_cli(config: Path, name: str, receiver: HeartbeatReceiver) -> tuple[int, dict[str, Any]]:
    """`outpost run NAME --config FILE --json` in a process of its own: (exit code, the one result)."""
    env = {**os.environ, heartbeat_env(name): receiver.url_for(name)}
    proc = subprocess.run(
        [sys.executable, "-m", "outpost.cli", "run", name, "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env=env,
    )
    (result,) = json.loads(proc.stdout)
    return proc.returncode, result
