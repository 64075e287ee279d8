"""Certificates generated in the tests (never checked in): a CA, and leaves it signs, with chosen validity."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Issued:
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def der(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.DER)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def issue(
    common_name: str,
    not_before: dt.datetime,
    not_after: dt.datetime,
    *,
    ca: Issued | None = None,
    is_ca: bool = False,
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.certificate.subject if ca else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    )
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    certificate = builder.sign(ca.key if ca else key, hashes.SHA256())
    return Issued(certificate, key)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def distinct_cas(count: int, prefix: str, days: int = 365) -> list[bytes]:
    """`count` distinct self-signed CA certificates (PEM) named `<prefix>-<n>`, from 2026-01-01 for `days`: one key
    signs them all, so thousands take seconds (OpenSSL loads duplicates faster, so only distinct ones show a
    bundle's real cost)."""
    key = ec.generate_private_key(ec.SECP256R1())
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    pems = []
    for index in range(count):
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{prefix}-{index}")])
        certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(index + 1)
            .not_valid_before(start)
            .not_valid_after(start + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        pems.append(certificate.public_bytes(serialization.Encoding.PEM))
    return pems
