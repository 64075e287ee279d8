"""The TCP connect and TLS handshake to the API server, observed on their own (no HTTP request).

apiserver-triage must tell network from TLS from readiness failures, and apiserver-cert-expiry must read the
presented chain; httpx hides both, so this does the two steps with the `Cluster`'s address, SSL context and
`Deadline`. Only the handshake is sent. `chain_verified` is True only after full verification; for an EXPIRED
certificate alone, on request, a second unverified handshake without client certificate reads the chain to name
the cause, and it must never make a verdict healthy. Failures are data; only a spent deadline raises.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpcore

from outpost.bounded import Deadline, DeadlineBackend
from outpost.errors import ClusterTimeout

_DER = 2  # _ssl.ENCODING_DER: the encoding `Certificate.public_bytes` takes for DER


@dataclass(frozen=True)
class TlsProbe:
    """What the TCP connect and the TLS handshake showed. Times in milliseconds."""

    address: str
    """`host:port` of the API server, as the cluster's server URL names it."""
    tcp_ms: float | None = None
    tcp_error: str | None = None
    tls_ms: float | None = None
    tls_error: str | None = None
    verify_code: int | None = None
    """OpenSSL's X509_V_ERR_* code when certificate verification failed (10: expired, 9: not yet valid)."""
    verify_message: str | None = None
    tls_version: str | None = None
    chain: tuple[bytes, ...] = field(default=(), repr=False)
    """DER certificates, leaf first: the verified chain (trust anchor included), or, after a failed
    verification and only when asked for, the chain the server sent, unverified."""
    chain_verified: bool = False

    @property
    def connected(self) -> bool:
        return self.tcp_error is None and self.tcp_ms is not None

    @property
    def handshake_ok(self) -> bool:
        return self.connected and self.tls_error is None and self.chain_verified

    @property
    def certificate_expired(self) -> bool:
        return self.verify_code == X509_V_ERR_CERT_HAS_EXPIRED


X509_V_ERR_CERT_NOT_YET_VALID = 9
X509_V_ERR_CERT_HAS_EXPIRED = 10


def _host_port(server: str) -> tuple[str, int]:
    parts = urlsplit(server)
    host = parts.hostname or ""
    return host, parts.port or 443


def _cause(error: BaseException) -> BaseException:
    """httpcore wraps the socket/ssl exception; the original one carries OpenSSL's verify code."""
    return error.__cause__ if error.__cause__ is not None else error


def _text(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return (lines[0][:200] if lines else "") or type(error).__name__


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000.0, 2)


def _unverified_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    # Read-only look at what the server presents after verification already failed (module doc):
    # no client certificate is loaded, and nothing but the handshake is sent.
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _chain(stream: httpcore.NetworkStream, verified: bool) -> tuple[bytes, ...]:
    ssl_object = stream.get_extra_info("ssl_object")
    if ssl_object is None:
        return ()
    certificates: Sequence[object] = (
        ssl_object.get_verified_chain() if verified else ssl_object.get_unverified_chain()
    ) or ()
    return tuple(certificate.public_bytes(_DER) for certificate in certificates)  # type: ignore[attr-defined]


def _version(stream: httpcore.NetworkStream) -> str | None:
    ssl_object = stream.get_extra_info("ssl_object")
    version = ssl_object.version() if ssl_object is not None else None
    return str(version) if version else None


def probe_tls(
    server: str,
    context: ssl.SSLContext,
    deadline: Deadline,
    connect_timeout: float,
    *,
    read_unverified_chain: bool = False,
) -> TlsProbe:
    """TCP connect (DNS included), then a verified TLS handshake, each timed (module doc)."""
    host, port = _host_port(server)
    address = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    if deadline.expired:
        raise ClusterTimeout(f"TLS probe of {address}: the check's deadline of {deadline.seconds:g} s ran out")
    backend = DeadlineBackend(deadline)
    started = time.monotonic()
    try:
        stream = backend.connect_tcp(host, port, timeout=deadline.cap(connect_timeout))
    except (httpcore.ConnectTimeout, httpcore.ConnectError, OSError) as error:
        kind = "timed out" if isinstance(error, httpcore.ConnectTimeout) else "failed"
        return TlsProbe(address, tcp_ms=_ms(started), tcp_error=f"TCP connect {kind}: {_text(_cause(error))}")
    tcp_ms = _ms(started)
    started = time.monotonic()
    try:
        secure = stream.start_tls(context, server_hostname=host, timeout=deadline.cap(connect_timeout))
    except (httpcore.ConnectTimeout, httpcore.ConnectError, OSError) as error:
        tls_ms = _ms(started)
        stream.close()
        cause = _cause(error)
        if isinstance(error, httpcore.ConnectTimeout):
            return TlsProbe(address, tcp_ms=tcp_ms, tls_ms=tls_ms, tls_error="TLS handshake timed out")
        code = getattr(cause, "verify_code", None) if isinstance(cause, ssl.SSLCertVerificationError) else None
        message = getattr(cause, "verify_message", None) if code is not None else None
        what = f"certificate verification failed: {message}" if message else f"TLS handshake failed: {_text(cause)}"
        chain: tuple[bytes, ...] = ()
        if code == X509_V_ERR_CERT_HAS_EXPIRED and read_unverified_chain:
            chain = _read_unverified_chain(backend, host, port, deadline, connect_timeout)
        return TlsProbe(
            address,
            tcp_ms=tcp_ms,
            tls_ms=tls_ms,
            tls_error=what,
            verify_code=code,
            verify_message=message,
            chain=chain,
            chain_verified=False,
        )
    try:
        return TlsProbe(
            address,
            tcp_ms=tcp_ms,
            tls_ms=_ms(started),
            tls_version=_version(secure),
            chain=_chain(secure, verified=True),
            chain_verified=True,
        )
    finally:
        secure.close()


def _read_unverified_chain(
    backend: DeadlineBackend, host: str, port: int, deadline: Deadline, connect_timeout: float
) -> tuple[bytes, ...]:
    """The chain the server presents, read without verification (only after verification failed)."""
    try:
        stream = backend.connect_tcp(host, port, timeout=deadline.cap(connect_timeout))
        secure = stream.start_tls(_unverified_context(), server_hostname=host, timeout=deadline.cap(connect_timeout))
    except (httpcore.ConnectTimeout, httpcore.ConnectError, OSError):
        return ()  # the description just has less to say; the verdict is already "verification failed"
    try:
        return _chain(secure, verified=False)
    finally:
        secure.close()
