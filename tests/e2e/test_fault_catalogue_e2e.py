"""The fault catalogue, proven: every fault, on every target it takes, is caught on the FIRST run after `break` by
every check it names, each failure naming the object; after `heal` those checks are ok again.

The checks run as deployed: the probe identity, the shipped `local.yaml` params (pointed at this session's
sandbox), each run a cold start, the checks of one fault side by side. The one addition: kruise-daemon-coverage
asks every node's /healthz (`probe_healthz`, the opt-in the stand-in kruise-daemon's faults need), with the RBAC
`outpost rbac` generates for that, granted for this module. "Caught" means not healthy, so never pinged: `failed`,
or `error` where the fault takes the API server away (the probe then observes nothing at all).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from generated_rbac import probe_granted_for

from outpost.config import Settings
from outpost.result import Result, Status
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost_sandbox import faults
from outpost_sandbox.cluster import pointed_at

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
LOCAL = Path(__file__).resolve().parents[2] / "infra" / "environments" / "local.yaml"


def targets(fault: faults.Fault) -> list[str | None]:
    """Every target the fault takes (a backend fault only where it fails a check); None: its default."""
    if not fault.checks_by_target:
        return [None]
    return [target for target, checks in fault.checks_by_target.items() if checks]


CASES = [(fault.name, target) for fault in faults.FAULTS.values() for target in targets(fault)]

SYSTEM_OF = {"koord-manager": "koordinator", "kruise-controller-manager": "kruise"}
CONFIGURATION = {"koordinator": "koordinator-mutating-webhook-configuration",
                 "kruise": "kruise-mutating-webhook-configuration"}
LEASE_OF = {"koord-manager": "koordinator-manager", "kruise-controller-manager": "kruise-manager",
            "koord-scheduler": "koord-scheduler", "koord-descheduler": "koord-descheduler"}


def named(fault: str, target: str | None, check: str) -> str:
    """What the failure must name: the broken object, as the check calls it."""
    system = target if target in CONFIGURATION else SYSTEM_OF.get(target or "", "")
    lease = (target or "lease") if fault == "manager-lease-stolen" else LEASE_OF.get(target or "", "lease")
    by_check = {
        "koord-manager-health": "koord-manager", "kruise-manager-health": "kruise-controller-manager",
        "kruise-manager-replicas": "kruise-controller-manager",
        "koord-webhook": "koordinator-webhook-service", "kruise-webhook": "kruise-webhook-service",
        "admission-dry-run": CONFIGURATION.get(system, "webhook"),
        "leader-leases": lease,
        "webhook-cert-expiry": ({"koordinator": "koordinator-webhook-certs", "kruise": "kruise-webhook-certs"}[system]
                                if fault.startswith("webhook-cert") else CONFIGURATION.get(system, "webhook")),
        "kruise-daemon-coverage": "kwok-node-0" if fault == "kruise-daemon-missing" else "kruise-daemon",
        "koordlet-coverage": "kwok-node-0", "nodemetric-freshness": "kwok-node-0",
        "kwok-node-consistency": "kwok-node-0", "node-utilization": "kwok-node-",
        "gang-scheduling": "outpost-fault-", "be-eviction-rate": "be-batch", "ls-latency": "ls-web",
        "apiserver-health": "/", "apiserver-triage": "apiserver", "apiserver-cert-expiry": "apiserver",
    }
    return by_check[check]


@pytest.fixture(scope="module")
def settings(sandbox: SandboxInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """local.yaml as shipped, at this sandbox, without heartbeats; kruise-daemon's /healthz asked, and granted."""
    environment: dict[str, Any] = pointed_at(yaml.safe_load(LOCAL.read_text()), sandbox.state_dir)
    for check in environment["checks"].values():
        check.pop("heartbeat", None)
    daemon = environment["checks"]["kruise-daemon-coverage"]
    daemon["params"] = {**daemon.get("params", {}), "probe_healthz": True}
    config = tmp_path_factory.mktemp("catalogue") / "local.yaml"
    config.write_text(yaml.safe_dump(environment))
    with probe_granted_for(sandbox, config):
        yield load_settings(config)


def run_all(settings: Settings, checks: tuple[str, ...]) -> dict[str, Result]:
    with ThreadPoolExecutor(max_workers=max(1, len(checks))) as pool:
        results = pool.map(lambda check: run_check(settings, check, report=False, log=False), checks)
        return dict(zip(checks, results, strict=True))


def shown(results: dict[str, Result]) -> str:
    return "\n".join(f"{name}: {r.status.value}: {r.summary} {r.errors[:3]}" for name, r in results.items())


@pytest.mark.parametrize(("fault", "target"), CASES, ids=[f"{f}-{t}" if t else f for f, t in CASES])
def test_fault_is_caught_on_the_first_run_and_healed(fault: str, target: str | None, sandbox: SandboxInfo,
                                                     settings: Settings) -> None:
    checks = faults.FAULTS[fault].checks_for(target)
    record = faults.break_fault(fault, target, sandbox.state_dir)
    try:
        broken = run_all(settings, checks)
    finally:
        faults.heal(fault, record["target"], sandbox.state_dir)
    missed = {name: r for name, r in broken.items() if r.status.healthy}
    assert not missed, f"{fault} ({target}) not caught:\n{shown(missed)}"
    unnamed = {name: r for name, r in broken.items()
               if not any(named(fault, target, name) in line for line in [r.summary, *r.errors])}
    assert not unnamed, f"{fault} ({target}): failures do not name the object:\n{shown(unnamed)}"
    healed = run_all(settings, checks)
    not_ok = {name: r for name, r in healed.items() if r.status is not Status.OK}
    assert not not_ok, f"after healing {fault} ({target}):\n{shown(not_ok)}"
