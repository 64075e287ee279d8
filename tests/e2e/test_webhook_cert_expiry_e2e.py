"""webhook-cert-expiry end to end: the four webhook configurations' caBundles, and (opt-in only) the two certificate
Secrets the real managers generated (each from its own 10-year CA).

By default the probe reads no Secret: ok with about ten years left and one ping; a threshold above that fails
naming every caBundle, unpinged. Opted in, the Secret read is a 403 `error` without the generated RBAC and ok
with it. A cert-manager Certificate (CRD only) fails until its status.notAfter is set. Expiring or deleted
certificates are the fault catalogue's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from check_runs import CheckRuns
from generated_rbac import probe_granted_for

from outpost.result import Status

if TYPE_CHECKING:
    from conftest import SandboxInfo

CHECK = "webhook-cert-expiry"
CONFIGURATIONS = (
    "mutatingwebhookconfiguration koordinator-mutating-webhook-configuration",
    "validatingwebhookconfiguration koordinator-validating-webhook-configuration",
    "mutatingwebhookconfiguration kruise-mutating-webhook-configuration",
    "validatingwebhookconfiguration kruise-validating-webhook-configuration",
)
SECRETS = {
    "koordinator-system/koordinator-webhook-certs": "secret koordinator-system/koordinator-webhook-certs",
    "kruise-system/kruise-webhook-certs": "secret kruise-system/kruise-webhook-certs",
}
TEN_YEARS_DAYS = 3650
"""The managers' CA and serving certificate lifetime (github.com/openkruise/kruise@v1.8.0 and
github.com/koordinator-sh/koordinator@v1.6.0, pkg/webhook/util/generator/selfsigned.go)."""


def can_i(sandbox: SandboxInfo, *args: str) -> str:
    return str(sandbox.kubectl("auth", "can-i", *args, probe=True, check=False).stdout).strip()


def test_probe_may_get_no_secret_by_default(sandbox: SandboxInfo) -> None:
    assert can_i(sandbox, "get", "secrets/kruise-webhook-certs", "-n", "kruise-system") == "no"
    assert can_i(sandbox, "get", "secrets/koordinator-webhook-certs", "-n", "koordinator-system") == "no"
    assert can_i(sandbox, "list", "secrets", "-n", "kruise-system") == "no"
    assert can_i(sandbox, "get", "secrets/some-other-secret", "-n", "kruise-system") == "no"


def test_healthy_is_ok_and_pings_once_without_secret_rights(runs: CheckRuns, sandbox: SandboxInfo) -> None:
    assert can_i(sandbox, "get", "secrets/kruise-webhook-certs", "-n", "kruise-system") == "no"
    result = runs.healthy(CHECK)
    assert set(result.details["configurations"]) == set(CONFIGURATIONS)
    assert result.details["serving_secrets"] == {}
    assert result.details["serving_certificates"] == "not read (read_serving_secrets is off)"
    for configuration in result.details["configurations"].values():
        for bundle in configuration["bundles"]:
            (certificate,) = bundle["certificates"]
            assert "webhook-cert-ca" in certificate["subject"]
            assert TEN_YEARS_DAYS - 365 < certificate["days_left"] <= TEN_YEARS_DAYS


def test_a_threshold_beyond_the_certificates_names_every_bundle(runs: CheckRuns) -> None:
    config = runs.config(CHECK, {"threshold_days": TEN_YEARS_DAYS})
    result = runs.run(config, CHECK)
    assert result.status is Status.FAILED, result.summary
    for name in CONFIGURATIONS:
        assert any(
            line.startswith(f"{name}: webhook ") and " caBundle certificate " in line for line in result.errors
        ), (name, result.errors)
    assert not [line for line in result.errors if line.startswith("secret ")]
    assert all(line.endswith(f"(want > {TEN_YEARS_DAYS} days)") for line in result.errors), result.errors
    runs.assert_silent(result, CHECK)


def test_the_opt_in_without_its_rbac_is_an_error_naming_the_secret(runs: CheckRuns) -> None:
    result = runs.probe(CHECK, {"read_serving_secrets": True})
    assert result.status is Status.ERROR, result.summary
    assert "403" in result.summary, result.summary
    assert "koordinator-webhook-certs" in result.summary, result.summary
    runs.assert_silent(result, CHECK)


def test_with_the_opt_in_and_its_rbac_it_reads_the_secrets(runs: CheckRuns, sandbox: SandboxInfo) -> None:
    config = runs.config(CHECK, {"read_serving_secrets": True})
    with probe_granted_for(sandbox, config):
        assert can_i(sandbox, "get", "secrets/kruise-webhook-certs", "-n", "kruise-system") == "yes"
        result = runs.run(config, CHECK)
        expiring = runs.probe(CHECK, {"read_serving_secrets": True, "threshold_days": TEN_YEARS_DAYS})
    assert can_i(sandbox, "get", "secrets/kruise-webhook-certs", "-n", "kruise-system") == "no"
    assert result.status is Status.OK, result.errors
    assert result.details["serving_certificates"] == "secrets"
    assert set(result.details["serving_secrets"]) == set(SECRETS)
    for secret in result.details["serving_secrets"].values():
        assert secret["key"] == "cert.pem"
        (certificate,) = secret["certificates"]
        assert "webhook-cert-ca" in certificate["issuer"]
        assert TEN_YEARS_DAYS - 365 < certificate["days_left"] <= TEN_YEARS_DAYS  # issued within the year
    assert runs.receiver.pings_for(CHECK) == 1
    assert expiring.status is Status.FAILED, expiring.summary
    for name in SECRETS.values():
        (line,) = [error for error in expiring.errors if error.startswith(f"{name}: ")]
        assert line.startswith(f"{name}: serving certificate cert.pem: ")
    assert expiring.reported is False
    assert runs.receiver.pings_for(CHECK) == 1


CERTIFICATE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "certificates.cert-manager.io"},
    "spec": {
        "group": "cert-manager.io",
        "scope": "Namespaced",
        "names": {
            "plural": "certificates",
            "singular": "certificate",
            "kind": "Certificate",
            "listKind": "CertificateList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}
"""cert-manager's Certificate as the API server serves it (cert-manager.io/v1, status a subresource), with an open
schema: what is proven is the probe's keyless read of status.notAfter, not cert-manager's validation."""


def test_a_cert_manager_certificate_is_read_without_any_secret(
    runs: CheckRuns, sandbox: SandboxInfo, tmp_path: Path
) -> None:
    if sandbox.kubectl("get", "crd", "certificates.cert-manager.io", check=False).returncode == 0:
        pytest.skip("cert-manager's CRD is already installed: not this test's to replace")
    crd, certificate = tmp_path / "crd.json", tmp_path / "certificate.json"
    crd.write_text(json.dumps(CERTIFICATE_CRD))
    certificate.write_text(
        json.dumps(
            {
                "apiVersion": "cert-manager.io/v1",
                "kind": "Certificate",
                "metadata": {"name": "kruise-webhook-cert", "namespace": "kruise-system"},
                "spec": {"secretName": "kruise-webhook-certs", "issuerRef": {"name": "selfsigned", "kind": "Issuer"}},
            }
        )
    )
    params = {"cert_manager_certificates": [{"namespace": "kruise-system", "name": "kruise-webhook-cert"}]}
    config = runs.config(CHECK, params)
    try:
        sandbox.kubectl("apply", "-f", str(crd))
        sandbox.kubectl("wait", "--for=condition=Established", "crd/certificates.cert-manager.io", "--timeout=30s")
        sandbox.kubectl("apply", "-f", str(certificate))
        with probe_granted_for(sandbox, config):
            never_issued = runs.run(config, CHECK)
            sandbox.kubectl(
                "patch",
                "certificate",
                "kruise-webhook-cert",
                "-n",
                "kruise-system",
                "--subresource",
                "status",
                "--type",
                "merge",
                "-p",
                json.dumps(
                    {
                        "status": {
                            "notAfter": "2036-01-01T00:00:00Z",
                            "conditions": [{"type": "Ready", "status": "True"}],
                        }
                    }
                ),
            )
            issued = runs.run(config, CHECK)
            assert (
                can_i(sandbox, "get", "certificates.cert-manager.io/kruise-webhook-cert", "-n", "kruise-system")
                == "yes"
            )
            assert can_i(sandbox, "get", "secrets/kruise-webhook-certs", "-n", "kruise-system") == "no"
    finally:
        sandbox.kubectl("delete", "crd", "certificates.cert-manager.io", "--ignore-not-found", "--wait=true")
    assert never_issued.status is Status.FAILED, never_issued.summary
    assert never_issued.errors == [
        "certificate kruise-system/kruise-webhook-cert: status.notAfter absent, never "
        "issued (Ready absent) (want an issued certificate)"
    ]
    assert issued.status is Status.OK, issued.errors
    assert issued.details["serving_certificates"] == "cert-manager"
    assert issued.details["serving_secrets"] == {}
    seen = issued.details["cert_manager_certificates"]["kruise-system/kruise-webhook-cert"]
    assert seen["ready"] == "True"
    assert seen["not_after"] == "2036-01-01T00:00:00+00:00"
    assert runs.receiver.pings_for(CHECK) == 1
