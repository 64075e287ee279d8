"""Certificates generated in the tests (never checked in): a CA, and leaves it signs, with chosen validity; and the
base64 texts that are no certificate, each with the reason `outpost.kube.certificates` names."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
from dataclasses import dataclass

import pytest
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


KEY_TEXT = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSECRETSECRET"
"""The body of the private key in NOT_CERTIFICATES: no message, line or detail may quote it."""

NOT_CERTIFICATES = [
    pytest.param("", "empty", id="empty"),
    pytest.param("   ", "empty", id="blank"),
    pytest.param("not base64 at all!", "not base64", id="not-base64"),
    pytest.param("%%%", "not base64", id="not-base64-symbols-only"),
    pytest.param(b64(b"hello world"), "no PEM CERTIFICATE block", id="base64-of-hello-world"),
    pytest.param(b64(b"not a cert"), "no PEM CERTIFICATE block", id="base64-of-not-a-cert"),
    pytest.param(
        b64(f"-----BEGIN PRIVATE KEY-----\n{KEY_TEXT}\n-----END PRIVATE KEY-----\n".encode()),
        "no PEM CERTIFICATE block",
        id="a-private-key",
    ),
    pytest.param(
        b64(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        "PEM block 1 of 1 does not parse (ValueError): failed to parse certificate; the API server refuses this bundle",
        id="truncated-certificate",
    ),
]
"""(text, reason): what a caBundle may hold that is no certificate (base64, as the API returns it), and the whole
reason `parse_base64_pem_bundle` gives for it."""


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
