"""Every certificate the sandbox and its tests use: one CA builder, one leaf builder, one file writer.

Control-plane PKI, webhook and backend TLS (with an unrelated CA and an expired pair for faults), and a throw-away
127.0.0.1 pair for functional tests. Every leaf is signed by a CA made here, never self-signed. The API server's
public serving certificate is separate from its internal one (SNI `localhost`), so a certificate fault breaks the
observer, not the control plane. Keys and tokens are 0600, random per sandbox, never printed, and written
atomically so a reloading reader never sees half a key.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypedDict, Unpack

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = dt.timedelta(days=3650)
LEAF_VALIDITY = dt.timedelta(days=365)
# Clocks drift and processes start a moment after the files are written: backdate so a brand-new
# certificate is never "not yet valid".
BACKDATE = dt.timedelta(hours=1)

# Service ClusterIP of `kubernetes.default` for --service-cluster-ip-range 10.96.0.0/16.
KUBERNETES_SERVICE_IP = "10.96.0.1"
APISERVER_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


# Key pairs and the two builders ------------------------------------------------------------------
@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    def private_key(self) -> ec.EllipticCurvePrivateKey:
        key = serialization.load_pem_private_key(self.key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise TypeError("sandbox key material is not an EC private key")
        return key


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePublicKey,
    not_before: dt.datetime,
    not_after: dt.datetime,
    *,
    ca: bool,
) -> x509.CertificateBuilder:
    """What every certificate here has: a random serial, its validity, and the basic constraints and key usage of
    a CA (signs certificates and CRLs) or a leaf (signs only)."""
    usage = x509.KeyUsage(
        digital_signature=True,
        key_cert_sign=ca,
        crl_sign=ca,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        encipher_only=False,
        decipher_only=False,
    )
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(usage, critical=True)
    )


def make_ca(common_name: str, not_before: dt.datetime, not_after: dt.datetime) -> KeyPair:
    """A self-signed CA valid from `not_before` to `not_after`."""
    key = new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        _builder(name, name, key.public_key(), not_before, not_after, ca=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), key_pem(key))


class LeafOptions(TypedDict, total=False):
    """What `issue` takes besides the CA and the common name."""

    organization: str | None
    dns: Sequence[str]
    ips: Sequence[str]
    server: bool
    client: bool
    not_before: dt.datetime | None
    not_after: dt.datetime | None


def issue(
    ca: KeyPair,
    common_name: str,
    *,
    organization: str | None = None,
    dns: Sequence[str] = (),
    ips: Sequence[str] = (),
    server: bool = False,
    client: bool = False,
    not_before: dt.datetime | None = None,
    not_after: dt.datetime | None = None,
) -> KeyPair:
    """A leaf certificate signed by `ca`; by default valid for a year from an hour ago.

    `not_after`/`not_before` let fault injection produce an expired or soon-expiring certificate.
    """
    ca_cert, ca_key = ca.certificate, ca.private_key()
    key = new_key()
    t = now()
    end = not_after if not_after is not None else t + LEAF_VALIDITY
    # An expired certificate still needs not_before < not_after to be well-formed.
    start = not_before if not_before is not None else min(t - BACKDATE, end - dt.timedelta(days=1))
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    usages = [
        usage
        for usage, wanted in ((ExtendedKeyUsageOID.SERVER_AUTH, server), (ExtendedKeyUsageOID.CLIENT_AUTH, client))
        if wanted
    ]
    builder = (
        _builder(x509.Name(attrs), ca_cert.subject, key.public_key(), start, end, ca=False)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in dict.fromkeys(ips)]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), key_pem(key))


# Files ---------------------------------------------------------------------------------------------
def write_file(path: Path, data: bytes, mode: int) -> None:
    """Write atomically with `mode` from the first byte (a key is never briefly world-readable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_pair(directory: Path, stem: str, pair: KeyPair) -> None:
    """`<stem>.key` (0600) then `<stem>.crt`: key first, so a reloading server never pairs a new
    certificate with the old key."""
    write_file(directory / f"{stem}.key", pair.key_pem, 0o600)
    write_file(directory / f"{stem}.crt", pair.cert_pem, 0o644)


def read_pair(directory: Path, stem: str) -> KeyPair | None:
    cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
    if not (cert.exists() and key.exists()):
        return None
    return KeyPair(cert.read_bytes(), key.read_bytes())


def ensure_ca(directory: Path, stem: str = "ca", days: int = 3650) -> KeyPair:
    """The CA stored under `stem`, created once (valid `days`) if it is not there yet."""
    existing = read_pair(directory, stem)
    if existing is not None:
        return existing
    t = now()
    pair = make_ca(f"outpost-sandbox-{stem}", t - BACKDATE, t + dt.timedelta(days=days))
    write_pair(directory, stem, pair)
    return pair


# Webhook and backend serving certificates ------------------------------------------------------------
def service_names(service: str, namespace: str) -> list[str]:
    """The DNS names the API server may use for a Service (webhook calls, service proxy)."""
    return [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local", f"{service}.{namespace}", service]


def issue_serving(
    ca: KeyPair, dns_names: Sequence[str], not_before: dt.datetime, not_after: dt.datetime, ips: Sequence[str] = ()
) -> KeyPair:
    """A server certificate for `dns_names` (the first is the common name) signed by `ca`."""
    return issue(ca, dns_names[0], dns=dns_names, ips=ips, server=True, not_before=not_before, not_after=not_after)


def issue_service_set(directory: Path, service: str, namespace: str, valid_days: float = 365) -> None:
    """Write `<svc>` (good), `<svc>-badca` (foreign CA) and `<svc>-expired` pairs for one Service."""
    ca = ensure_ca(directory)
    foreign_ca = ensure_ca(directory, "foreign-ca")
    names = service_names(service, namespace)
    t = now()
    write_pair(directory, service, issue_serving(ca, names, t - BACKDATE, t + dt.timedelta(days=valid_days)))
    write_pair(
        directory, f"{service}-badca", issue_serving(foreign_ca, names, t - BACKDATE, t + dt.timedelta(days=365))
    )
    write_pair(
        directory, f"{service}-expired", issue_serving(ca, names, t - dt.timedelta(days=30), t - dt.timedelta(days=1))
    )


# Local HTTPS servers of the functional tests ------------------------------------------------------------
@dataclass(frozen=True)
class LocalhostTls:
    """A CA file and a 127.0.0.1 serving pair signed by it."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def localhost_tls(directory: Path, name: str = "local") -> LocalhostTls:
    """A fresh CA `<name>-ca.crt` and a serving pair `<name>.crt`/`<name>.key` for 127.0.0.1, valid a day."""
    t = now()
    ca = make_ca(f"{name}-ca", t - dt.timedelta(minutes=1), t + dt.timedelta(days=1))
    leaf = issue(
        ca,
        "127.0.0.1",
        ips=("127.0.0.1",),
        server=True,
        not_before=t - dt.timedelta(minutes=1),
        not_after=t + dt.timedelta(days=1),
    )
    files = LocalhostTls(directory / f"{name}-ca.crt", directory / f"{name}.crt", directory / f"{name}.key")
    write_file(files.ca_file, ca.cert_pem, 0o644)
    write_pair(directory, name, leaf)
    return files


# The control plane ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Identity:
    """A static-token identity of the sandbox API server."""

    user: str
    uid: str
    groups: tuple[str, ...]


# The probe gets no group beyond system:authenticated (added by the API server): everything it may
# do comes from what `outpost rbac --env local` generates (outpost.tooling.rbac), which the e2e RBAC tests prove.
IDENTITIES: tuple[Identity, ...] = (
    Identity("admin", "outpost-admin", ("system:masters",)),
    Identity("outpost-probe", "outpost-probe", ()),
    # The kwok-pod-reconciler job's write identity: no group either, only `outpost.tooling.rbac.reconciler_manifests`.
    Identity("outpost-reconciler", "outpost-reconciler", ()),
    Identity("system:kube-controller-manager", "kube-controller-manager", ()),
    Identity("system:kube-scheduler", "kube-scheduler", ()),
    # kwok plays every kubelet at once (nodes, leases, pod status across namespaces): it needs
    # cluster-wide write access, which the Node authorizer cannot grant to a single identity.
    Identity("kwok-controller", "kwok-controller", ("system:masters",)),
)


class PKI:
    """The control plane's key material under one directory (`<state>/pki`)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.ca_cert: Final = self.cert("ca")
        self.ca_key: Final = self.key("ca")
        self.sa_key: Final = directory / "sa.key"
        self.sa_pub: Final = directory / "sa.pub"
        self.token_file: Final = directory / "tokens.csv"

    def cert(self, name: str) -> Path:
        return self.dir / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.dir / f"{name}.key"

    def ensure(self, advertise_address: str) -> None:
        """Create whatever is missing; existing material is kept so a restarted sandbox keeps
        trusting the kubeconfigs it handed out."""
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        if not (self.ca_cert.exists() and self.ca_key.exists()):
            t = now()
            write_pair(self.dir, "ca", make_ca("outpost-sandbox-ca", t - BACKDATE, t + CA_VALIDITY))
        if not self.cert("apiserver").exists():
            self.issue_apiserver_serving(advertise_address)
        if not self.cert("apiserver-internal").exists():
            self._issue(
                "apiserver-internal", "kube-apiserver-internal", dns=("localhost",), ips=("127.0.0.1",), server=True
            )
        if not self.cert("components").exists():
            # Serving certificate for kube-controller-manager and kube-scheduler, so their
            # /healthz is verified against the sandbox CA like everything else.
            self._issue("components", "sandbox-components", dns=("localhost",), ips=("127.0.0.1",), server=True)
        if not self.cert("kubelet-client").exists():
            # What the API server presents to kubelet endpoints (node proxy); system:masters so a
            # fake kubelet that does delegated authorization would accept it.
            self._issue("kubelet-client", "kube-apiserver-kubelet-client", organization="system:masters", client=True)
        if not self.cert("front-proxy-client").exists():
            # The aggregation layer's client identity; configuring it also gives delegated
            # authentication in the controller manager and scheduler the request-header CA they
            # look for (otherwise they log an error per resync).
            self._issue("front-proxy-client", "front-proxy-client", client=True)
        if not (self.sa_key.exists() and self.sa_pub.exists()):
            key = new_key()
            write_file(self.sa_key, key_pem(key), 0o600)
            public = key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            write_file(self.sa_pub, public, 0o644)
        # Identities missing from the token file (all of them at first; one added since, in a sandbox
        # made by an older version) get a token; existing tokens are kept, so handed-out kubeconfigs stay valid.
        known = self._token_users()
        lines = self._token_lines()
        missing = [ident for ident in IDENTITIES if ident.user not in known]
        for ident in missing:
            token = secrets.token_urlsafe(32)
            groups = ",".join(ident.groups)
            lines.append(
                f'{token},{ident.user},{ident.uid},"{groups}"' if groups else f"{token},{ident.user},{ident.uid}"
            )
        if missing:
            write_file(self.token_file, ("\n".join(lines) + "\n").encode(), 0o600)

    def _token_lines(self) -> list[str]:
        if not self.token_file.exists():
            return []
        return [line for line in self.token_file.read_text().splitlines() if line.strip()]

    def _token_users(self) -> set[str]:
        return {parts[1] for parts in (line.split(",", 3) for line in self._token_lines()) if len(parts) >= 3}

    def token(self, user: str) -> str:
        """The static token of `user` (read from the token file; never logged)."""
        for line in self.token_file.read_text().splitlines():
            parts = line.split(",", 3)
            if len(parts) >= 3 and parts[1] == user:
                return parts[0]
        raise KeyError(f"sandbox token file {self.token_file} has no identity {user!r}")

    def issue_apiserver_serving(
        self, advertise_address: str, not_after: dt.datetime | None = None, not_before: dt.datetime | None = None
    ) -> None:
        """(Re)issue the public serving certificate of the API server (by default valid a year)."""
        self._issue(
            "apiserver",
            "kube-apiserver",
            dns=APISERVER_DNS_NAMES,
            ips=("127.0.0.1", KUBERNETES_SERVICE_IP, advertise_address),
            server=True,
            not_after=not_after,
            not_before=not_before,
        )

    def not_after(self, name: str) -> dt.datetime:
        return x509.load_pem_x509_certificate(self.cert(name).read_bytes()).not_valid_after_utc

    def _issue(self, name: str, common_name: str, **options: Unpack[LeafOptions]) -> None:
        ca = read_pair(self.dir, "ca")
        if ca is None:
            raise FileNotFoundError(f"sandbox CA {self.ca_cert} is missing")
        write_pair(self.dir, name, issue(ca, common_name, **options))
