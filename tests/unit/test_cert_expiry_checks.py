"""apiserver-cert-expiry and webhook-cert-expiry `evaluate`: certificates generated in the test, and the webhook
configurations and certificate Secret captured from the sandbox (their real caBundle and serving certificate, and
the same objects with generated bundles swapped in). webhook-cert-expiry's params: the Secrets (which hold the
private keys) are read only when opted in, and a cert-manager Certificate's status.notAfter is the keyless source
(fetched over the kit's fake API server)."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from kit import NOW, FakeApiServer, fake_cluster
from kit.certs import KEY_TEXT, NOT_CERTIFICATES, Issued, b64, issue
from outpost.checks import webhook_cert_expiry
from outpost.checks.apiserver_cert_expiry import ApiserverCertData, ApiserverCertExpiryParams
from outpost.checks.apiserver_cert_expiry import evaluate as evaluate_apiserver
from outpost.checks.webhook_cert_expiry import (
    CERT_MANAGER_CERTIFICATES,
    DEFAULT_CONFIGURATIONS,
    DEFAULT_SERVING_SECRETS,
    CertificateRef,
    CertificateSeen,
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
from outpost.errors import MalformedResponse
from outpost.kube.objects import WebhookConfiguration, parse
from outpost.kube.paths import MUTATING_WEBHOOKS, SECRETS, VALIDATING_WEBHOOKS, object_path
from outpost.result import Status

FIXTURES = Path(__file__).parent / "fixtures" / "webhook_cert_expiry"
CA = issue("kubernetes-ca", NOW - dt.timedelta(days=30), NOW + dt.timedelta(days=3650), is_ca=True)
ADDRESS = "127.0.0.1:6443"


def leaf(days: float, ca: Issued = CA) -> Issued:
    not_after = NOW + dt.timedelta(days=days)
    return issue(
        "kube-apiserver",
        min(NOW - dt.timedelta(days=1), not_after - dt.timedelta(days=90)),
        not_after,
        ca=ca,
        dns=("kubernetes.default.svc",),
        ips=("127.0.0.1",),
    )


def handshake(*chain: Issued, verified: bool = True, code: int | None = None, message: str | None = None) -> TlsProbe:
    error = f"certificate verification failed: {message}" if message else None
    return TlsProbe(
        ADDRESS,
        tcp_ms=0.5,
        tls_ms=3.0,
        tls_error=error,
        verify_code=code,
        verify_message=message,
        tls_version="TLSv1.3" if verified else None,
        chain=tuple(c.der for c in chain),
        chain_verified=verified,
    )


# -- apiserver-cert-expiry ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("probe", "status", "failure", "part"),
    [
        pytest.param(handshake(leaf(365), CA), Status.OK, None, "valid 365 more days", id="healthy-year"),
        pytest.param(
            handshake(leaf(5), CA),
            Status.FAILED,
            "cert-expiring",
            "CN=kube-apiserver expires in 5.0 days",
            id="expiring",
        ),
        pytest.param(
            handshake(leaf(21), CA), Status.FAILED, "cert-expiring", "expires in 21.0 days", id="at-threshold"
        ),
        pytest.param(
            handshake(
                leaf(365), issue("old-ca", NOW - dt.timedelta(days=3000), NOW + dt.timedelta(days=10), is_ca=True)
            ),
            Status.FAILED,
            "cert-expiring",
            "CN=old-ca expires in 10.0 days",
            id="trust-anchor-expires-first",
        ),
        pytest.param(
            handshake(
                leaf(-1), CA, verified=False, code=X509_V_ERR_CERT_HAS_EXPIRED, message="certificate has expired"
            ),
            Status.FAILED,
            "cert-expired",
            "CN=kube-apiserver: expired 1.0 days ago",
            id="expired-named-from-unverified",
        ),
        pytest.param(
            handshake(verified=False, code=X509_V_ERR_CERT_HAS_EXPIRED, message="certificate has expired"),
            Status.FAILED,
            "cert-expired",
            "certificate has expired (the unverified chain did not show",
            id="expired-no-chain",
        ),
        # Verification said expired but the unverified chain looks valid (someone else's server): still failed.
        pytest.param(
            handshake(
                leaf(365), CA, verified=False, code=X509_V_ERR_CERT_HAS_EXPIRED, message="certificate has expired"
            ),
            Status.FAILED,
            "cert-expired",
            "certificate has expired",
            id="expired-but-chain-looks-valid",
        ),
        pytest.param(
            handshake(leaf(365), verified=False, code=19, message="self-signed certificate in certificate chain"),
            Status.ERROR,
            "not-judged",
            "expiry not judged",
            id="untrusted-ca-is-error",
        ),
        pytest.param(
            TlsProbe(ADDRESS, tcp_ms=0.1, tcp_error="TCP connect failed: [Errno 111] Connection refused"),
            Status.ERROR,
            "not-judged",
            "Connection refused",
            id="no-connection",
        ),
        pytest.param(
            TlsProbe(ADDRESS, tcp_ms=0.1, tls_ms=2.0, chain=(b"\x30\x00",), chain_verified=True),
            Status.ERROR,
            "not-judged",
            "does not parse",
            id="garbage-chain",
        ),
    ],
)
def test_apiserver_chain(probe: TlsProbe, status: Status, failure: str | None, part: str) -> None:
    result = evaluate_apiserver(ApiserverCertData(probe), ApiserverCertExpiryParams(), NOW)
    assert result.status is status, result.summary
    assert part in (result.summary + " | " + " | ".join(result.errors))
    assert result.summary.startswith(f"apiserver {ADDRESS}")
    # Each line's next step shows the certificate served at the address the probe dialled.
    assert [step.failure for step in result.next_steps] == [failure] * len(result.errors)
    for step in result.next_steps:
        assert step.command.startswith(f"openssl s_client -connect {ADDRESS} ")


def test_apiserver_details_name_issuer_sans_and_whole_chain() -> None:
    result = evaluate_apiserver(ApiserverCertData(handshake(leaf(365), CA)), ApiserverCertExpiryParams(), NOW)
    assert result.details["issuer"] == "CN=kubernetes-ca"
    assert result.details["sans"] == ["kubernetes.default.svc", "127.0.0.1"]
    assert [c["subject"] for c in result.details["chain"]] == ["CN=kube-apiserver", "CN=kubernetes-ca"]
    assert result.details["chain_verified"] is True


def test_apiserver_threshold_is_a_parameter() -> None:
    result = evaluate_apiserver(
        ApiserverCertData(handshake(leaf(5), CA)), ApiserverCertExpiryParams(threshold_days=3), NOW
    )
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
    configurations = [
        ConfigurationSeen(ref, configuration(raw, ca_bundle))
        for ref, raw in zip(DEFAULT_CONFIGURATIONS, raws, strict=True)
    ]
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
    assert (
        "mutatingwebhookconfiguration kruise-mutating-webhook-configuration: webhook mpod.kb.io caBundle "
        "certificate CN=outpost-sandbox-ca-short expires in 5.0 days"
    ) in result.errors[2]
    assert result.errors[4].startswith(
        "secret koordinator-system/koordinator-webhook-certs: serving certificate "
        "cert.pem: CN=kube-apiserver expires in 5.0 days"
    )
    assert [step.failure for step in result.next_steps] == ["ca-bundle-expiring"] * 4 + ["serving-cert"] * 2
    assert result.next_steps[2].command.startswith(
        "kubectl get mutatingwebhookconfiguration kruise-mutating-webhook-configuration -o 'custom-columns="
    )
    # the CA comes from the manager's certificate Secret, beside the webhook Service its configuration calls
    assert result.next_steps[2].command.endswith(" && kubectl get secrets -n kruise-system")
    assert result.next_steps[4].command == "kubectl -n koordinator-system describe secret koordinator-webhook-certs"


def test_rotation_bundle_is_judged_by_its_earliest_certificate() -> None:
    old = issue("old-ca", NOW - dt.timedelta(days=700), NOW + dt.timedelta(days=3), is_ca=True)
    result = evaluate_webhooks(seen_all(b64(CA.pem + old.pem)), WebhookCertExpiryParams(), NOW)
    assert result.status is Status.FAILED
    assert all("CN=old-ca expires in 3.0 days" in line for line in result.errors)


@pytest.mark.parametrize(("bundle", "reason"), NOT_CERTIFICATES)
def test_ca_bundle_that_is_not_a_certificate_is_named_not_skipped(bundle: str, reason: str) -> None:
    result = evaluate_webhooks(seen_all(bundle), WebhookCertExpiryParams(), NOW)
    assert result.status is Status.FAILED
    assert len(result.errors) == 4
    assert all(f"caBundle is not a certificate ({reason})" in line for line in result.errors)
    assert [(step.failure, step.command) for step in result.next_steps][-1] == (
        "ca-bundle-invalid",
        "kubectl get validatingwebhookconfiguration kruise-validating-webhook-configuration -o yaml && "
        "kubectl get secrets -n kruise-system",
    )
    assert KEY_TEXT not in result.model_dump_json()


def test_url_webhook_without_ca_bundle_uses_system_trust() -> None:
    raw = copy.deepcopy(MUTATING)
    raw["webhooks"][0]["clientConfig"] = {"url": "https://webhook.example.com/mutate"}
    seen = ConfigurationSeen(
        WebhookConfigurationRef(kind="mutating", name="external"), parse(WebhookConfiguration, raw, "test")
    )
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
    assert [(step.failure, step.command) for step in result.next_steps] == [
        ("configuration-missing", "kubectl get validatingwebhookconfiguration"),
        ("secret-missing", "kubectl -n kruise-system get secrets"),
        ("serving-cert", "kubectl -n kruise-system describe secret kruise-webhook-certs"),
    ]


def test_nothing_configured_is_error() -> None:
    result = evaluate_webhooks(
        WebhookCertData([], []), WebhookCertExpiryParams(configurations=[], serving_secrets=[]), NOW
    )
    assert result.status is Status.ERROR
    assert [step.failure for step in result.next_steps] == ["nothing-configured"]


# -- webhook-cert-expiry: no key material by default -------------------------------------------------------


def test_by_default_no_secret_is_read_declared_or_judged() -> None:
    params = WebhookCertExpiryParams()
    assert params.read_serving_secrets is False
    assert params.secrets_read() == []
    assert params.cert_manager_certificates == []
    assert not [a for a in webhook_cert_expiry.declared_access(params) if getattr(a, "resource", "") == "secrets"]
    assert params.serving_secrets == DEFAULT_SERVING_SECRETS  # what the opt-in reads, unless named otherwise


def test_opt_in_reads_the_named_secrets_by_name() -> None:
    params = WebhookCertExpiryParams(read_serving_secrets=True)
    assert params.secrets_read() == DEFAULT_SERVING_SECRETS
    assert [
        a.describe() for a in webhook_cert_expiry.declared_access(params) if a.describe().startswith("get secrets")
    ] == [
        "get secrets koordinator-webhook-certs in koordinator-system",
        "get secrets kruise-webhook-certs in kruise-system",
    ]


@pytest.mark.parametrize(
    ("params", "says"),
    [
        pytest.param(
            {"serving_secrets": [{"namespace": "n", "name": "s"}]},
            "serving_secrets is read only with read_serving_secrets: true",
            id="secrets-without-opt-in",
        ),
        pytest.param(
            {"read_serving_secrets": True, "serving_secrets": []},
            "read_serving_secrets is true but serving_secrets is empty",
            id="opt-in-without-secrets",
        ),
        pytest.param({"read_serving_secrets": "yes please"}, "read_serving_secrets", id="not-a-bool"),
        pytest.param({"cert_manager_certificates": [{"namespace": "n"}]}, "name", id="certificate-without-name"),
        pytest.param({"serving_secret": []}, "serving_secret", id="typo"),
    ],
)
def test_params_are_strict_about_the_opt_in(params: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        WebhookCertExpiryParams.model_validate(params)


def test_an_empty_secret_list_without_the_opt_in_is_accepted() -> None:
    """Environments written for the old default (`serving_secrets: []` to skip the Secrets) still load."""
    assert WebhookCertExpiryParams.model_validate({"serving_secrets": []}).secrets_read() == []


def _webhooks_api() -> FakeApiServer:
    api = FakeApiServer()
    raws = [VALIDATING, VALIDATING, MUTATING, MUTATING]
    for wanted, raw in zip(DEFAULT_CONFIGURATIONS, raws, strict=True):
        obj = copy.deepcopy(raw)
        obj["kind"] = "MutatingWebhookConfiguration" if wanted.kind == "mutating" else "ValidatingWebhookConfiguration"
        obj["metadata"]["name"] = wanted.name
        api.add(obj)
    for secret_ref in DEFAULT_SERVING_SECRETS:
        secret = copy.deepcopy(SECRET)
        secret["metadata"].update(name=secret_ref.name, namespace=secret_ref.namespace)
        api.add(secret)
    return api


def test_default_fetch_reads_the_configurations_and_never_a_secret() -> None:
    api = _webhooks_api()
    params = WebhookCertExpiryParams()
    with fake_cluster(api) as cluster:
        data = webhook_cert_expiry.fetch(cluster, params)
    result = webhook_cert_expiry.evaluate(data, params, NOW)
    assert result.status is Status.OK, result.errors
    assert [r.path for r in api.requests] == [
        object_path(MUTATING_WEBHOOKS if w.kind == "mutating" else VALIDATING_WEBHOOKS, w.name)
        for w in DEFAULT_CONFIGURATIONS
    ]
    assert result.details["serving_certificates"] == "not read (read_serving_secrets is off)"
    assert result.details["serving_secrets"] == {}
    assert result.summary == (
        "4 webhook configuration(s) valid beyond 21 days; serving certificates not read (read_serving_secrets off)"
    )


def test_opted_in_fetch_reads_exactly_the_named_secrets() -> None:
    api = _webhooks_api()
    params = WebhookCertExpiryParams(read_serving_secrets=True)
    with fake_cluster(api) as cluster:
        data = webhook_cert_expiry.fetch(cluster, params)
    result = webhook_cert_expiry.evaluate(data, params, NOW)
    assert result.status is Status.OK, result.errors
    assert [r.path for r in api.requests if "/secrets/" in r.path] == [
        object_path(SECRETS, s.name, s.namespace) for s in DEFAULT_SERVING_SECRETS
    ]
    assert set(result.details["serving_secrets"]) == {
        "koordinator-system/koordinator-webhook-certs",
        "kruise-system/kruise-webhook-certs",
    }
    assert result.summary.startswith("4 webhook configuration(s) and 2 serving certificate Secret(s) valid beyond")


CERTIFICATE = CertificateRef(namespace="webhooks", name="kruise-webhook-cert")


def certificate_object(status: dict[str, Any] | None) -> dict[str, Any]:
    """A cert-manager.io/v1 Certificate as the API server returns it (no key material: spec and status only)."""
    obj: dict[str, Any] = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": CERTIFICATE.name, "namespace": CERTIFICATE.namespace},
        "spec": {
            "secretName": "kruise-webhook-certs",
            "dnsNames": ["kruise-webhook-service"],
            "issuerRef": {"name": "selfsigned", "kind": "Issuer"},
        },
    }
    if status is not None:
        obj["status"] = status
    return obj


def fetch_certificate(obj: dict[str, Any] | None) -> tuple[FakeApiServer, webhook_cert_expiry.WebhookCertData]:
    api = FakeApiServer()
    path = object_path(CERT_MANAGER_CERTIFICATES, CERTIFICATE.name, CERTIFICATE.namespace)
    if obj is None:
        api.respond(path, 404, {"kind": "Status", "code": 404})
    else:
        api.respond(path, 200, obj)
    params = WebhookCertExpiryParams(configurations=[], cert_manager_certificates=[CERTIFICATE])
    with fake_cluster(api) as cluster:
        return api, webhook_cert_expiry.fetch(cluster, params)


def _iso(days: float) -> str:
    return (NOW + dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("status", "want", "line"),
    [
        pytest.param(
            {"notAfter": _iso(90), "conditions": [{"type": "Ready", "status": "True"}]},
            Status.OK,
            None,
            id="issued-90-days",
        ),
        pytest.param(
            {"notAfter": _iso(5), "conditions": [{"type": "Ready", "status": "True"}]},
            Status.FAILED,
            "certificate webhooks/kruise-webhook-cert: serving certificate (status.notAfter) expires in 5.0 days "
            f"({(NOW + dt.timedelta(days=5)).isoformat()}) (want > 21 days)",
            id="expiring",
        ),
        pytest.param(
            {"conditions": [{"type": "Ready", "status": "False"}]},
            Status.FAILED,
            "certificate webhooks/kruise-webhook-cert: status.notAfter absent, never issued (Ready False) "
            "(want an issued certificate)",
            id="never-issued",
        ),
        pytest.param(
            None,
            Status.FAILED,
            "certificate webhooks/kruise-webhook-cert: status.notAfter absent, never "
            "issued (Ready absent) (want an issued certificate)",
            id="no-status",
        ),
    ],
)
def test_a_cert_manager_certificate_is_judged_by_its_status_not_after(
    status: dict[str, Any] | None, want: Status, line: str | None
) -> None:
    api, data = fetch_certificate(certificate_object(status))
    params = WebhookCertExpiryParams(configurations=[], cert_manager_certificates=[CERTIFICATE])
    result = webhook_cert_expiry.evaluate(data, params, NOW)
    assert result.status is want, result.errors
    assert result.errors == ([line] if line else [])
    assert [(step.failure, step.command) for step in result.next_steps] == (
        [("certificate-not-renewed", "kubectl -n webhooks describe certificates.cert-manager.io kruise-webhook-cert")]
        if line
        else []
    )
    assert [r.path for r in api.requests] == [
        "/apis/cert-manager.io/v1/namespaces/webhooks/certificates/kruise-webhook-cert"
    ]
    assert result.details["serving_certificates"] == "cert-manager"
    if want is Status.OK:
        assert result.summary == "0 webhook configuration(s) and 1 cert-manager Certificate(s) valid beyond 21 days"
        assert result.details["cert_manager_certificates"]["webhooks/kruise-webhook-cert"]["ready"] == "True"


def test_a_missing_certificate_or_cert_manager_is_failed_and_named() -> None:
    _api, data = fetch_certificate(None)
    result = webhook_cert_expiry.evaluate(data, WebhookCertExpiryParams(configurations=[]), NOW)
    assert result.status is Status.FAILED
    assert result.errors == [
        "certificate webhooks/kruise-webhook-cert: not found (want the cert-manager Certificate "
        "of the webhook's serving certificate; is cert-manager installed?)"
    ]
    assert [(step.failure, step.command) for step in result.next_steps] == [
        ("certificate-missing", "kubectl api-resources --api-group=cert-manager.io")
    ]


def test_a_not_after_without_a_zone_is_a_malformed_object_naming_its_field() -> None:
    with pytest.raises(MalformedResponse, match=r"status\.notAfter: timestamp without a time zone"):
        fetch_certificate(certificate_object({"notAfter": "2027-01-01T00:00:00"}))


def test_certificates_are_declared_by_name_in_their_namespace() -> None:
    params = WebhookCertExpiryParams(configurations=[], cert_manager_certificates=[CERTIFICATE])
    assert [a.describe() for a in webhook_cert_expiry.declared_access(params)] == [
        "get cert-manager.io/certificates kruise-webhook-cert in webhooks"
    ]


def test_nothing_judged_without_configurations_certificates_or_opt_in_is_error() -> None:
    data = WebhookCertData([], [], [CertificateSeen(CERTIFICATE, found=False)][:0])
    result = evaluate_webhooks(data, WebhookCertExpiryParams(configurations=[]), NOW)
    assert result.status is Status.ERROR
    assert "nothing configured to judge" in result.summary
