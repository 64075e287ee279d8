"""Turning a `ClusterAuth` setting into what an HTTPS client needs: server, trust, identity.

Guarantees:
- TLS verification is always on; a kubeconfig that asks for `insecure-skip-tls-verify` is refused, and
  so is a server that is not https:// (checked again by `Cluster`);
- every local file (kubeconfig, token file, CA file, client certificate and key) is read through
  `outpost.local_files`: a regular file within its kind's size limit, or a one-line refusal naming it (a FIFO,
  `/dev/zero` or a 150 MB token can neither hang nor grow the run). A CA bundle also holds at most
  `MAX_CA_CERTIFICATES` certificates (OpenSSL's loading is quadratic: 20,000 take 24 s), from a file or inline;
- kubeconfig YAML is loaded with its aliases' expansion bounded (`outpost.config.load_yaml`: an alias bomb in a
  token or in exec args would expand to gigabytes); a repeated key keeps the last value, as
  client-go's non-strict decoding does; token, args, env values and paths must be scalars, as client-go's types
  require;
- a server URL with user information (`https://user:password@host`) is refused naming the cluster entry and
  showing the URL without it: httpx would send it as Basic auth; the password is registered for redaction;
- kubeconfigs are read here, not by the kubernetes library: its loader waits for an exec plugin without a
  limit, logs the plugin's stderr to the root logger and crashes on some users. We read the file(s)
  ($KUBECONFIG merging included: first definition wins), and run an exec credential plugin ourselves in a
  session of its own, killing its whole process group when the run's deadline passes (never waiting for
  it); the ExecCredential contract is honoured: apiVersion, args, env, interactiveMode (there is no
  terminal: `Always` is refused), provideClusterInfo (KUBERNETES_EXEC_INFO). Its stdout is read as it comes,
  with a poll bounded by the deadline, and the group is killed as soon as it passes `EXEC_OUTPUT_LIMIT`; its
  stderr is drained and discarded (never buffered, never quoted: it may hold secrets); any exception kills the
  group too, and `outpost.interrupt` tracks the process for as long as it runs (a SIGINT/SIGTERM kills it);
- every credential obtained (static and file tokens, exec plugin tokens and keys, EKS and GKE tokens) is
  registered with `outpost.redaction` before it is used, so no output can print it;
- cloud token calls (STS, Google OAuth) get at most what is left of the deadline;
- everything that can go wrong while obtaining credentials is a `ClusterAuthError` naming the auth mode
  and the cause, never a provider's response body or a plugin's stderr, so the check reports `error`
  rather than a crash and nothing secret travels in the message.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import math
import os
import select
import signal
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from outpost import interrupt, local_files, redaction
from outpost.bounded import Deadline
from outpost.config import (
    ClusterAuth,
    DuplicateKeyError,
    EksAuth,
    GkeAuth,
    KubeconfigAuth,
    RefusedYamlError,
    TokenAuth,
    has_userinfo,
    load_yaml,
    userinfo,
    without_userinfo,
    yaml_error_where,
)
from outpost.errors import ClusterAuthError, OutpostError
from outpost.secrets import resolve

TokenSource = Callable[[], str]

EKS_TOKEN_PREFIX = "k8s-aws-v1."  # noqa: S105 - a format prefix, not a credential
EKS_TOKEN_LIFETIME_SECONDS = 600  # EKS accepts 15 min; refresh well before.
GKE_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_OUTPUT_LIMIT = 1024 * 1024
"""Largest ExecCredential a plugin may print (a token and a certificate and key are a few KB)."""
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


def build_credentials(auth: ClusterAuth, deadline: Deadline | None = None) -> Credentials:
    budget = deadline or Deadline(DEFAULT_CREDENTIALS_SECONDS)
    try:
        if isinstance(auth, KubeconfigAuth):
            return _from_kubeconfig(auth, budget)
        if isinstance(auth, TokenAuth):
            return _from_token(auth, budget)
        if isinstance(auth, EksAuth):
            return Credentials(
                auth.server, _context_from_ca(auth.mode, ca_data=auth.ca_data), _eks_token_source(auth, budget)
            )
        return Credentials(
            auth.server, _context_from_ca(auth.mode, ca_data=auth.ca_data), _gke_token_source(auth, budget)
        )
    except local_files.LocalFileError as error:
        raise ClusterAuthError(f"{auth.mode} credentials: {error}") from None
    except OutpostError:
        raise
    except Exception as error:  # noqa: BLE001 - any loader failure means "cannot authenticate"
        raise ClusterAuthError(f"{auth.mode} credentials: {type(error).__name__}: {_first_line(error)}") from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return redaction.redact(text[0][:200]) if text else "no detail"


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


def _context_from_ca(
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


def _from_token(auth: TokenAuth, deadline: Deadline) -> Credentials:
    context = _context_from_ca(auth.mode, auth.ca_file, auth.ca_data, deadline)
    reference = auth.token

    def token() -> str:
        return resolve(reference, timeout=deadline.remaining()).reveal().strip()

    return Credentials(auth.server, context, token)


# -- kubeconfig ------------------------------------------------------------------------------------


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


def _from_kubeconfig(auth: KubeconfigAuth, deadline: Deadline) -> Credentials:
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
        issued = _run_exec_plugin(user.body["exec"], user.base, server, ca_data, what, deadline)
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


@dataclass
class _Issued:
    token: str | None = field(default=None, repr=False)
    cert_pem: bytes | None = field(default=None, repr=False)
    key_pem: bytes | None = field(default=None, repr=False)


def _run_exec_plugin(
    spec: Any, base: Path, server: str, ca_data: bytes | None, what: str, deadline: Deadline
) -> _Issued:
    """Run the exec credential plugin under the deadline; its process group is killed when time is up."""
    prefix = f"kubeconfig credentials: exec plugin of {what}"
    if not isinstance(spec, dict) or not isinstance(spec.get("command"), str) or not spec["command"]:
        raise ClusterAuthError(f"{prefix}: exec has no command")
    api_version = spec.get("apiVersion")
    if api_version not in EXEC_API_VERSIONS:
        raise ClusterAuthError(
            f"{prefix}: apiVersion {str(api_version)[:60]!r} is not one of {', '.join(EXEC_API_VERSIONS)}"
        )
    mode = spec.get("interactiveMode") or ("IfAvailable" if api_version.endswith("v1beta1") else None)
    if mode not in ("Never", "IfAvailable", "Always"):
        raise ClusterAuthError(f"{prefix}: interactiveMode must be Never, IfAvailable or Always")
    if mode == "Always":
        raise ClusterAuthError(f"{prefix}: interactiveMode Always needs a terminal, and a check has none")
    command = spec["command"]
    if os.sep in command and not Path(command).is_absolute():
        command = str(base / command)  # kubectl resolves a relative path against the kubeconfig's directory
    args = spec.get("args") or []
    if not isinstance(args, list) or any(isinstance(a, dict | list) or a is None for a in args):
        raise ClusterAuthError(f"{prefix}: args must be a list of strings")
    environment = dict(os.environ)
    entries = spec.get("env") or []
    if not isinstance(entries, list):
        raise ClusterAuthError(f"{prefix}: env must be a list of name/value entries")
    for item in entries:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or isinstance(item.get("value"), dict | list)
        ):
            raise ClusterAuthError(f"{prefix}: every env entry needs a name and a value")
        environment[item["name"]] = str(item.get("value", ""))
    exec_spec: dict[str, Any] = {"interactive": False}
    if spec.get("provideClusterInfo"):
        cluster_info: dict[str, Any] = {"server": server}
        if ca_data:
            cluster_info["certificate-authority-data"] = base64.b64encode(ca_data).decode("ascii")
        exec_spec["cluster"] = cluster_info
    environment["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": api_version, "kind": "ExecCredential", "spec": exec_spec}
    )
    if deadline.expired:
        raise ClusterAuthError(f"{prefix}: the deadline of {deadline.seconds:g} s ran out before it could start")
    try:
        # The user's own configured plugin, without a shell, in a session of its own (killable as a group).
        process = subprocess.Popen(
            [command, *[str(a) for a in args]],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        hint = spec.get("installHint")
        suffix = f" ({str(hint).strip().splitlines()[0][:120]})" if hint else ""
        raise ClusterAuthError(
            f"{prefix}: cannot start {Path(command).name}: {error.strerror or type(error).__name__}{suffix}"
        ) from None
    with interrupt.tracked(process):
        try:
            stdout = _read_plugin_output(process, deadline, prefix)
        except BaseException:
            _kill_group(process)  # the cap, the deadline, an interrupt or anything else: the group goes
            raise
        finally:
            _close_pipes(process)
    if process.returncode != 0:
        # stderr is not quoted: a plugin may print anything there, secrets included.
        raise ClusterAuthError(f"{prefix}: exited with status {process.returncode}")
    return _parse_exec_output(stdout, api_version, prefix)


def _read_plugin_output(process: subprocess.Popen[bytes], deadline: Deadline, prefix: str) -> bytes:
    """The plugin's stdout (at most EXEC_OUTPUT_LIMIT bytes), read as it comes until both pipes close and the
    plugin exits, all within the deadline; stderr is read and discarded. Raises ClusterAuthError otherwise."""
    assert process.stdout is not None
    assert process.stderr is not None
    stdout_fd, stderr_fd = process.stdout.fileno(), process.stderr.fileno()
    poller = select.poll()
    open_fds = {stdout_fd, stderr_fd}
    for fd in open_fds:
        os.set_blocking(fd, False)
        poller.register(fd, select.POLLIN | select.POLLPRI)
    chunks: list[bytes] = []
    size = 0
    while open_fds:
        remaining = deadline.remaining()
        if remaining <= 0.0:
            raise _no_credentials_in_time(prefix, deadline)
        for fd, _events in poller.poll(max(1, math.ceil(remaining * 1000))):
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                poller.unregister(fd)
                open_fds.discard(fd)
            elif fd == stdout_fd:
                size += len(data)
                if size > EXEC_OUTPUT_LIMIT:
                    raise ClusterAuthError(
                        f"{prefix}: output larger than {EXEC_OUTPUT_LIMIT} bytes (the plugin was killed)"
                    )
                chunks.append(data)
            # stderr: discarded as it comes (never buffered, never quoted)
    try:
        process.wait(timeout=deadline.remaining())
    except subprocess.TimeoutExpired:
        raise _no_credentials_in_time(prefix, deadline) from None
    return b"".join(chunks)


def _no_credentials_in_time(prefix: str, deadline: Deadline) -> ClusterAuthError:
    return ClusterAuthError(
        f"{prefix}: no credentials within the deadline of {deadline.seconds:g} s (the plugin was killed)"
    )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the plugin's whole session and reap it (never wait on its pipes: a grandchild may hold them)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=1.0)


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def _parse_exec_output(stdout: bytes, api_version: str, prefix: str) -> _Issued:
    if len(stdout) > EXEC_OUTPUT_LIMIT:
        raise ClusterAuthError(f"{prefix}: output larger than {EXEC_OUTPUT_LIMIT} bytes")
    try:
        document = json.loads(stdout)
    except ValueError:
        raise ClusterAuthError(f"{prefix}: output is not an ExecCredential JSON object") from None
    if not isinstance(document, dict) or document.get("kind") != "ExecCredential":
        raise ClusterAuthError(f"{prefix}: output is not an ExecCredential")
    if document.get("apiVersion") != api_version:
        raise ClusterAuthError(f"{prefix}: output apiVersion does not match the requested {api_version}")
    status = document.get("status")
    if not isinstance(status, dict):
        raise ClusterAuthError(f"{prefix}: ExecCredential has no status")
    issued = _Issued()
    token = status.get("token")
    if isinstance(token, str) and token.strip():
        if any(c in token.strip() for c in "\r\n"):
            raise ClusterAuthError(f"{prefix}: the token is not a single line")
        issued.token = token.strip()
        redaction.register(issued.token)
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if isinstance(cert, str) and isinstance(key, str) and cert and key:
        redaction.register(key)
        issued.cert_pem, issued.key_pem = cert.encode(), key.encode()
    return issued


class _CachedToken:
    """Calls `fetch` at most once per `lifetime` seconds; thread-safe for concurrent checks."""

    def __init__(self, fetch: Callable[[], str], lifetime: float) -> None:
        self._fetch, self._lifetime = fetch, lifetime
        self._value: str | None = None
        self._fetched_at = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            if self._value is None or time.monotonic() - self._fetched_at > self._lifetime:
                self._value = self._fetch()
                self._fetched_at = time.monotonic()
            return self._value


def eks_token(cluster_name: str, region: str, role_arn: str | None = None, deadline: Deadline | None = None) -> str:
    """A bearer token exactly as `aws eks get-token` makes it: a presigned STS GetCallerIdentity URL."""
    import boto3
    from botocore.config import Config
    from botocore.signers import RequestSigner

    budget = max(0.1, (deadline or Deadline(DEFAULT_CREDENTIALS_SECONDS)).remaining())
    bounded = Config(connect_timeout=budget, read_timeout=budget, retries={"max_attempts": 1})
    session = boto3.session.Session(region_name=region)
    if role_arn:
        sts_client = session.client("sts", config=bounded)
        assumed = sts_client.assume_role(RoleArn=role_arn, RoleSessionName="outpost")["Credentials"]
        session = boto3.session.Session(
            aws_access_key_id=assumed["AccessKeyId"],
            aws_secret_access_key=assumed["SecretAccessKey"],
            aws_session_token=assumed["SessionToken"],
            region_name=region,
        )
    sts = session.client("sts", region_name=region)
    aws_credentials = session.get_credentials()
    if aws_credentials is None:
        raise ClusterAuthError(f"eks credentials for cluster {cluster_name}: no AWS credentials found")
    signer = RequestSigner(sts.meta.service_model.service_id, region, "sts", "v4", aws_credentials, session.events)
    url = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": f"{sts.meta.endpoint_url}/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {"x-k8s-aws-id": cluster_name},
            "context": {},
        },
        region_name=region,
        expires_in=60,
        operation_name="",
    )
    token = EKS_TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")
    redaction.register(token)
    return token


def _eks_token_source(auth: EksAuth, deadline: Deadline) -> TokenSource:
    def fetch() -> str:
        try:
            return eks_token(auth.cluster_name, auth.region, auth.role_arn, deadline)
        except OutpostError:
            raise
        except Exception as error:  # noqa: BLE001 - the SDK's text can quote a response body: class only
            raise ClusterAuthError(
                f"eks credentials for cluster {auth.cluster_name}: token could not be made ({type(error).__name__})"
            ) from None

    return _CachedToken(fetch, EKS_TOKEN_LIFETIME_SECONDS)


def _gke_token_source(auth: GkeAuth, deadline: Deadline) -> TokenSource:
    import google.auth
    import google.auth.transport.requests

    credentials, _project = google.auth.default(scopes=list(GKE_SCOPES))
    lock = threading.Lock()

    def token() -> str:
        with lock:
            if not credentials.valid:
                request = google.auth.transport.requests.Request()

                def bounded(*args: Any, **kwargs: Any) -> Any:
                    kwargs["timeout"] = max(0.1, deadline.remaining())
                    return request(*args, **kwargs)

                try:
                    credentials.refresh(bounded)  # type: ignore[no-untyped-call]
                except Exception as error:  # noqa: BLE001 - its text quotes the provider's response body
                    raise ClusterAuthError(
                        f"gke credentials: access token refresh failed ({type(error).__name__})"
                    ) from None
            value = str(credentials.token or "")
            redaction.register(value)
            return value

    return token
