"""X.509 certificates as checks judge them: PEM bundles and DER chains → subject, issuer, validity, SANs.

Pure (no I/O). Shared by `apiserver-cert-expiry` (the chain the API server presents in its TLS
handshake, as DER) and `webhook-cert-expiry` (webhook `caBundle`s, base64 PEM, and the serving
certificate of a webhook, PEM).

Guarantees:
- every certificate of a bundle is read (a `caBundle` often holds the old and the new CA during a
  rotation); the earliest `notAfter` is what matters, because whichever certificate expires first
  breaks trust first;
- something that is not a certificate (empty, not base64, not PEM, a PEM block that does not
  parse) raises `NotACertificate` with the reason, never the content: a mislabelled field could hold
  a private key, so not one byte of the input is quoted. PEM blocks of other types (e.g. a private
  key in the same file) are ignored, never parsed;
- times are timezone-aware UTC.

`cryptography` is imported when a certificate is first parsed, not when this module is loaded: it is
the `certificates` extra (pyproject.toml), installed in a bundle only when an enabled check parses
certificates (`CheckSpec.extras`, `outpost.packaging`), so every other bundle stays lean.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from outpost.errors import ConfigError

_PEM_CERTIFICATE = re.compile(
    rb"-----BEGIN CERTIFICATE-----\r?\n(?P<body>.*?)-----END CERTIFICATE-----", re.DOTALL
)


class NotACertificate(ValueError):
    """The input is not a certificate (the message says why, never what the input was)."""


@dataclass(frozen=True)
class CertificateInfo:
    """What a check reports about one certificate."""

    subject: str
    issuer: str
    not_before: datetime
    not_after: datetime
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    is_ca: bool = False
    serial: str = ""

    @property
    def sans(self) -> tuple[str, ...]:
        return self.dns_names + self.ip_addresses

    def seconds_left(self, now: datetime) -> float:
        return (self.not_after - now).total_seconds()

    def days_left(self, now: datetime) -> float:
        return self.seconds_left(now) / 86400.0

    def expired(self, now: datetime) -> bool:
        return self.not_after <= now

    def details(self, now: datetime) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "issuer": self.issuer,
            "not_before": self.not_before.isoformat(),
            "not_after": self.not_after.isoformat(),
            "days_left": round(self.days_left(now), 2),
            "sans": list(self.sans),
            "is_ca": self.is_ca,
            "serial": self.serial,
        }


def _x509() -> Any:
    try:
        from cryptography import x509
    except ImportError:  # the extra is missing from this install/bundle: a deployment problem, named
        raise ConfigError("certificate parsing needs the 'certificates' extra (cryptography), which this "
                          "installation lacks: pip install 'outpost[certificates]'") from None
    return x509


def _info(certificate: Any) -> CertificateInfo:
    x509 = _x509()
    dns: tuple[str, ...] = ()
    ips: tuple[str, ...] = ()
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        dns = tuple(str(name) for name in san.get_values_for_type(x509.DNSName))
        ips = tuple(str(address) for address in san.get_values_for_type(x509.IPAddress))
    except x509.ExtensionNotFound:
        pass
    try:
        is_ca = bool(certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        is_ca = False
    return CertificateInfo(
        subject=certificate.subject.rfc4514_string(),
        issuer=certificate.issuer.rfc4514_string(),
        not_before=certificate.not_valid_before_utc,
        not_after=certificate.not_valid_after_utc,
        dns_names=dns,
        ip_addresses=ips,
        is_ca=is_ca,
        serial=format(certificate.serial_number, "x"),
    )


def parse_der(der: bytes) -> CertificateInfo:
    """One DER certificate (as a TLS handshake presents it)."""
    x509 = _x509()
    try:
        return _info(x509.load_der_x509_certificate(der))
    except ValueError as error:
        raise NotACertificate(f"DER certificate does not parse ({type(error).__name__})") from None


def parse_der_chain(chain: Iterable[bytes]) -> list[CertificateInfo]:
    return [parse_der(der) for der in chain]


def parse_pem_bundle(data: bytes | str) -> list[CertificateInfo]:
    """Every `CERTIFICATE` block of a PEM bundle, in order; none, or one that does not parse, raises."""
    raw = data.encode("ascii", errors="replace") if isinstance(data, str) else data
    if not raw.strip():
        raise NotACertificate("empty")
    blocks = list(_PEM_CERTIFICATE.finditer(raw))
    if not blocks:
        raise NotACertificate("no PEM CERTIFICATE block")
    x509 = _x509()
    certificates = []
    for number, block in enumerate(blocks, start=1):
        try:
            certificates.append(_info(x509.load_pem_x509_certificate(block.group(0))))
        except ValueError as error:
            raise NotACertificate(f"PEM block {number} of {len(blocks)} does not parse "
                                  f"({type(error).__name__})") from None
    return certificates


def parse_base64_pem_bundle(text: str) -> list[CertificateInfo]:
    """A base64-encoded PEM bundle, as in a webhook's `caBundle` or a Secret's `data` values."""
    if not text.strip():
        raise NotACertificate("empty")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise NotACertificate("not base64") from None
    return parse_pem_bundle(raw)


def earliest_expiry(certificates: Sequence[CertificateInfo]) -> CertificateInfo:
    """The certificate that expires first (the one that breaks trust first)."""
    if not certificates:
        raise NotACertificate("no certificate")
    return min(certificates, key=lambda certificate: certificate.not_after)


def describe_left(certificate: CertificateInfo, now: datetime) -> str:
    """`expires in 4.9 days (2026-12-08T13:00:00+00:00)` or `expired 1.0 days ago (...)`."""
    days = certificate.days_left(now)
    when = certificate.not_after.isoformat()
    return f"expired {-days:.1f} days ago ({when})" if days <= 0 else f"expires in {days:.1f} days ({when})"
