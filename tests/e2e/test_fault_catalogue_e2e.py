"""The fault catalogue, proven: every fault, on every target, is caught on the FIRST run after `break` by every
check it names, naming the object; after `heal` every check of `run --all` is ok again. Real components are
also observed while broken and after heal (`WHILE_BROKEN`, `AFTER_HEAL`).

The checks run as deployed (probe identity, local.yaml params) as ONE warm instance, so each fault's first run
follows the watch from the previous heal: this proves following misses no fault (each check's own e2e runs
cold). "Caught" means never pinged: `failed`, or `error` where the fault takes the API server away. Additions:
`probe_healthz` for kruise-daemon-coverage, and a short `HEALED_LATENCY_WINDOW_S` so each heal costs seconds.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from check_runs import LOCAL
from cryptography import x509
from generated_rbac import probe_granted_for
from sandbox_http import age, get_json

from outpost.cluster import warm
from outpost.config import Settings
from outpost.result import Result, Status
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost_sandbox import faults, systems
from outpost_sandbox.faults.base import pod_process_state
from outpost_sandbox.faults.managers import CERT_SECRET, LEADER_LEASES
from outpost_sandbox.kubelet.daemon import NODE_NAME as PROCESS_NODE
from outpost_sandbox.state import pointed_at

if TYPE_CHECKING:
    from conftest import SandboxInfo

HEALED_LATENCY_WINDOW_S = 2.0  # the managers' Lease renewals (every 2 s) put PUTs and GETs in every window


def targets(fault: faults.Fault) -> list[str | None]:
    """Every target the fault takes (a backend fault only where it fails a check); None: its default."""
    if not fault.checks_by_target:
        return [None]
    return [target for target, checks in fault.checks_by_target.items() if checks]


CASES = [(fault.name, target) for fault in faults.FAULTS.values() for target in targets(fault)]

SYSTEM_OF = {"koord-manager": "koordinator", "kruise-controller-manager": "kruise"}
CONFIGURATION = {
    "koordinator": "koordinator-mutating-webhook-configuration",
    "kruise": "kruise-mutating-webhook-configuration",
}
LEASE_OF = {
    "koord-manager": "koordinator-manager",
    "kruise-controller-manager": "kruise-manager",
    "koord-scheduler": "koord-scheduler",
    "koord-descheduler": "koord-descheduler",
    # A fault aimed at a system (its webhook certificates) holds that system's manager down, so its Lease goes stale.
    "koordinator": "koordinator-manager",
    "kruise": "kruise-manager",
}


REAL_AGENT_FAULTS = ("koordlet-down", "koordlet-frozen", "kruise-daemon-down")
"""Faults of the process node's real agents (the others act on KWOK nodes, whose agents are stand-ins)."""


def named(fault: str, target: str | None, check: str) -> str:
    """What the failure must name: the broken object, as the check calls it."""
    system = target if target in CONFIGURATION else SYSTEM_OF.get(target or "", "")
    lease = (target or "lease") if fault == "manager-lease-stolen" else LEASE_OF.get(target or "", "lease")
    by_check = {
        "koord-manager-health": "koord-manager",
        "kruise-manager-health": "kruise-controller-manager",
        "kruise-manager-replicas": "kruise-controller-manager",
        "koord-webhook": "koordinator-webhook-service",
        "kruise-webhook": "kruise-webhook-service",
        "admission-dry-run": CONFIGURATION.get(system, "webhook"),
        "leader-leases": lease,
        "webhook-cert-expiry": (
            {"koordinator": "koordinator-webhook-certs", "kruise": "kruise-webhook-certs"}[system]
            if fault.startswith("webhook-cert")
            else CONFIGURATION.get(system, "webhook")
        ),
        "kruise-daemon-coverage": {"kruise-daemon-missing": "kwok-node-0", "kruise-daemon-down": PROCESS_NODE}.get(
            fault, "kruise-daemon"
        ),
        "koordlet-coverage": PROCESS_NODE if fault in REAL_AGENT_FAULTS else "kwok-node-0",
        "nodemetric-freshness": PROCESS_NODE if fault in REAL_AGENT_FAULTS else "kwok-node-0",
        "kwok-node-consistency": "kwok-node-0",
        "node-utilization": "kwok-node-",
        "gang-scheduling": "outpost-fault-",
        "be-eviction-rate": "be-batch",
        "ls-latency": "ls-web",
        "apiserver-health": "/",
        "apiserver-triage": "apiserver",
        "apiserver-cert-expiry": "apiserver",
    }
    return by_check[check]


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("catalogue") / "local.yaml"


