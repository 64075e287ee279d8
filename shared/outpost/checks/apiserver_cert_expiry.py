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

from outpost.checks.base import CheckSpec, Params
from outpost.cluster import Cluster, TlsProbe
from outpost.kube import access
from outpost.kube.certificates import (
    CertificateInfo,
    NotACertificate,
    describe_left,
    earliest_expiry,
    parse_der_chain,
)
from outpost.result import Result, Status

NAME = "apiserver-cert-expiry"


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
        errors = [
            f"{where}: certificate {line} (want valid > {params.threshold_days:g} days; "
            "chain read unverified after verification failed)"
            for line in named
        ]
        if not errors:
            errors = [f"{where}: {probe.tls_error} (the unverified chain did not show which certificate)"]
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
        return Result.failed(NAME, line, [line], details)
    summary = (
        f"{where}: serving chain valid {first.days_left(now):.0f} more days "
        f"(earliest: {first.subject}, threshold {params.threshold_days:g})"
    )
    return Result.ok(NAME, summary, details)


def _error(line: str, details: dict[str, Any]) -> Result:
    return Result(check=NAME, status=Status.ERROR, summary=line, errors=[line], details=details)


CHECK = CheckSpec(
    name=NAME,
    system="kwok / any",
    layer="control plane",
    severity="warning",
    schedule_minutes=60,
    fails_when="serving certificate expires within {threshold_days:g} days",
    params=ApiserverCertExpiryParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    extras=("certificates",),
)
