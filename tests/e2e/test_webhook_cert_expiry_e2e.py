"""webhook-cert-expiry end to end: the four webhook configurations' caBundles and the two certificate Secrets the
webhooks serve from, read by the probe identity (which may `get` exactly those Secrets and no other).
Healthy → ok and one ping; webhook-cert-expiring → failed on the first run, each configuration and Secret named,
no ping."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from probe_runs import assert_silent, broken, heartbeat_env, run, write_config

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "webhook-cert-expiry"
CONFIGURATIONS = ("mutatingwebhookconfiguration koordinator-mutating-webhook-configuration",
                  "validatingwebhookconfiguration koordinator-validating-webhook-configuration",
                  "mutatingwebhookconfiguration kruise-mutating-webhook-configuration",
                  "validatingwebhookconfiguration kruise-validating-webhook-configuration")
SECRETS = ("secret koordinator-system/webhook-certs", "secret kruise-system/kruise-webhook-certs")


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


@pytest.fixture
def config(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(heartbeat_env(CHECK), receiver.url_for(CHECK))
    return write_config(tmp_path, sandbox.probe_kubeconfig, CHECK)


def test_healthy_is_ok_and_pings_once(config: Path, receiver: HeartbeatReceiver) -> None:
    result = run(config, CHECK)
    assert result.status is Status.OK, result.errors
    assert set(result.details["configurations"]) == set(CONFIGURATIONS)
    assert all(secret["key"] == "cert.pem" for secret in result.details["serving_secrets"].values())
    assert receiver.pings_for(CHECK) == 1


def test_expiring_webhook_certificates_fail_on_the_first_run(config: Path, sandbox: SandboxInfo,
                                                            receiver: HeartbeatReceiver) -> None:
    with broken("webhook-cert-expiring", sandbox.state_dir):
        result = run(config, CHECK)
    assert result.status is Status.FAILED, result.summary
    for name in (*CONFIGURATIONS, *SECRETS):
        (line,) = [error for error in result.errors if error.startswith(f"{name}: ")]
        assert "expires in 5.0 days" in line
    assert_silent(result, receiver, CHECK)


def test_probe_may_get_only_the_named_certificate_secrets(sandbox: SandboxInfo) -> None:
    def can(*args: str) -> str:
        return sandbox.kubectl("auth", "can-i", *args, probe=True, check=False).stdout.strip()

    assert can("get", "secrets/kruise-webhook-certs", "-n", "kruise-system") == "yes"
    assert can("get", "secrets/webhook-certs", "-n", "koordinator-system") == "yes"
    assert can("list", "secrets", "-n", "kruise-system") == "no"
    assert can("get", "secrets/some-other-secret", "-n", "kruise-system") == "no"
    assert can("get", "secrets/kruise-webhook-certs", "-n", "default") == "no"