@pytest.fixture(scope="module")
def settings(sandbox: SandboxInfo, config_file: Path) -> Iterator[Settings]:
    """local.yaml as shipped, at this sandbox, without heartbeats; kruise-daemon's /healthz asked, and granted."""
    environment: dict[str, Any] = pointed_at(yaml.safe_load(LOCAL.read_text()), sandbox.state_dir)
    for check in environment["checks"].values():
        check.pop("heartbeat", None)
    daemon = environment["checks"]["kruise-daemon-coverage"]
    daemon["params"] = {**daemon.get("params", {}), "probe_healthz": True}
    certificates = environment["checks"]["webhook-cert-expiry"]  # the certificate faults need the Secrets read
    certificates["params"] = {**certificates.get("params", {}), "read_serving_secrets": True}
    latency = environment["checks"]["apiserver-latency"]
    # Cold every run: a scrape kept from before a fault would put the fault inside the healed run's window.
    latency["params"] = {
        **latency.get("params", {}),
        "interval_seconds": HEALED_LATENCY_WINDOW_S,
        "max_previous_age_seconds": 0,
    }
    config_file.write_text(yaml.safe_dump(environment))
    with probe_granted_for(sandbox, config_file):
        yield load_settings(config_file)


SAID = {  # (fault, check) -> what that check's summary must say: its class of the failure
    ("apiserver-overload", "apiserver-triage"): "apiserver overloaded:",
    ("apiserver-cert-expired", "apiserver-triage"): "apiserver tls:",
    ("etcd-down", "apiserver-triage"): "apiserver not-ready:",
    ("apiserver-down", "apiserver-triage"): "apiserver network:",
    ("apiserver-cert-expiring", "apiserver-cert-expiry"): "expires in 5.0 days",
    ("apiserver-cert-expired", "apiserver-cert-expiry"): "expired",
    ("etcd-down", "apiserver-health"): "etcd",
}


# ---- what the real components did ------------------------------------------------------------------------------
def pods_of(sandbox: SandboxInfo, manager: str) -> list[dict[str, Any]]:
    ns, selector, _lease = systems.MANAGERS[manager]
    items: list[dict[str, Any]] = get_json(sandbox, f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")["items"]
    return items


def process_state(sandbox: SandboxInfo, pod: dict[str, Any]) -> str:
    """The kernel's state letter of a pod's process on the process node (S/R alive, T stopped), '' if none runs."""
    return pod_process_state(sandbox.state_dir, pod)


def lease_of(sandbox: SandboxInfo, name: str) -> dict[str, Any]:
    _manager, ns = LEADER_LEASES[name]
    spec: dict[str, Any] = get_json(sandbox, f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")["spec"]
    return spec


def crash_looping(sandbox: SandboxInfo, target: str | None) -> None:
    for pod in pods_of(sandbox, target or ""):
        waiting = pod["status"]["containerStatuses"][0]["state"].get("waiting") or {}
        assert waiting.get("reason") == "CrashLoopBackOff", pod["metadata"]["name"]
        assert process_state(sandbox, pod) == "", pod["metadata"]["name"]


def frozen(sandbox: SandboxInfo, target: str | None) -> None:
    for pod in pods_of(sandbox, target or ""):
        assert process_state(sandbox, pod) == "T", pod["metadata"]["name"]  # stopped, not gone


def agent_pod(sandbox: SandboxInfo, ns: str, selector: str) -> dict[str, Any]:
    items = get_json(
        sandbox, f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}&fieldSelector=spec.nodeName={PROCESS_NODE}"
    )["items"]
    assert len(items) == 1, f"{ns} {selector} on {PROCESS_NODE}: {len(items)} pods"
    pod: dict[str, Any] = items[0]
    return pod


def agent_in_state(ns: str, selector: str, state: str) -> Callable[[SandboxInfo, str | None], None]:
    """The process node's real agent as the fault left it: `state` '' (no process, CrashLoopBackOff) or T."""

    def verify(sandbox: SandboxInfo, _target: str | None) -> None:
        pod = agent_pod(sandbox, ns, selector)
        assert process_state(sandbox, pod) == state, pod["metadata"]["name"]
        if not state:
            waiting = pod["status"]["containerStatuses"][0]["state"].get("waiting") or {}
            assert waiting.get("reason") == "CrashLoopBackOff", pod["metadata"]["name"]

    return verify


def leader_restarted_not_leading(sandbox: SandboxInfo, target: str | None) -> None:
    """The real manager loses its Lease, exits after its renew deadline and is restarted; nobody may take the
    Lease until the thief's hour is up."""
    manager = LEADER_LEASES[target or ""][0]
    deadline = time.monotonic() + 60
    while not any(
        p["status"]["containerStatuses"][0].get("lastState", {}).get("terminated", {}).get("finishedAt")
        and age(p["status"]["containerStatuses"][0]["lastState"]["terminated"]["finishedAt"]) < 60
        for p in pods_of(sandbox, manager)
    ):
        assert time.monotonic() < deadline, f"no pod of {manager} exited after its Lease was stolen"
        time.sleep(1)
    assert lease_of(sandbox, target or "")["holderIdentity"] == "outpost-fault-thief"


def secret_of(sandbox: SandboxInfo, system: str | None) -> dict[str, Any]:
    ns, name = CERT_SECRET[system or ""]
    found: dict[str, Any] = get_json(sandbox, f"/api/v1/namespaces/{ns}/secrets/{name}")
    return found


def ca_days(secret: dict[str, Any]) -> float:
    ca = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["ca-cert.pem"]))
    return (ca.not_valid_after_utc - ca.not_valid_before_utc).total_seconds() / 86400


