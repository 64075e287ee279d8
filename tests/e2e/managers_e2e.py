"""What the e2e tests of the manager checks share: a configuration as the probe identity with a real heartbeat
receiver, one run, and "break, run once, heal" for a sandbox fault.

Every fault is judged on the FIRST run after `break_fault` returns (no polling until it shows): a check that
needs a second look would alert a schedule later than it should.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from outpost.result import Result
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost_sandbox import faults

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
    path.write_text(yaml.safe_dump({
        "environment": "e2e",
        "cluster": {"name": "sandbox", "auth": {"mode": "kubeconfig", "path": str(sandbox.probe_kubeconfig)},
                    "deadline_seconds": 20, "read_timeout_seconds": 8},
        "heartbeat": {"timeout_seconds": 2, "retries": 1, "backoff_seconds": 0.1},
        "checks": {check: entry},
    }))
    return path


def run_once(config: Path, check: str) -> Result:
    return run_check(load_settings(config), check, log=False)


@contextmanager
def broken(sandbox: SandboxInfo, fault: str, target: str | None, check: str, **options: Any) -> Iterator[None]:
    """`fault` active on `target` for the block (healed after, whatever happens); the catalogue must say
    that it fails `check` when aimed there, so the test proves what the sandbox promises."""
    assert check in faults.FAULTS[fault].checks_for(target), f"{fault} on {target} is not meant to fail {check}"
    faults.break_fault(fault, target, sandbox.state_dir, **options)
    try:
        yield
    finally:
        faults.heal(fault, state_dir=sandbox.state_dir)


MANAGER_LEASES = {("koordinator-system", "koordinator-manager"): "koord-app=koord-manager",
                  ("kruise-system", "kruise-manager"): "control-plane=controller-manager"}


def wait_leases_settled(sandbox: SandboxInfo, timeout: float = 30) -> None:
    """Until each manager Lease is held by one of its Running pods (read as admin, not by the check).

    After an earlier test healed `manager-scaled-to-zero`, the Lease still names the pod that is gone until
    a new pod renews it: a real failover window, which leader-leases reports as degraded. A test that needs
    the settled state waits for it here, instead of the check being taught to look away.
    """
    deadline = time.monotonic() + timeout
    while True:
        unsettled = []
        for (ns, name), selector in MANAGER_LEASES.items():
            lease = json.loads(sandbox.kubectl("get", "lease", "-n", ns, name, "-o", "json").stdout)
            pods = json.loads(sandbox.kubectl("get", "pods", "-n", ns, "-l", selector, "-o", "json").stdout)
            running = {p["metadata"]["name"] for p in pods["items"]
                       if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")}
            holder = str(lease["spec"].get("holderIdentity", "")).rpartition("_")[0]
            if holder not in running:
                unsettled.append(f"{ns}/{name} held by {holder or 'nobody'}")
        if not unsettled:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"leader Leases not settled after {timeout:.0f} s: {', '.join(unsettled)}")
        time.sleep(1)
