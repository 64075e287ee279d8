"""`fetch` of webhook-cert-expiry and apiserver-latency through the real `Cluster` over the kit's fake API server:
the paths read, absent objects as data, 401/403 as `error`, and the webhook certificate Secret's private key never
kept (only the certificate value leaves `fetch`)."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from kit import NOW, FakeApiServer, fake_cluster
from kit.certs import b64, issue
from outpost.checks import apiserver_latency, webhook_cert_expiry
from outpost.checks.apiserver_latency import ApiserverLatencyParams
from outpost.checks.webhook_cert_expiry import WebhookCertExpiryParams
from outpost.errors import ClusterAuthError, ClusterResponseError, ConfigError
from outpost.kube.paths import SECRETS, object_path
from outpost.result import Status

FIXTURES = Path(__file__).parent / "fixtures"
KEY_MARKER = "PRIVATE-KEY-MATERIAL-MUST-NOT-SURVIVE-FETCH"


def webhook_objects() -> list[dict[str, Any]]:
    directory = FIXTURES / "webhook_cert_expiry"
    mutating = json.loads((directory / "kruise-mutating-webhook-configuration.json").read_text())
    validating = json.loads((directory / "koordinator-validating-webhook-configuration.json").read_text())
    secret = json.loads((directory / "secret.kruise-system.kruise-webhook-certs.json").read_text())
    # Upstream's Secret also holds the private keys (both managers' writer, pkg/webhook/util/writer/secret.go
    # certsToSecret: key.pem, tls.key, ca-key.pem).
    for key in ("key.pem", "tls.key", "ca-key.pem"):
        secret["data"][key] = base64.b64encode(KEY_MARKER.encode()).decode()
    objects = [mutating, validating, secret]
    for kind, name in (
        ("MutatingWebhookConfiguration", "koordinator-mutating-webhook-configuration"),
        ("ValidatingWebhookConfiguration", "kruise-validating-webhook-configuration"),
    ):
        twin = copy.deepcopy(mutating if kind.startswith("Mutating") else validating)
        twin["metadata"]["name"] = name
        objects.append(twin)
    koord_secret = copy.deepcopy(secret)
    koord_secret["metadata"].update(name="koordinator-webhook-certs", namespace="koordinator-system")
    objects.append(koord_secret)
    return objects


OPTED_IN = WebhookCertExpiryParams(read_serving_secrets=True)
"""The Secrets are read only with the opt-in (the check's module doc: they hold the private keys)."""


def test_webhook_fetch_keeps_only_the_certificate_never_the_key() -> None:
    api = FakeApiServer().add(*webhook_objects())
    params = OPTED_IN
    with fake_cluster(api) as cluster:
        data = webhook_cert_expiry.fetch(cluster, params)
    result = webhook_cert_expiry.evaluate(data, params, NOW)
    assert result.status is Status.OK, result.errors
    encoded = base64.b64encode(KEY_MARKER.encode()).decode()
    for held in (repr(data), json.dumps([s.certificate_b64 for s in data.secrets]), result.model_dump_json()):
        assert KEY_MARKER not in held
        assert encoded not in held
    assert [s.key for s in data.secrets] == ["cert.pem", "cert.pem"]
    secret_reads = [r.path for r in api.requests if "/secrets/" in r.path]
    assert secret_reads == [
        object_path(SECRETS, "koordinator-webhook-certs", "koordinator-system"),
        object_path(SECRETS, "kruise-webhook-certs", "kruise-system"),
    ]


def test_absent_configuration_and_secret_are_named_failures() -> None:
    objects = [
        o
        for o in webhook_objects()
        if o["metadata"]["name"] not in ("kruise-validating-webhook-configuration", "koordinator-webhook-certs")
    ]
    api = FakeApiServer().add(*objects)
    with fake_cluster(api) as cluster:
        data = webhook_cert_expiry.fetch(cluster, OPTED_IN)
    result = webhook_cert_expiry.evaluate(data, OPTED_IN, NOW)
    assert result.status is Status.FAILED
    assert result.errors == [
        "validatingwebhookconfiguration kruise-validating-webhook-configuration: not found "
        "(want it present, with a caBundle per webhook)",
        "secret koordinator-system/koordinator-webhook-certs: not found (want the webhook's serving certificate there)",
    ]


def test_secret_forbidden_is_an_error_not_a_verdict() -> None:
    api = FakeApiServer().add(*webhook_objects())
    api.respond(
        object_path(SECRETS, "koordinator-webhook-certs", "koordinator-system"),
        403,
        {"kind": "Status", "message": 'secrets "koordinator-webhook-certs" is forbidden'},
    )
    with fake_cluster(api) as cluster, pytest.raises(ClusterAuthError, match="HTTP 403"):
        webhook_cert_expiry.fetch(cluster, OPTED_IN)


TEN_YEARS = dt.timedelta(hours=24 * 365 * 10)  # both managers' CA and leaf lifetime (module doc of the check)


def upstream_pair(namespace: str, secret: str, service: str) -> tuple[str, dict[str, Any]]:
    """What kruise-manager / koord-manager generate (built from their Go code, not captured): a self-signed CA
    `webhook-cert-ca` and a leaf for the Service's DNS name, both 10 years, written as the six keys of
    pkg/webhook/util/writer/secret.go `certsToSecret`. Returns the caBundle and the Secret."""
    ca = issue("webhook-cert-ca", NOW - dt.timedelta(hours=1), NOW + TEN_YEARS, is_ca=True)
    dns = f"{service}.{namespace}.svc"
    leaf = issue(dns, NOW - dt.timedelta(hours=1), NOW + TEN_YEARS, ca=ca, dns=("localhost", dns))
    key = base64.b64encode(KEY_MARKER.encode()).decode()
    data = {
        "ca-cert.pem": b64(ca.pem),
        "ca-key.pem": key,
        "cert.pem": b64(leaf.pem),
        "key.pem": key,
        "tls.crt": b64(leaf.pem),
        "tls.key": key,
    }
    return b64(ca.pem), {
        "kind": "Secret",
        "apiVersion": "v1",
        "type": "Opaque",
        "data": data,
        "metadata": {"name": secret, "namespace": namespace, "resourceVersion": "1"},
    }


def test_upstream_managers_pairs_are_read_from_their_secrets_and_pass() -> None:
    objects = webhook_objects()
    bundles = {}
    for namespace, secret, service, prefix in (
        ("koordinator-system", "koordinator-webhook-certs", "koordinator-webhook-service", "koordinator-"),
        ("kruise-system", "kruise-webhook-certs", "kruise-webhook-service", "kruise-"),
    ):
        bundle, secret_object = upstream_pair(namespace, secret, service)
        bundles[prefix] = bundle
        objects = [o for o in objects if not (o["kind"] == "Secret" and o["metadata"]["name"] == secret)]
        objects.append(secret_object)
    for configuration in (o for o in objects if o["kind"].endswith("WebhookConfiguration")):
        prefix = next(p for p in bundles if configuration["metadata"]["name"].startswith(p))
        for webhook in configuration["webhooks"]:
            webhook["clientConfig"]["caBundle"] = bundles[prefix]  # the managers inject ca-cert.pem
    params = OPTED_IN
    with fake_cluster(FakeApiServer().add(*objects)) as cluster:
        data = webhook_cert_expiry.fetch(cluster, params)
    result = webhook_cert_expiry.evaluate(data, params, NOW)
    assert result.status is Status.OK, result.errors
    for name, service in (
        ("koordinator-system/koordinator-webhook-certs", "koordinator-webhook-service"),
        ("kruise-system/kruise-webhook-certs", "kruise-webhook-service"),
    ):
        seen = result.details["serving_secrets"][name]
        assert seen["key"] == "cert.pem"
        (leaf,) = seen["certificates"]
        assert leaf["issuer"] == "CN=webhook-cert-ca"
        assert leaf["days_left"] == pytest.approx(3650, abs=0.1)
        assert f"{service}.{name.partition('/')[0]}.svc" in leaf["sans"]
    assert KEY_MARKER not in repr(data) + result.model_dump_json()


SCRAPE1 = gzip.decompress((FIXTURES / "apiserver_latency" / "scrape1.txt.gz").read_bytes()).decode()


def test_latency_fetch_scrapes_metrics_twice_an_interval_apart() -> None:
    api = FakeApiServer().respond("/metrics", 200, SCRAPE1, content_type="text/plain; version=0.0.4")
    params = ApiserverLatencyParams(interval_seconds=0.2)
    with fake_cluster(api) as cluster:
        data = apiserver_latency.fetch(cluster, params)
    assert [r.path for r in api.requests] == ["/metrics", "/metrics"]
    assert data.interval_seconds >= 0.2
    result = apiserver_latency.evaluate(data, params, NOW)
    assert result.status is Status.ERROR  # the same text twice: no request in the window, nothing observed
    assert "latency not observed" in result.summary


def test_latency_fetch_refuses_an_interval_the_deadline_cannot_hold() -> None:
    api = FakeApiServer().respond("/metrics", 200, SCRAPE1)
    with fake_cluster(api) as cluster, pytest.raises(ConfigError, match="does not fit in what is left"):
        apiserver_latency.fetch(cluster, ApiserverLatencyParams(interval_seconds=600))
    assert api.requests == []


@pytest.mark.parametrize(
    ("status", "error"), [(403, ClusterAuthError), (404, ClusterResponseError), (500, ClusterResponseError)]
)
def test_latency_metrics_not_readable_is_an_error(status: int, error: type[Exception]) -> None:
    api = FakeApiServer().respond("/metrics", status, "forbidden" if status == 403 else "nope")
    with fake_cluster(api) as cluster, pytest.raises(error):
        apiserver_latency.fetch(cluster, ApiserverLatencyParams(cumulative=True))
