"""The `kubeconfig` mode: the file(s) read and merged as kubectl does, one context resolved into credentials.

Read here rather than by the kubernetes library so that every file is bounded (`outpost.local_files`), TLS
verification cannot be turned off, a password is never sent, and an exec plugin runs under the run's deadline
(`exec_plugin`).
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from outpost import local_files, redaction
from outpost.bounded import Deadline
from outpost.cluster.auth.credentials import Credentials, TokenSource, server_context
from outpost.cluster.auth.exec_plugin import run_exec_plugin
from outpost.config import (
    DuplicateKeyError,
    KubeconfigAuth,
    RefusedYamlError,
    has_userinfo,
    load_yaml,
    userinfo,
    without_userinfo,
    yaml_error_where,
)
from outpost.errors import ClusterAuthError


@dataclass
class _Entry:
    """One named kubeconfig entry and the directory its relative paths are relative to."""

    body: dict[str, Any]
    base: Path


@dataclass
class _Kubeconfig:
    clusters: dict[str, _Entry] = field(default_factory=dict)
    contexts: dict[str, _Entry] = field(default_factory=dict)
    users: dict[str, _Entry] = field(default_factory=dict)
    current_context: str | None = None


def _kubeconfig_files(auth: KubeconfigAuth) -> list[Path]:
    if auth.path:
        return [Path(auth.path).expanduser()]
    listed = [Path(p).expanduser() for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [p for p in listed if p.exists()] or listed[:1]
    return [Path("~/.kube/config").expanduser()]


def _load_kubeconfig(auth: KubeconfigAuth, deadline: Deadline | None = None) -> _Kubeconfig:
    merged = _Kubeconfig()
    for file in _kubeconfig_files(auth):
        try:
            document = load_yaml(local_files.read_text(file, local_files.KUBECONFIG, deadline), duplicate_keys=True)
        except local_files.LocalFileError as error:
            raise ClusterAuthError(f"kubeconfig credentials: {error}") from None
        except (RefusedYamlError, DuplicateKeyError) as error:
            raise ClusterAuthError(f"kubeconfig credentials: {file} {error}") from None
        except yaml.YAMLError as error:
            # Only where: the parser's text can quote the file's content, and a kubeconfig holds secrets.
            raise ClusterAuthError(
                f"kubeconfig credentials: {file} is not valid YAML{yaml_error_where(error)}"
            ) from None
        if document is None:
            continue
        if not isinstance(document, dict):
            raise ClusterAuthError(f"kubeconfig credentials: {file} is not a kubeconfig (not a mapping)")
        base = file.resolve().parent
        for key, kind, target in (
            ("clusters", "cluster", merged.clusters),
            ("contexts", "context", merged.contexts),
            ("users", "user", merged.users),
        ):
            entries = document.get(key) or []
            if not isinstance(entries, list):
                raise ClusterAuthError(f"kubeconfig credentials: {file}: {key} is not a list")
            for item in entries:
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    raise ClusterAuthError(f"kubeconfig credentials: {file}: an entry of {key} has no name")
                body = item.get(kind) or {}
                if not isinstance(body, dict):
                    raise ClusterAuthError(f"kubeconfig credentials: {file}: {key} {item['name']} is not a mapping")
                if kind == "cluster":
                    _register_server_password(body.get("server"))
                target.setdefault(item["name"], _Entry(body, base))
        if merged.current_context is None and isinstance(document.get("current-context"), str):
            merged.current_context = document["current-context"] or None
    return merged


def _register_server_password(server: Any) -> None:
    """A password in a server URL is a credential: no output may print it, even before the URL is refused."""
    if isinstance(server, str) and has_userinfo(server):
        authority = userinfo(server)
        for part in (authority, authority.partition(":")[2]):
            if part:
                redaction.register(part)


def _scalar(entry: _Entry, key: str, what: str) -> str | None:
    """`key`'s value as text; a mapping or a list where client-go expects a string is refused (never str()-ed: an
    expanded structure can be huge)."""
    value = entry.body.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, dict | list):
        raise ClusterAuthError(f"kubeconfig credentials: {what}: {key} must be a string")
    return str(value)


def _path_of(entry: _Entry, key: str, what: str = "kubeconfig entry") -> str | None:
    value = _scalar(entry, key, what)
    if not value:
        return None
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else entry.base / path)


def _b64(entry: _Entry, key: str, what: str) -> bytes | None:
    value = _scalar(entry, key, what)
    if not value:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ClusterAuthError(f"kubeconfig credentials: {what} {key} is not base64") from None


def from_kubeconfig(auth: KubeconfigAuth, deadline: Deadline) -> Credentials:
    config = _load_kubeconfig(auth, deadline)
    context_name = auth.context or config.current_context
    if not context_name or context_name not in config.contexts:
        raise ClusterAuthError(f"kubeconfig credentials: context {context_name or '(current)'} is not defined")
    context_body = config.contexts[context_name].body
    cluster_name, user_name = context_body.get("cluster"), context_body.get("user")
    if not isinstance(cluster_name, str) or cluster_name not in config.clusters:
        raise ClusterAuthError(f"kubeconfig credentials: context {context_name} names no defined cluster")
    cluster = config.clusters[cluster_name]
    if cluster.body.get("insecure-skip-tls-verify"):
        raise ClusterAuthError(
            "kubeconfig sets insecure-skip-tls-verify; Outpost never turns TLS verification off "
            "(give the cluster's certificate-authority instead)"
        )
    server = (_scalar(cluster, "server", f"cluster {cluster_name}") or "").rstrip("/")
    if has_userinfo(server):
        raise ClusterAuthError(
            f"kubeconfig credentials: the server of cluster {cluster_name} carries user "
            f"information (user:password@); Outpost never sends a password: give "
            f"{without_userinfo(server)} and a token, certificate or exec plugin"
        )
    if not server.lower().startswith("https://"):
        raise ClusterAuthError(
            f"kubeconfig credentials: the server of cluster {cluster_name} is not https://; "
            "Outpost never sends a credential over plain http"
        )
    ca_data = _b64(cluster, "certificate-authority-data", f"cluster {cluster_name}")
    ca_file = _path_of(cluster, "certificate-authority", f"cluster {cluster_name}")
    from_file = bool(ca_file and not ca_data)
    if ca_file and from_file:
        ca_data = local_files.read_bytes(ca_file, local_files.CA_BUNDLE, deadline)  # read once: exec info too
    try:
        ssl_context = server_context(
            ca_pem=ca_data.decode("ascii", errors="replace") if ca_data else None,
            where=f"kubeconfig credentials: CA bundle {ca_file} of cluster {cluster_name}"
            if from_file
            else f"kubeconfig credentials: certificate-authority-data of cluster {cluster_name}",
        )
    except (OSError, ssl.SSLError) as error:
        raise ClusterAuthError(
            f"kubeconfig credentials: certificate-authority of cluster {cluster_name}: {type(error).__name__}"
        ) from None
    user = config.users.get(user_name) if isinstance(user_name, str) else None
    if user is None:
        # An anonymous context: nothing to send, and nothing to refuse (the API server decides).
        return Credentials(server, ssl_context, None)
    what = f"user {user_name} of context {context_name}"
    if user.body.get("auth-provider"):
        raise ClusterAuthError(
            f"kubeconfig credentials: {what} uses a legacy auth-provider, which Outpost does "
            "not run; use an exec credential plugin"
        )
    if user.body.get("username") or user.body.get("password"):
        raise ClusterAuthError(f"kubeconfig credentials: {what} uses basic auth, which Outpost does not send")
    cert_pem, key_pem = _b64(user, "client-certificate-data", what), _b64(user, "client-key-data", what)
    cert_file, key_file = _path_of(user, "client-certificate", what), _path_of(user, "client-key", what)
    if cert_file and key_file and not (cert_pem and key_pem):
        cert_pem = local_files.read_bytes(cert_file, local_files.CLIENT_CERTIFICATE, deadline)
        key_pem = local_files.read_bytes(key_file, local_files.CLIENT_KEY, deadline)
    token_source: TokenSource | None = None
    static = _scalar(user, "token", what)
    token_file = _path_of(user, "tokenFile", what)
    if static:
        static = static.strip()
        redaction.register(static)
        token_source = lambda: static  # noqa: E731
    elif token_file:
        token_source = _token_file_source(token_file, what, deadline)
    elif user.body.get("exec"):
        # client-go sends the CA's PEM, the file's when it is a file (read once, above).
        issued = run_exec_plugin(user.body["exec"], user.base, server, ca_data, what, deadline)
        if issued.token:
            token = issued.token
            token_source = lambda: token  # noqa: E731
        cert_pem, key_pem = issued.cert_pem or cert_pem, issued.key_pem or key_pem
        if not issued.token and not (issued.cert_pem and issued.key_pem):
            raise ClusterAuthError(f"kubeconfig credentials: the exec plugin of {what} produced no credentials")
    _load_client_certificate(ssl_context, what, cert_pem, key_pem)
    return Credentials(server, ssl_context, token_source)


def _token_file_source(path: str, what: str, deadline: Deadline | None = None) -> TokenSource:
    """The token in `path`, read at each use (a projected token is rotated in place), through the capped reader."""

    def token() -> str:
        try:
            value = local_files.read_text(path, local_files.TOKEN, deadline).strip()
        except local_files.LocalFileError as error:
            raise ClusterAuthError(f"kubeconfig credentials: tokenFile of {what}: {error}") from None
        redaction.register(value)
        return value

    return token


def _load_client_certificate(context: ssl.SSLContext, what: str, cert_pem: bytes | None, key_pem: bytes | None) -> None:
    """Load a client certificate and key given as PEM (inline, or read by `outpost.local_files` from files).

    OpenSSL loads a chain only from files: they are written to a private temporary directory and removed at once.
    """
    try:
        if cert_pem and key_pem:
            redaction.register(key_pem.decode("ascii", errors="replace"))
            with tempfile.TemporaryDirectory(prefix="outpost-cert-") as directory:
                cert_path, key_path = Path(directory, "cert.pem"), Path(directory, "key.pem")
                cert_path.write_bytes(cert_pem)
                key_path.touch(mode=0o600)
                key_path.write_bytes(key_pem)
                context.load_cert_chain(cert_path, key_path)
    except (OSError, ssl.SSLError) as error:
        raise ClusterAuthError(
            f"kubeconfig credentials: client certificate of {what}: {type(error).__name__}"
        ) from None
