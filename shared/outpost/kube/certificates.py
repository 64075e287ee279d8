"""X.509 certificates as checks judge them: PEM bundles and DER chains -> subject, issuer, validity, SANs.

Pure. PEM is framed as Go's `encoding/pem` Decode (a port of go1.26 `pem.go`, tests in test_upstream_pem.py); a
`caBundle` is trusted as the API server trusts it (client-go@v0.37.2 `transport/transport.go` rootCertPool):
rejected exactly when nothing is trusted, judged by the earliest trusted `notAfter` (docs/contracts.md "Parsing
as upstream"). Errors never quote the input (it could be a private key). `cryptography` is imported on first
use: it is the `certificates` extra, bundled only for checks that need it.
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

_PEM_START = b"\n-----BEGIN "
_PEM_END = b"\n-----END "
_PEM_END_OF_LINE = b"-----"
_BASE64_BODY = re.compile(rb"[A-Za-z0-9+/]*={0,2}")


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
        raise ConfigError(
            "certificate parsing needs the 'certificates' extra (cryptography), which this "
            "installation lacks: pip install 'outpost[certificates]'"
        ) from None
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


@dataclass(frozen=True)
class PemBlock:
    """`pem.Block`: the type from the BEGIN line, the headers, the decoded body."""

    type: str
    headers: dict[str, str]
    data: bytes


def _get_line(data: bytes) -> tuple[bytes, bytes, int]:
    """`getLine`: the first line without its CR LF / LF and trailing spaces and tabs, the rest, bytes consumed."""
    index = data.find(b"\n")
    if index < 0:
        index = consumed = len(data)
    else:
        consumed = index + 1
        if index > 0 and data[index - 1 : index] == b"\r":
            index -= 1
    return data[:index].rstrip(b" \t"), data[consumed:], consumed


def _go_base64(data: bytes) -> bytes | None:
    """`base64.StdEncoding.Decode`: padded standard alphabet, CR and LF ignored anywhere; None on an error."""
    compact = data.replace(b"\r", b"").replace(b"\n", b"")
    if len(compact) % 4 or not _BASE64_BODY.fullmatch(compact):
        return None
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None


def pem_decode(data: bytes) -> tuple[PemBlock | None, bytes]:
    """Go's `pem.Decode(data)`: the first well-formed block and the bytes after it, or (None, data)."""
    rest = data
    end_trailer_index = 0
    while True:
        if end_trailer_index < 0 or end_trailer_index > len(rest):
            return None, data
        rest = rest[end_trailer_index:]
        end_index = rest.find(_PEM_END)
        if end_index < 0:
            return None, data
        end_trailer_index = end_index + len(_PEM_END)
        begin_index = rest.rfind(_PEM_START[1:], 0, end_index)
        if begin_index < 0 or (begin_index > 0 and rest[begin_index - 1 : begin_index] != b"\n"):
            continue
        skip = begin_index + len(_PEM_START) - 1
        rest = rest[skip:]
        end_index -= skip
        end_trailer_index -= skip
        type_line, rest, consumed = _get_line(rest)
        end_index -= consumed
        end_trailer_index -= consumed
        if not type_line.endswith(_PEM_END_OF_LINE):
            continue
        type_line = type_line[: -len(_PEM_END_OF_LINE)]
        headers: dict[str, str] = {}
        truncated = False
        while True:
            if not rest:
                truncated = True
                break
            line, following, consumed = _get_line(rest)
            key, colon, value = line.partition(b":")
            if not colon:
                break
            headers[key.strip().decode("latin-1")] = value.strip().decode("latin-1")
            rest = following
            end_index -= consumed
            end_trailer_index -= consumed
        if truncated:
            return None, data
        if headers and end_index < 0:
            continue
        end_trailer = rest[end_trailer_index:] if end_trailer_index >= 0 else b""
        trailer_length = len(type_line) + len(_PEM_END_OF_LINE)
        if end_trailer_index < 0 or len(end_trailer) < trailer_length:
            continue
        rest_of_end_line = end_trailer[trailer_length:]
        end_trailer = end_trailer[:trailer_length]
        if not end_trailer.startswith(type_line) or not end_trailer.endswith(_PEM_END_OF_LINE):
            continue
        if _get_line(rest_of_end_line)[0]:
            continue
        body = b""
        if end_index > 0:
            decoded = _go_base64(rest[:end_index].replace(b" ", b"").replace(b"\t", b""))
            if decoded is None:
                continue
            body = decoded
        _, rest, _ = _get_line(rest[end_index + len(_PEM_END) - 1 :])
        return PemBlock(type_line.decode("latin-1"), headers, body), rest


