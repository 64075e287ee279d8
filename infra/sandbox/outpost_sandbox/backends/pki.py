"""The sandbox webhook PKI: one CA, and serving certificates for each webhook Service.

Guarantees: every serving certificate names `<svc>.<ns>.svc` (and the short forms the API server
may use) as DNS SANs and is signed by the sandbox webhook CA whose PEM is put in the webhook
configurations' caBundle, so the API server's webhook calls verify for real. For TLS faults it also
issues, for the same names, a certificate from an unrelated CA and one that has already expired.
Private keys are written with mode 0600 and never logged.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

UTC = dt.UTC


@dataclass(frozen=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_ca(common_name: str, not_before: dt.datetime, not_after: dt.datetime) -> KeyPair:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def issue_serving(ca: KeyPair, dns_names: list[str], not_before: dt.datetime,
                  not_after: dt.datetime, ips: list[str] | None = None) -> KeyPair:
    ca_cert = ca.certificate
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = _key()
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips or []]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])]))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def service_names(service: str, namespace: str) -> list[str]:
    return [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local",
            f"{service}.{namespace}", service]


def write_pair(directory: Path, stem: str, pair: KeyPair) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{stem}.crt").write_bytes(pair.cert_pem)
    key_path = directory / f"{stem}.key"
    key_path.touch(mode=0o600, exist_ok=True)
    key_path.chmod(0o600)
    key_path.write_bytes(pair.key_pem)


def read_pair(directory: Path, stem: str) -> KeyPair | None:
    c, k = directory / f"{stem}.crt", directory / f"{stem}.key"
    if not (c.exists() and k.exists()):
        return None
    return KeyPair(c.read_bytes(), k.read_bytes())


def now() -> dt.datetime:
    return dt.datetime.now(UTC)


def ensure_ca(directory: Path, stem: str = "ca", days: int = 3650) -> KeyPair:
    """The CA stored under `stem`, created once (valid `days`) if it is not there yet."""
    existing = read_pair(directory, stem)
    if existing is not None:
        return existing
    t = now()
    pair = make_ca(f"outpost-sandbox-{stem}", t - dt.timedelta(hours=1), t + dt.timedelta(days=days))
    write_pair(directory, stem, pair)
    return pair


def issue_service_set(directory: Path, service: str, namespace: str, valid_days: float = 365) -> None:
    """Write `<svc>` (good), `<svc>-badca` (foreign CA) and `<svc>-expired` pairs for one Service."""
    ca = ensure_ca(directory)
    bad_ca = ensure_ca(directory, "foreign-ca")
    names = service_names(service, namespace)
    t = now()
    write_pair(directory, service,
               issue_serving(ca, names, t - dt.timedelta(hours=1), t + dt.timedelta(days=valid_days)))
    write_pair(directory, f"{service}-badca",
               issue_serving(bad_ca, names, t - dt.timedelta(hours=1), t + dt.timedelta(days=365)))
    write_pair(directory, f"{service}-expired",
               issue_serving(ca, names, t - dt.timedelta(days=30), t - dt.timedelta(days=1)))
