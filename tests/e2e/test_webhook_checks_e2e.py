"""koord-webhook, kruise-webhook and admission-dry-run end to end: the real sandbox, the probe's own identity, a
real heartbeat receiver.

Healthy → each check ok and exactly one ping. Every fault the sandbox catalogue says one of these checks must
fail (per target: `Fault.checks_for`) → that check `failed` on the FIRST run after `break`, the
webhook's object named in `errors`, no ping. Faults are healed, never restarted around. Also proved here: the
dry-run probe stores nothing (the probe namespace is listed after the run), the probe may create pods only in
its own namespace, and a refusal of the probe's identity is `error`, not `failed`.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import yaml

from outpost.result import Status
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost_sandbox import faults
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECKS = ("koord-webhook", "kruise-webhook", "admission-dry-run")
PROBE_NAMESPACE = "outpost-probe"

# What each check's error lines must name while a fault is active on a target.
NAMED: dict[tuple[str, str], str] = {
    ("koord-webhook", "koord-webhook"): "service koordinator-system/koordinator-webhook-service",
    ("koord-webhook", "koordinator"): "koordinator-mutating-webhook-configuration",
    ("kruise-webhook", "kruise-webhook"): "service kruise-system/kruise-webhook-service",
    ("kruise-webhook", "kruise"): "kruise-mutating-webhook-configuration",
    ("admission-dry-run", "koord-webhook"): "koordinator-mutating-webhook-configuration webhook "
                                            "mpod-create.koordinator.sh",
    ("admission-dry-run", "koordinator"): "koordinator-mutating-webhook-configuration: not found",
    ("admission-dry-run", "kruise-webhook"): "kruise-mutating-webhook-configuration webhook mpod.kb.io",
    ("admission-dry-run", "kruise"): "kruise-mutating-webhook-configuration: not found",
}
BACKEND_FAULTS = ("backend-down", "backend-500", "backend-hang", "backend-wrong-body", "backend-tls-bad-ca",
                  "backend-tls-expired", "webhook-no-mutate")
FAULT_CASES = [(fault, target) for target in ("koord-webhook", "kruise-webhook") for fault in BACKEND_FAULTS]
FAULT_CASES += [("webhook-config-deleted", "koordinator"), ("webhook-config-deleted", "kruise")]


def env_name(check: str) -> str:
    return "OUTPOST_HEARTBEAT_E2E_" + check.upper().replace("-", "_")


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


def write_config(tmp_path: Path, sandbox: SandboxInfo, params: dict[str, dict[str, Any]] | None = None) -> Path:
    path = tmp_path / "e2e.yaml"
    path.write_text(yaml.safe_dump({
        "environment": "e2e",
        "cluster": {"name": "sandbox", "auth": {"mode": "kubeconfig", "path": str(sandbox.probe_kubeconfig)},
                    "deadline_seconds": 40, "read_timeout_seconds": 8},
        "heartbeat": {"timeout_seconds": 2, "retries": 1, "backoff_seconds": 0.1},
        "checks": {check: {"heartbeat": f"env:{env_name(check)}", **({"params": params[check]}
                                                                     if params and check in params else {})}
                   for check in CHECKS},
    }))
    return path


@pytest.fixture
def config(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch) -> Path:
    for check in CHECKS:
        monkeypatch.setenv(env_name(check), receiver.url_for(check))
    return write_config(tmp_path, sandbox)


@pytest.fixture
def sb(sandbox: SandboxInfo) -> Iterator[SandboxInfo]:
    faults.heal(state_dir=sandbox.state_dir)
    try:
        yield sandbox
    finally:
        faults.heal(state_dir=sandbox.state_dir)


def trust(sb: SandboxInfo) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(sb.ca_path))


def admin_get(sb: SandboxInfo, path: str) -> Any:
    response = httpx.get(sb.server + path, headers={"Authorization": f"Bearer {sb.admin_token}"},
                         verify=trust(sb), timeout=10)
    assert response.status_code == 200, f"GET {path}: {response.status_code} {response.text[:200]}"
    return response.json()


def probe_dry_run_create(sb: SandboxInfo, namespace: str) -> httpx.Response:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "e2e-", "namespace": namespace},
           "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}
    return httpx.post(f"{sb.server}/api/v1/namespaces/{namespace}/pods", params={"dryRun": "All"}, json=pod,
                      headers={"Authorization": f"Bearer {sb.probe_token}"}, verify=trust(sb), timeout=30)


def test_healthy_each_check_ok_and_pings_once(sb: SandboxInfo, config: Path, receiver: HeartbeatReceiver) -> None:
    settings = load_settings(config)
    for check in CHECKS:
        result = run_check(settings, check, log=False)
        assert result.status is Status.OK, (check, result.errors)
        assert result.reported is True
        assert receiver.pings_for(check) == 1, check
    dry_run = run_check(settings, "admission-dry-run", log=False, report=False)
    assert {s: d["mutated"] for s, d in dry_run.details["systems"].items()} == {"koordinator": True,
                                                                              "openkruise": True}


def test_dry_run_stores_nothing(sb: SandboxInfo, config: Path) -> None:
    result = run_check(load_settings(config), "admission-dry-run", log=False, report=False)
    assert result.status is Status.OK, result.errors
    names = [d["pod"] for d in result.details["systems"].values()]
    assert all(name.startswith("outpost-dry-run-") for name in names)
    assert admin_get(sb, f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods")["items"] == []
    everywhere = admin_get(sb, "/api/v1/pods?labelSelector=app.kubernetes.io%2Fmanaged-by%3Doutpost")["items"]
    assert everywhere == []


def test_probe_may_create_pods_only_in_its_own_namespace(sb: SandboxInfo) -> None:
    assert probe_dry_run_create(sb, PROBE_NAMESPACE).status_code == 201
    for namespace in ("default", "kube-system", "koordinator-system", "kruise-system"):
        response = probe_dry_run_create(sb, namespace)
        assert response.status_code == 403, (namespace, response.text[:200])
        assert 'cannot create resource "pods"' in response.json()["message"]
    can_i = sb.kubectl("auth", "can-i", "create", "pods", "--all-namespaces", probe=True, check=False)
    assert can_i.stdout.strip() == "no"
    assert sb.kubectl("auth", "can-i", "create", "pods", "-n", PROBE_NAMESPACE, probe=True).stdout.strip() == "yes"
    assert sb.kubectl("auth", "can-i", "delete", "pods", "-n", PROBE_NAMESPACE, probe=True,
                      check=False).stdout.strip() == "no"


def test_probe_refused_by_rbac_is_error_and_silent(sb: SandboxInfo, tmp_path: Path, receiver: HeartbeatReceiver,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env_name("admission-dry-run"), receiver.url_for("admission-dry-run"))
    config = write_config(tmp_path, sb, {"admission-dry-run": {"namespace": "default"}})
    result = run_check(load_settings(config), "admission-dry-run", log=False)
    assert result.status is Status.ERROR
    assert "HTTP 403" in result.summary
    assert "POST /api/v1/namespaces/default/pods" in result.summary
    assert receiver.pings_for("admission-dry-run") == 0


@pytest.mark.parametrize(("fault", "target"), FAULT_CASES, ids=[f"{f}@{t}" for f, t in FAULT_CASES])
def test_fault_fails_its_checks_on_the_first_run(sb: SandboxInfo, config: Path, receiver: HeartbeatReceiver,
                                                 fault: str, target: str) -> None:
    must_fail = [c for c in faults.FAULTS[fault].checks_for(target) if c in CHECKS]
    assert must_fail, f"{fault}@{target} names none of {CHECKS}"
    settings = load_settings(config)
    faults.break_fault(fault, target, sb.state_dir)
    results = {check: run_check(settings, check, log=False) for check in must_fail}
    faults.heal(fault, state_dir=sb.state_dir)
    for check, result in results.items():
        # the webhook's fault is observed (failed), not "could not observe" (error)
        assert result.status is Status.FAILED, (check, result.summary)
        assert result.reported is False
        assert receiver.pings_for(check) == 0, check
        named = NAMED[(check, target)]
        assert any(named in line for line in result.errors), (check, result.errors)
    assert admin_get(sb, f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods")["items"] == []


def test_cli_exit_code_for_a_deleted_configuration(sb: SandboxInfo, config: Path) -> None:
    faults.break_fault("webhook-config-deleted", "kruise", sb.state_dir)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "outpost.cli", "run", "kruise-webhook", "admission-dry-run", "--config",
             str(config), "--json", "--no-report"],
            capture_output=True, text=True, timeout=120, check=False)
    finally:
        faults.heal("webhook-config-deleted", state_dir=sb.state_dir)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    results = {r["check"]: r for r in json.loads(proc.stdout)}
    assert {name: r["status"] for name, r in results.items()} == {"kruise-webhook": "failed",
                                                                  "admission-dry-run": "failed"}


KOORD_MUTATING = ("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
                  "koordinator-mutating-webhook-configuration")


def set_failure_policy(sb: SandboxInfo, policy: str) -> None:
    """Koordinator's pod mutating webhook (the first of its configuration) on `policy`, as admin."""
    patch = [{"op": "test", "path": "/webhooks/0/name", "value": "mpod-create.koordinator.sh"},
             {"op": "replace", "path": "/webhooks/0/failurePolicy", "value": policy}]
    response = httpx.patch(sb.server + KOORD_MUTATING, content=json.dumps(patch),
                           headers={"Authorization": f"Bearer {sb.admin_token}",
                                    "Content-Type": "application/json-patch+json"},
                           verify=trust(sb), timeout=10)
    assert response.status_code == 200, response.text[:200]


@pytest.mark.parametrize("fault", ["backend-down", "backend-hang", "backend-tls-bad-ca"])
def test_failure_policy_fail_refusal_is_failed_naming_the_webhook(sb: SandboxInfo, config: Path,
                                                                  receiver: HeartbeatReceiver, fault: str) -> None:
    set_failure_policy(sb, "Fail")
    try:
        faults.break_fault(fault, "koord-webhook", sb.state_dir)
        try:
            result = run_check(load_settings(config), "admission-dry-run", log=False)
        finally:
            faults.heal(fault, state_dir=sb.state_dir)
    finally:
        set_failure_policy(sb, "Ignore")
    assert result.status is Status.FAILED, result.errors
    assert result.errors[0].startswith("webhook mpod-create.koordinator.sh (koordinator): refused the dry-run create")
    assert 'failed calling webhook "mpod-create.koordinator.sh"' in result.errors[0]
    assert result.details["systems"]["openkruise"]["mutated"] is True
    assert receiver.pings_for("admission-dry-run") == 0