def pem_blocks(data: bytes) -> list[PemBlock]:
    """Every block `pem.Decode` finds, walking as `AppendCertsFromPEM` walks (stopping at the first None)."""
    blocks: list[PemBlock] = []
    rest = data
    while rest:
        block, rest = pem_decode(rest)
        if block is None:
            break
        blocks.append(block)
    return blocks


def _raw(data: bytes | str) -> bytes:
    return data.encode("utf-8", errors="replace") if isinstance(data, str) else data


def parse_ca_bundle(data: bytes | str) -> list[CertificateInfo]:
    """The certificates the API server trusts from this `caBundle` (module doc), in order; NotACertificate
    when it trusts none (it then refuses the bundle), with client-go's reason."""
    raw = _raw(data)
    if not raw.strip():
        raise NotACertificate("empty")
    x509 = _x509()
    trusted: list[CertificateInfo] = []
    for block in pem_blocks(raw):
        if block.type != "CERTIFICATE" or block.headers:
            continue
        try:
            trusted.append(_info(x509.load_der_x509_certificate(block.data)))
        except ValueError:
            continue
    if trusted:
        return trusted
    # client-go transport.go createErrorParsingCAData: why AppendCertsFromPEM trusted nothing, in its order
    refused = "the API server refuses this bundle"
    candidates = sum(1 for block in pem_blocks(raw) if block.type == "CERTIFICATE" and not block.headers)
    number, rest = 0, raw
    while rest:
        found, rest = pem_decode(rest)
        if found is None:
            raise NotACertificate("no PEM CERTIFICATE block")  # client-go: "unable to parse bytes as PEM block"
        if found.type != "CERTIFICATE" or found.headers:
            continue
        number += 1
        try:
            x509.load_der_x509_certificate(found.data)
        except ValueError as error:
            raise NotACertificate(
                f"PEM block {number} of {candidates} does not parse ({type(error).__name__}): "
                f"failed to parse certificate; {refused}"
            ) from None
    raise NotACertificate("no PEM CERTIFICATE block")  # client-go: "no valid certificate authority data seen"


def parse_pem_bundle(data: bytes | str) -> list[CertificateInfo]:
    """Every `CERTIFICATE` block of a PEM bundle, in order, framed as Go frames PEM; none, or one that does not
    parse, raises (a serving certificate: strict)."""
    raw = _raw(data)
    if not raw.strip():
        raise NotACertificate("empty")
    blocks = [block for block in pem_blocks(raw) if block.type == "CERTIFICATE"]
    if not blocks:
        raise NotACertificate("no PEM CERTIFICATE block (none that Go's pem.Decode accepts)")
    x509 = _x509()
    certificates = []
    for number, block in enumerate(blocks, start=1):
        try:
            certificates.append(_info(x509.load_der_x509_certificate(block.data)))
        except ValueError as error:
            raise NotACertificate(
                f"PEM block {number} of {len(blocks)} does not parse ({type(error).__name__})"
            ) from None
    return certificates


def _base64(text: str) -> bytes:
    if not text.strip():
        raise NotACertificate("empty")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise NotACertificate("not base64") from None


def parse_base64_pem_bundle(text: str) -> list[CertificateInfo]:
    """A base64-encoded `caBundle` (as a webhook configuration's JSON carries it), judged as the API server
    judges it: `parse_ca_bundle`."""
    return parse_ca_bundle(_base64(text))


def parse_base64_pem_chain(text: str) -> list[CertificateInfo]:
    """A base64-encoded serving certificate PEM (a Secret's `data` value), read strictly: `parse_pem_bundle`."""
    return parse_pem_bundle(_base64(text))


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