def republished_by_the_manager(sandbox: SandboxInfo, system: str | None) -> None:
    """After heal the manager's own CA (10 years; it replaces any certificate expiring within 6 months) is in its
    Secret and in every caBundle of its configurations."""
    secret = secret_of(sandbox, system)
    assert ca_days(secret) > 3600
    config = get_json(
        sandbox, f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{CONFIGURATION[system or '']}"
    )
    assert {w["clientConfig"]["caBundle"] for w in config["webhooks"]} == {secret["data"]["ca-cert.pem"]}


def control_plane_status(sandbox: SandboxInfo, _target: str | None) -> None:
    """The launcher's own view: etcd stopped, the sandbox not up."""
    status = sandbox.handle.status()
    assert not status.up
    assert [c.alive for c in status.components if c.name == "etcd"] == [False]


def observers_only(sandbox: SandboxInfo, _target: str | None) -> None:
    """An expired public certificate breaks what observers see, not the cluster (it uses the internal one)."""
    assert sandbox.handle.status().apiserver_readyz == 200


WHILE_BROKEN: dict[str, Callable[[SandboxInfo, str | None], None]] = {
    "manager-down": crash_looping,
    "manager-frozen": frozen,
    "manager-lease-stolen": leader_restarted_not_leading,
    "etcd-down": control_plane_status,
    "apiserver-cert-expired": observers_only,
    "koordlet-down": agent_in_state("koordinator-system", "koord-app=koordlet", ""),
    "koordlet-frozen": agent_in_state("koordinator-system", "koord-app=koordlet", "T"),
    "kruise-daemon-down": agent_in_state("kruise-system", "control-plane=daemon", ""),
}
AFTER_HEAL: dict[str, Callable[[SandboxInfo, str | None], None]] = {
    "webhook-cert-expiring": republished_by_the_manager,
    "webhook-certs-deleted": republished_by_the_manager,
}


@pytest.fixture(autouse=True)
def _cold_instance() -> None:
    """Overrides tests/conftest.py's fixture of this name: the catalogue keeps its warm instance across faults."""


@pytest.fixture(scope="module", autouse=True)
def warmed(settings: Settings) -> Iterator[None]:
    """One healthy `run --all` first, so that even the first fault's runs are warm; forgotten at the end."""
    warm.forget()
    healthy = run_all(settings, tuple(settings.enabled_checks()))
    not_ok = {name: r for name, r in healthy.items() if r.status is not Status.OK}
    assert not not_ok, f"the sandbox is not healthy before the catalogue:\n{shown(not_ok)}"
    yield
    warm.forget()


