"""webhook-cert-expiry end to end: the four webhook configurations' caBundles and the two certificate Secrets the
real managers generated (each from its own 10-year CA, CN `webhook-cert-ca`), read by the probe identity, which
may `get` exactly those Secrets and no other.

Healthy → ok, about ten years left on every certificate, one ping. A threshold above what is left
(`threshold_days: 3650`) → failed on the same healthy sandbox, every configuration's caBundle and every Secret
named, no ping. Certificates put there expiring, or the Secrets deleted, are the fault catalogue's
(test_fault_catalogue_e2e.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from probe_runs import assert_silent, heartbeat_env, run, write_config

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
SECRETS = {"koordinator-system/koordinator-webhook-certs": "secret koordinator-system/koordinator-webhook-certs",
           "kruise-system/kruise-webhook-certs": "secret kruise-system/kruise-webhook-certs"}
TEN_YEARS_DAYS = 3650
"""The managers' CA and serving certificate lifetime (github.com/openkruise/kruise@v1.8.0 and
github.com/koordinator-sh/koordinator@v1.6.0, pkg/webhook/util/generator/selfsigned.go)."""


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        monkeypatch.setenv(heartbeat_env(CHECK), running.url_for(CHECK))
        yield running


def test_healthy_is_ok_and_pings_once(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver) -> None:
    result = run(write_config(tmp_path, sandbox.probe_kubeconfig, CHECK), CHECK)
    assert result.status is Status.OK, result.errors
    assert set(result.details["configurations"]) == set(CONFIGURATIONS)
    assert set(result.details["serving_secrets"]) == set(SECRETS)
    for secret in result.details["serving_secrets"].values():
        assert secret["key"] == "cert.pem"
        (certificate,) = secret["certificates"]
        assert "webhook-cert-ca" in certificate["issuer"]
        assert TEN_YEARS_DAYS - 365 < certificate["days_left"] <= TEN_YEARS_DAYS  # issued within the year
    assert receiver.pings_for(CHECK) == 1


def test_a_threshold_beyond_the_certificates_names_every_bundle_and_secret(tmp_path: Path, sandbox: SandboxInfo,
                                                                          receiver: HeartbeatReceiver) -> None:
    config = write_config(tmp_path, sandbox.probe_kubeconfig, CHECK, {"threshold_days": TEN_YEARS_DAYS})
    result = run(config, CHECK)
    assert result.status is Status.FAILED, result.summary
    for name in CONFIGURATIONS:
        assert any(line.startswith(f"{name}: webhook ") and " caBundle certificate " in line
                   for line in result.errors), (name, result.errors)
    for name in SECRETS.values():
        (line,) = [error for error in result.errors if error.startswith(f"{name}: ")]
        assert line.startswith(f"{name}: serving certificate cert.pem: ")
    assert all(line.endswith(f"(want > {TEN_YEARS_DAYS} days)") for line in result.errors), result.errors
    assert_silent(result, receiver, CHECK)


def test_probe_may_get_only_the_named_certificate_secrets(sandbox: SandboxInfo) -> None:
    def can(*args: str) -> str:
        return sandbox.kubectl("auth", "can-i", *args, probe=True, check=False).stdout.strip()

    assert can("get", "secrets/kruise-webhook-certs", "-n", "kruise-system") == "yes"
    assert can("get", "secrets/koordinator-webhook-certs", "-n", "koordinator-system") == "yes"
    assert can("get", "secrets/webhook-certs", "-n", "koordinator-system") == "no"
    assert can("list", "secrets", "-n", "kruise-system") == "no"
    assert can("get", "secrets/some-other-secret", "-n", "kruise-system") == "no"
    assert can("get", "secrets/kruise-webhook-certs", "-n", "default") == "no"
