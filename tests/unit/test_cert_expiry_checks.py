"""apiserver-cert-expiry and webhook-cert-expiry `evaluate`: certificates generated in the test, and the webhook
configurations and certificate Secret captured from the sandbox (their real caBundle and serving certificate, and
the same objects with generated bundles swapped in)."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from kit.certs import Issued, b64, issue
from outpost.checks.apiserver_cert_expiry import ApiserverCertData, ApiserverCertExpiryParams
from outpost.checks.apiserver_cert_expiry import evaluate as evaluate_apiserver
from outpost.checks.webhook_cert_expiry import (
    DEFAULT_CONFIGURATIONS,
    DEFAULT_SERVING_SECRETS,
    ConfigurationSeen,
    SecretSeen,
    ServingSecretRef,
    WebhookCertData,
    WebhookCertExpiryParams,
    WebhookConfigurationRef,
)
from outpost.checks.webhook_cert_expiry import evaluate as evaluate_webhooks
from outpost.cluster import TlsProbe
from outpost.cluster.tls import X509_V_ERR_CERT_HAS_EXPIRED
from outpost.kube.objects import WebhookConfiguration, parse
from outpost.result import Status

FIXTURES = Path(__file__).parent / "fixtures" / "webhook_cert_expiry"
NOW = dt.datetime(2026, 12, 3, 13, 40, tzinfo=dt.UTC)  # when the webhook fixtures were captured
CA = issue("kubernetes-ca", NOW - dt.timedelta(days=30), NOW + dt.timedelta(days=3650), is_ca=True)
ADDRESS = "127.0.0.1:6443"


def leaf(days: float, ca: Issued = CA) -> Issued:
    not_after = NOW + dt.timedelta(days=days)
    return issue("kube-apiserver", min(NOW - dt.timedelta(days=1), not_after - dt.timedelta(days=90)), not_after,
                 ca=ca, dns=("kubernetes.default.svc",), ips=("127.0.0.1",))


def handshake(*chain: Issued, verified: bool = True, code: int | None = None, message: str | None = None) -> TlsProbe:
    error = f"certificate verification failed: {message}" if message else None
    return TlsProbe(ADDRESS, tcp_ms=0.5, tls_ms=3.0, tls_error=error, verify_code=code, verify_message=message,
                    tls_version="TLSv1.3" if verified else None, chain=tuple(c.der for c in chain),
                    chain_verified=verified)


# -- apiserver-cert-expiry ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("probe", "status", "part"),
    [
        pytest.param(handshake(leaf(365), CA), Status.OK, "valid 365 more days", id="healthy-year"),
        pytest.param(handshake(leaf(5), CA), Status.FAILED, "CN=kube-apiserver expires in 5.0 days", id="expiring"),
        pytest.param(handshake(leaf(21), CA), Status.FAILED, "expires in 21.0 days", id="at-threshold"),
        pytest.param(handshake(leaf(365), issue("old-ca", NOW - dt.timedelta(days=3000), NOW + dt.timedelta(days=10),
                                                is_ca=True)),
                     Status.FAILED, "CN=old-ca expires in 10.0 days", id="trust-anchor-expires-first"),
        pytest.param(handshake(leaf(-1), CA, verified=False, code=X509_V_ERR_CERT_HAS_EXPIRED,
                               message="certificate has expired"),
                     Status.FAILED, "CN=kube-apiserver: expired 1.0 days ago", id="expired-named-from-unverified"),
        pytest.param(handshake(verified=False, code=X509_V_ERR_CERT_HAS_EXPIRED, message="certificate has expired"),
                     Status.FAILED, "certificate has expired (the unverified chain did not show",
                     id="expired-no-chain"),
        # Verification said expired but the unverified chain looks valid (someone else's server): still failed.
        pytest.param(handshake(leaf(365), CA, verified=False, code=X509_V_ERR_CERT_HAS_EXPIRED,
                               message="certificate has expired"),
                     Status.FAILED, "certificate has expired", id="expired-but-chain-looks-valid"),
        pytest.param(handshake(leaf(365), verified=False, code=19,
                               message="self-signed certificate in certificate chain"),
                     Status.ERROR, "expiry not judged", id="untrusted-ca-is-error"),
        pytest.param(TlsProbe(ADDRESS, tcp_ms=0.1, tcp_error="TCP connect failed: [Errno 111] Connection refused"),
                     Status.ERROR, "Connection refused", id="no-connection"),
        pytest.param(TlsProbe(ADDRESS, tcp_ms=0.1, tls_ms=2.0, chain=(b"\x30\x00",), chain_verified=True),
                     Status.ERROR, "does not parse", id="garbage-chain"),
    ],
)
def test_apiserver_chain(probe: TlsProbe, status: Status, part: str) -> None:
    result = evaluate_apiserver(ApiserverCertData(probe), ApiserverCertExpiryParams(), NOW)
    assert result.status is status, result.summary
    assert part in (result.summary + " | " + " | ".join(result.errors))
    assert result.summary.startswith(f"apiserver {ADDRESS}")


def test_apiserver_details_name_issuer_sans_and_whole_chain() -> None:
    result = evaluate_apiserver(ApiserverCertData(handshake(leaf(365), CA)), ApiserverCertExpiryParams(), NOW)
    assert result.details["issuer"] == "CN=kubernetes-ca"
    assert result.details["sans"] == ["kubernetes.default.svc", "127.0.0.1"]
    assert [c["subject"] for c in result.details["chain"]] == ["CN=kube-apiserver", "CN=kubernetes-ca"]
    assert result.details["chain_verified"] is True


def test_apiserver_threshold_is_a_parameter() -> None:
    result = evaluate_apiserver(ApiserverCertData(handshake(leaf(5), CA)),
                                ApiserverCertExpiryParams(threshold_days=3), NOW)
    assert result.status is Status.OK


# -- webhook-cert-expiry --------------------------------------------------------------------------------


def captured(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


SECRET = captured("secret.kruise-system.kruise-webhook-certs")
MUTATING = captured("kruise-mutating-webhook-configuration")
VALIDATING = captured("koordinator-validating-webhook-configuration")


def configuration(raw: dict[str, Any], ca_bundle: str | None = None) -> WebhookConfiguration:
    raw = copy.deepcopy(raw)
    if ca_bundle is not None:
        for webhook in raw["webhooks"]:
            webhook["clientConfig"]["caBundle"] = ca_bundle
    return parse(WebhookConfiguration, raw, "test")


def seen_all(ca_bundle: str | None = None, serving: str | None = None) -> WebhookCertData:
    """Every default configuration (kruise's and koordinator's captured shapes) and both default Secrets."""
    raws = [VALIDATING, VALIDATING, MUTATING, MUTATING]  # same shape; the names are the refs'
    configurations = [ConfigurationSeen(ref, configuration(raw, ca_bundle))
                      for ref, raw in zip(DEFAULT_CONFIGURATIONS, raws, strict=True)]
    cert = serving if serving is not None else SECRET["data"]["cert.pem"]
    secrets = [SecretSeen(ref, True, "cert.pem", cert) for ref in DEFAULT_SERVING_SECRETS]
    return WebhookCertData(configurations, secrets)


def test_captured_sandbox_webhooks_are_healthy() -> None:
    result = evaluate_webhooks(seen_all(), WebhookCertExpiryParams(), NOW)
    assert result.status is Status.OK, result.errors
    secret = result.details["serving_secrets"]["kruise-system/kruise-webhook-certs"]
    assert secret["key"] == "cert.pem"
    assert "kruise-webhook-service.kruise-system.svc" in secret["certificates"][0]["sans"]
    bundles = result.details["configurations"]["mutatingwebhookconfiguration kruise-mutating-webhook-configuration"]
    assert bundles["bundles"][0]["webhooks"] == ["mpod.kb.io"]


def test_expiring_ca_bundle_and_serving_certificate_are_named() -> None:
    short_ca = issue("outpost-sandbox-ca-short", NOW - dt.timedelta(hours=1), NOW + dt.timedelta(days=5), is_ca=True)
    serving = leaf(5, short_ca)
    result = evaluate_webhooks(seen_all(b64(short_ca.pem), b64(serving.pem)), WebhookCertExpiryParams(), NOW)
    assert result.status is Status.FAILED
    assert len(result.errors) == 6
    assert ("mutatingwebhookconfiguration kruise-mutating-webhook-configuration: webhook mpod.kb.io caBundle "
            "certificate CN=outpost-sandbox-ca-short expires in 5.0 days") in result.errors[2]
    assert result.errors[4].startswith("secret koordinator-system/koordinator-webhook-certs: serving certificate "
                                       "cert.pem: CN=kube-apiserver expires in 5.0 days")


def test_rotation_bundle_is_judged_by_its_earliest_certificate() -> None:
    old = issue("old-ca", NOW - dt.timedelta(days=700), NOW + dt.timedelta(days=3), is_ca=True)
    result = evaluate_webhooks(seen_all(b64(CA.pem + old.pem)), WebhookCertExpiryParams(), NOW)
    assert result.status is Status.FAILED
    assert all("CN=old-ca expires in 3.0 days" in line for line in result.errors)


KEY_TEXT = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgTOPSECRET"


@pytest.mark.parametrize(
    ("bundle", "reason"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("bm90IGEgY2VydA==", "no PEM CERTIFICATE block", id="base64-text"),
        pytest.param("%%%", "not base64", id="not-base64"),
        pytest.param(b64(f"-----BEGIN PRIVATE KEY-----\n{KEY_TEXT}\n-----END PRIVATE KEY-----\n".encode()),
                     "no PEM CERTIFICATE block", id="a-key-instead"),
    ],
)
def test_ca_bundle_that_is_not_a_certificate_is_named_not_skipped(bundle: str, reason: str) -> None:
    result = evaluate_webhooks(seen_all(bundle), WebhookCertExpiryParams(), NOW)
    assert result.status is Status.FAILED
    assert len(result.errors) == 4
    assert all(f"caBundle is not a certificate ({reason})" in line for line in result.errors)
    assert KEY_TEXT not in result.model_dump_json()


def test_url_webhook_without_ca_bundle_uses_system_trust() -> None:
    raw = copy.deepcopy(MUTATING)
    raw["webhooks"][0]["clientConfig"] = {"url": "https://webhook.example.com/mutate"}
    seen = ConfigurationSeen(WebhookConfigurationRef(kind="mutating", name="external"),
                             parse(WebhookConfiguration, raw, "test"))
    result = evaluate_webhooks(WebhookCertData([seen], []), WebhookCertExpiryParams(), NOW)
    assert result.status is Status.OK
    assert result.details["configurations"]["mutatingwebhookconfiguration external"]["system_trust"] == ["mpod.kb.io"]


def test_missing_configuration_secret_and_certificate_key_are_failed() -> None:
    ref = ServingSecretRef(namespace="kruise-system", name="kruise-webhook-certs")
    data = WebhookCertData(
        [ConfigurationSeen(WebhookConfigurationRef(kind="validating", name="gone"), None)],
        [SecretSeen(ref, found=False), SecretSeen(ref, found=True)],
    )
    result = evaluate_webhooks(data, WebhookCertExpiryParams(), NOW)
    assert result.status is Status.FAILED
    assert result.errors == [
        "validatingwebhookconfiguration gone: not found (want it present, with a caBundle per webhook)",
        "secret kruise-system/kruise-webhook-certs: not found (want the webhook's serving certificate there)",
        "secret kruise-system/kruise-webhook-certs: none of the keys cert.pem, tls.crt present "
        "(want the serving certificate)",
    ]


def test_nothing_configured_is_error() -> None:
    result = evaluate_webhooks(WebhookCertData([], []), WebhookCertExpiryParams(configurations=[], serving_secrets=[]),
                               NOW)
    assert result.status is Status.ERROR
