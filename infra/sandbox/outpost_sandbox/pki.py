"""Key material for the sandbox control plane: one CA, serving and client certificates, the
service-account key pair and the static token file.

Guarantees:
- Every certificate is signed by the sandbox's own CA (`ca.crt`), so a client that trusts only
  that file verifies every endpoint the sandbox serves; nothing is self-signed ad hoc.
- The API server's *public* serving certificate (`apiserver.crt`, what probes see on 127.0.0.1)
  is separate from its *internal* one (`apiserver-internal.crt`, chosen by SNI `localhost`), so a
  fault that makes the public certificate expire breaks the observer, not the control plane.
- Private keys and the token file are written 0600 and never printed; tokens are random per
  sandbox, so a leaked sandbox token is worth nothing elsewhere.
- Writes are atomic (temp file + rename): a reader never sees half a key.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class Identity:
    """A static-token identity of the sandbox API server."""

    user: str
    uid: str
    groups: tuple[str, ...]


# The probe gets no group beyond system:authenticated (added by the API server): everything it may
# do comes from the `outpost-probe` ClusterRole, which is what the e2e RBAC tests prove.
IDENTITIES: tuple[Identity, ...] = (
    Identity("admin", "outpost-admin", ("system:masters",)),
    Identity("outpost-probe", "outpost-probe", ()),
    Identity("system:kube-controller-manager", "kube-controller-manager", ()),
    Identity("system:kube-scheduler", "kube-scheduler", ()),
    # kwok plays every kubelet at once (nodes, leases, pod status across namespaces): it needs
    # cluster-wide write access, which the Node authorizer cannot grant to a single identity.
    Identity("kwok-controller", "kwok-controller", ("system:masters",)),
)


def _write(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class PKI:
    """The sandbox's key material under one directory (`<state>/pki`)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory

    # Paths -------------------------------------------------------------------------------------
    @property
    def ca_cert(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key"

    def cert(self, name: str) -> Path:
        return self.dir / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.dir / f"{name}.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"

    @property
    def token_file(self) -> Path:
        return self.dir / "tokens.csv"

    # Generation --------------------------------------------------------------------------------
    def ensure(self, advertise_address: str) -> None:
        """Create whatever is missing; existing material is kept so a restarted sandbox keeps
        trusting the kubeconfigs it handed out."""
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        if not (self.ca_cert.exists() and self.ca_key.exists()):
            self._make_ca()
        if not self.cert("apiserver").exists():
            self.issue_apiserver_serving(advertise_address)
        if not self.cert("apiserver-internal").exists():
            self._issue(
                "apiserver-internal",
                common_name="kube-apiserver-internal",
                dns=("localhost",),
                ips=("127.0.0.1",),
                server=True,
            )
        if not self.cert("components").exists():
            # Serving certificate for kube-controller-manager and kube-scheduler, so their
            # /healthz is verified against the sandbox CA like everything else.
            self._issue(
                "components", common_name="sandbox-components", dns=("localhost",), ips=("127.0.0.1",),
                server=True,
            )
        if not self.cert("kubelet-client").exists():
            # What the API server presents to kubelet endpoints (node proxy); system:masters so a
            # fake kubelet that does delegated authorization would accept it.
            self._issue(
                "kubelet-client", common_name="kube-apiserver-kubelet-client",
                organization="system:masters", client=True,
            )
        if not self.cert("front-proxy-client").exists():
            # The aggregation layer's client identity; configuring it also gives delegated
            # authentication in the controller manager and scheduler the request-header CA they
            # look for (otherwise they log an error per resync).
            self._issue("front-proxy-client", common_name="front-proxy-client", client=True)
        if not (self.sa_key.exists() and self.sa_pub.exists()):
            key = _new_key()
            _write(self.sa_key, _key_pem(key), 0o600)
            pub = key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            _write(self.sa_pub, pub, 0o644)
        if not self.token_file.exists():
            lines = []
            for ident in IDENTITIES:
                token = secrets.token_urlsafe(32)
                groups = ",".join(ident.groups)
                lines.append(f'{token},{ident.user},{ident.uid},"{groups}"' if groups else
                             f"{token},{ident.user},{ident.uid}")
            _write(self.token_file, ("\n".join(lines) + "\n").encode(), 0o600)

    def token(self, user: str) -> str:
        """The static token of `user` (read from the token file; never logged)."""
        for line in self.token_file.read_text().splitlines():
            parts = line.split(",", 3)
            if len(parts) >= 3 and parts[1] == user:
                return parts[0]
        raise KeyError(f"sandbox token file {self.token_file} has no identity {user!r}")

    def issue_apiserver_serving(
        self,
        advertise_address: str,
        not_after: dt.datetime | None = None,
        not_before: dt.datetime | None = None,
    ) -> None:
        """(Re)issue the public serving certificate of the API server.

        `not_after`/`not_before` let fault injection produce an expired or soon-expiring
        certificate; by default it is valid for a year from an hour ago.
        """
        self._issue(
            "apiserver",
            common_name="kube-apiserver",
            dns=APISERVER_DNS_NAMES,
            ips=("127.0.0.1", KUBERNETES_SERVICE_IP, advertise_address),
            server=True,
            not_after=not_after,
            not_before=not_before,
        )

    def _make_ca(self) -> None:
        key = _new_key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "outpost-sandbox-ca")])
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                    key_encipherment=False, data_encipherment=False, key_agreement=False,
                    encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        _write(self.ca_key, _key_pem(key), 0o600)
        _write(self.ca_cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)

    def _load_ca(self) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        cert = x509.load_pem_x509_certificate(self.ca_cert.read_bytes())
        key = serialization.load_pem_private_key(self.ca_key.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise TypeError(f"sandbox CA key {self.ca_key} is not an EC key")
        return cert, key

    def _issue(
        self,
        name: str,
        *,
        common_name: str,
        organization: str | None = None,
        dns: tuple[str, ...] = (),
        ips: tuple[str, ...] = (),
        server: bool = False,
        client: bool = False,
        not_after: dt.datetime | None = None,
        not_before: dt.datetime | None = None,
    ) -> None:
        ca_cert, ca_key = self._load_ca()
        key = _new_key()
        now = _now()
        end = not_after if not_after is not None else now + LEAF_VALIDITY
        # An expired certificate still needs not_before < not_after to be well-formed.
        start = not_before if not_before is not None else min(now - BACKDATE, end - dt.timedelta(days=1))
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        if organization:
            attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attrs))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, key_encipherment=False, key_cert_sign=False, crl_sign=False,
                    content_commitment=False, data_encipherment=False, key_agreement=False,
                    encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
        )
        sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in dict.fromkeys(ips)]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        # Key first: the API server reloads serving files when they change, and a new certificate
        # next to the old key would be a mismatched pair for a moment.
        _write(self.key(name), _key_pem(key), 0o600)
        _write(self.cert(name), cert.public_bytes(serialization.Encoding.PEM), 0o644)

    def not_after(self, name: str) -> dt.datetime:
        cert = x509.load_pem_x509_certificate(self.cert(name).read_bytes())
        return cert.not_valid_after_utc