def gone(failure: str) -> bool:
    """A failure class that says the named object does not exist: its step lists where it should be."""
    return failure.endswith(("-missing", "-absent"))


def next_steps_taken(
    sandbox: SandboxInfo, settings: Settings, config_file: Path, results: dict[str, Result], shows: Callable[[str], str]
) -> list[str]:
    """Run every next step the broken results give, as the person paged would (kubectl at the cluster, `outpost` at
    the environment); what went wrong, if anything. Every step must exit 0 (`outpost run` may also exit 1, "some
    check failed": it ran, and its verdict is the diagnosis; a fault that takes the API server away leaves no kubectl
    command able to succeed). And each check's steps must show the object its failure names (`shows(check)`): in a
    step's output, or, for a step whose class says the object is gone, by listing where it should be."""
    environment = {
        **os.environ,
        "KUBECONFIG": str(sandbox.kubeconfig),
        "PATH": f"{sandbox.bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    problems = []
    for name, result in results.items():
        if len(result.next_steps) != len(result.errors):
            problems.append(f"{name}: {len(result.errors)} line(s) but {len(result.next_steps)} next step(s)")
        proven = False
        for step in {step.command: step for step in result.next_steps}.values():
            command = step.command.replace(f"--env {settings.environment}", f"--config {config_file}")
            done = subprocess.run(
                ["bash", "-o", "pipefail", "-c", command],
                capture_output=True,
                text=True,
                env=environment,
                timeout=120,
                check=False,
            )
            output = done.stdout + done.stderr
            if done.returncode not in ({0, 1} if command.startswith("outpost run ") else {0}):
                problems.append(f"{name}: `{step.command}` exited {done.returncode}: {output[-400:]}")
            proven = proven or shows(name) in output or gone(step.failure)
        if result.next_steps and not proven:
            problems.append(f"{name}: no next step shows {shows(name)!r} (or, where it is gone, its absence)")
    return problems


def run_all(settings: Settings, checks: tuple[str, ...]) -> dict[str, Result]:
    with ThreadPoolExecutor(max_workers=max(1, len(checks))) as pool:
        results = pool.map(lambda check: run_check(settings, check, report=False, log=False), checks)
        return dict(zip(checks, results, strict=True))


def shown(results: dict[str, Result]) -> str:
    return "\n".join(f"{name}: {r.status.value}: {r.summary} {r.errors[:3]}" for name, r in results.items())


@pytest.mark.parametrize(("fault", "target"), CASES, ids=[f"{f}-{t}" if t else f for f, t in CASES])
def test_fault_is_caught_on_the_first_run_and_healed(
    fault: str, target: str | None, sandbox: SandboxInfo, settings: Settings, config_file: Path
) -> None:
    checks = faults.FAULTS[fault].checks_for(target)
    record = faults.break_fault(fault, target, sandbox.state_dir)
    try:
        broken = run_all(settings, checks)
        if fault in WHILE_BROKEN:
            WHILE_BROKEN[fault](sandbox, record["target"])
        unhelpful = next_steps_taken(sandbox, settings, config_file, broken, lambda check: named(fault, target, check))
    finally:
        faults.heal(fault, record["target"], sandbox.state_dir)
    missed = {name: r for name, r in broken.items() if r.status.healthy}
    assert not missed, f"{fault} ({target}) not caught:\n{shown(missed)}"
    unnamed = {
        name: r
        for name, r in broken.items()
        if not any(named(fault, target, name) in line for line in [r.summary, *r.errors])
    }
    assert not unnamed, f"{fault} ({target}): failures do not name the object:\n{shown(unnamed)}"
    unsaid = {name: r for name, r in broken.items() if SAID.get((fault, name), "") not in r.summary}
    assert not unsaid, f"{fault} ({target}): a failure does not say its class:\n{shown(unsaid)}"
    assert not unhelpful, f"{fault} ({target}): a next step does not work:\n" + "\n".join(unhelpful)
    if fault in AFTER_HEAL:
        AFTER_HEAL[fault](sandbox, record["target"])
    healed = run_all(settings, tuple(settings.enabled_checks()))
    not_ok = {name: r for name, r in healed.items() if r.status is not Status.OK}
    assert not not_ok, f"after healing {fault} ({target}), `outpost run --all` is not all ok:\n{shown(not_ok)}"
