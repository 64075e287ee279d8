"""apiserver-cert-expiry: how long until the API server's serving certificate chain expires?

It reads the chain presented in a handshake with the cluster's own trust and credential (`Cluster.tls_probe`)
and judges the certificate that expires first, whichever it is, against `threshold_days` (21). Verification stays
on. An expired certificate fails it (OpenSSL code 10): `failed`, and only then a second, unverified handshake
reads the chain to name the expiry; that chain never changes the verdict. Any other verification failure, no
connection or a failed handshake is `error`: a certificate we do not trust is no observation of the API server.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster, TlsProbe
from outpost.kube import access
from outpost.kube.certificates import (
    CertificateInfo,
    NotACertificate,
    describe_left,
    earliest_expiry,
    parse_der_chain,
)
from outpost.result import Result
from outpost.runbook import Runbook

NAME = "apiserver-cert-expiry"
FAILS_WHEN = "serving certificate expires within {threshold_days:g} days"

# `{address}` is the API server's host:port as the probe dials it; the command prints what it presents there.
SHOW_CERTIFICATE = (
    "openssl s_client -connect {address} </dev/null 2>/dev/null | openssl x509 -noout -subject -issuer -dates"
)
RENEWING = "https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-certs/"
CERT_EXPIRED = Runbook(
    "cert-expired",
    "The API server's serving certificate (or one of its chain) has expired",
    "nothing renewed it: kubeadm renews its certificates only on a control-plane upgrade or `kubeadm certs "
    "renew`, a cert-manager or provider rotation failed, or the API server was not restarted after the files "
    "were renewed",
    SHOW_CERTIFICATE,
    RENEWING,
)
CERT_EXPIRING = Runbook(
    "cert-expiring",
    "A certificate of the API server's serving chain expires within the threshold",
    "the rotation that renews it has not run yet or failed (kubeadm: `kubeadm certs renew` or a control-plane "
    "upgrade; managed clusters: the provider's rotation); the earliest may be an intermediate or the CA",
    SHOW_CERTIFICATE,
    RENEWING,
)
NOT_JUDGED = Runbook(
    "not-judged",
    "The API server's certificate could not be read as one this cluster trusts",
    "the TCP connection failed, or the handshake did: an untrusted CA (the kubeconfig's CA is not the one that "
    "signed the certificate), a name the certificate does not carry, a certificate not yet valid, or another "
    "server answering at the address",
    SHOW_CERTIFICATE,
    "kubectl cluster-info",
)

RUNBOOKS = (CERT_EXPIRED, CERT_EXPIRING, NOT_JUDGED)


class ApiserverCertExpiryParams(Params):
    threshold_days: float = Field(
        21.0, gt=0, le=3650, description="Fail when a certificate of the chain expires within this many days."
    )


@dataclass(frozen=True)
class ApiserverCertData:
    probe: TlsProbe


def fetch(cluster: Cluster, params: ApiserverCertExpiryParams) -> ApiserverCertData:
    return ApiserverCertData(cluster.tls_probe(read_unverified_chain=True))


def declared_access(params: ApiserverCertExpiryParams) -> list[access.Access]:
    """Nothing: a TLS handshake, no request is sent."""
    return []


def _chain(probe: TlsProbe) -> tuple[list[CertificateInfo], str | None]:
    try:
        return parse_der_chain(probe.chain), None
    except NotACertificate as error:
        return [], f"apiserver {probe.address}: presented certificate does not parse ({error})"


def evaluate(data: ApiserverCertData, params: ApiserverCertExpiryParams, now: datetime) -> Result:
    probe = data.probe
    where = f"apiserver {probe.address}"
    chain, unparsable = _chain(probe)
    details: dict[str, Any] = {
        "address": probe.address,
        "threshold_days": params.threshold_days,
        "chain_verified": probe.chain_verified,
        "chain": [certificate.details(now) for certificate in chain],
        "tcp_ms": probe.tcp_ms,
        "tls_ms": probe.tls_ms,
        "tls_version": probe.tls_version,
    }
    if not probe.connected:
        return _error(f"{where}: {probe.tcp_error}", details)
    if probe.tls_error is not None:
        details["tls_error"] = probe.tls_error
        if not probe.certificate_expired:
            # Not a trusted observation of the API server's certificate (module doc).
            return _error(f"{where}: {probe.tls_error}; expiry not judged", details)
        # Verification said "expired": failed, whatever the unverified chain shows; it only names it.
        expired = [c for c in chain if c.expired(now)]
        named = (f"{c.subject}: {describe_left(c, now)}" for c in expired) if expired else ()
        lines = [
            f"{where}: certificate {line} (want valid > {params.threshold_days:g} days; "
            "chain read unverified after verification failed)"
            for line in named
        ]
        if not lines:
            lines = [f"{where}: {probe.tls_error} (the unverified chain did not show which certificate)"]
        errors = [CERT_EXPIRED.at(line, address=probe.address) for line in lines]
        return Result.failed(NAME, f"{where}: serving certificate expired", errors, details)
    if unparsable or not chain:
        return _error(unparsable or f"{where}: the TLS handshake showed no certificate", details)
    first = earliest_expiry(chain)
    leaf = chain[0]
    details.update(
        {
            "issuer": leaf.issuer,
            "subject": leaf.subject,
            "sans": list(leaf.sans),
            "earliest_not_after": first.not_after.isoformat(),
            "days_left": round(first.days_left(now), 2),
        }
    )
    if first.days_left(now) <= params.threshold_days:
        line = (
            f"{where}: certificate {first.subject} {describe_left(first, now)} (want > {params.threshold_days:g} days)"
        )
        return Result.failed(NAME, line, [CERT_EXPIRING.at(line, address=probe.address)], details)
    summary = (
        f"{where}: serving chain valid {first.days_left(now):.0f} more days "
        f"(earliest: {first.subject}, threshold {params.threshold_days:g})"
    )
    return Result.ok(NAME, summary, details)


def _error(line: str, details: dict[str, Any]) -> Result:
    return Result.unobserved(NAME, line, [NOT_JUDGED.at(line, address=details["address"])], details)


CHECK = CheckSpec(
    name=NAME,
    system="kwok / any",
    layer="control plane",
    severity="warning",
    schedule_minutes=60,
    fails_when=FAILS_WHEN,
    params=ApiserverCertExpiryParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
    extras=("certificates",),
)
