"""What an HTTPS client needs from any auth mode (`Credentials`: server, trust, identity), the one way a server
context is made, and the `token` mode.

Every mode builds its trust here, so verification is always on, a given cluster CA is the only anchor, and no
CA bundle, from a file or inline, holds more than `MAX_CA_CERTIFICATES` certificates.
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from outpost import local_files
from outpost.bounded import Deadline
from outpost.config import (
    TokenAuth,
)
from outpost.errors import ClusterAuthError
from outpost.secrets import resolve

TokenSource = Callable[[], str]

MAX_CA_CERTIFICATES = 1000
"""Most certificates accepted in one CA bundle (file or inline). Debian's whole public bundle holds 144. OpenSSL's
loading grows quadratically (measured, OpenSSL 3.0, 2 cores: 144 in 20 ms, 1,000 in 140 ms, 4,000 in 1.0 s,
20,000 in 24 s): 1,000 is 7x any real bundle and loads in a fraction of a second."""
DEFAULT_CREDENTIALS_SECONDS = 30.0
"""Budget for obtaining credentials when no run deadline is given (tools, not checks)."""


@dataclass
class Credentials:
    """Where the API server is, how to trust it and who we are."""

    server: str
    ssl_context: ssl.SSLContext
    token: TokenSource | None = field(default=None, repr=False)


def server_context(
    ca_file: str | None = None, ca_pem: str | None = None, deadline: Deadline | None = None, where: str | None = None
) -> ssl.SSLContext:
    """A context that always verifies the API server. A given cluster CA is its only trust anchor, as with
    kubectl (the cluster's CA replaces the system roots rather than adding to them, so no public CA can vouch
    for the API server); the system roots are loaded only when no CA is given (about 25 ms per run saved too).
    A CA file is read through `outpost.local_files` (never by OpenSSL from the path), and any bundle holds at most
    `MAX_CA_CERTIFICATES` certificates; only its CERTIFICATE blocks count, as with client-go's AppendCertsFromPEM."""
    if not ca_file and not ca_pem:
        return ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    where = where or (f"CA bundle {ca_file}" if ca_file else "inline CA data")
    if ca_file:
        ca_pem = local_files.read_bytes(ca_file, local_files.CA_BUNDLE, deadline).decode("ascii", errors="replace")
    pem = ca_pem or ""
    count = pem.count("-----BEGIN CERTIFICATE-----")
    if count > MAX_CA_CERTIFICATES:
        raise ClusterAuthError(
            f"{where} holds {count} certificates, over the limit of {MAX_CA_CERTIFICATES} "
            "(a cluster CA is one to a few; loading grows quadratically)"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # hostname checked, certificate required, TLS >= 1.2
    context.load_verify_locations(cadata=pem)
    return context


def context_from_ca(
    mode: str, ca_file: str | None = None, ca_data: str | None = None, deadline: Deadline | None = None
) -> ssl.SSLContext:
    if ca_file:
        path = str(Path(ca_file).expanduser())
        return server_context(ca_file=path, deadline=deadline, where=f"{mode} credentials: CA bundle {path}")
    if ca_data:
        try:
            pem = base64.b64decode(ca_data, validate=True).decode("ascii")
        except ValueError:
            raise ClusterAuthError("ca_data is not base64-encoded PEM") from None
        return server_context(ca_pem=pem, where=f"{mode} credentials: ca_data")
    return server_context()


def from_token(auth: TokenAuth, deadline: Deadline) -> Credentials:
    context = context_from_ca(auth.mode, auth.ca_file, auth.ca_data, deadline)
    reference = auth.token

    def token() -> str:
        return resolve(reference, timeout=deadline.remaining()).reveal().strip()

    return Credentials(auth.server, context, token)
