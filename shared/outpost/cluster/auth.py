"""Turning a `ClusterAuth` setting into what an HTTPS client needs: server, trust, identity.

Guarantees:
- TLS verification is always on; a kubeconfig that asks for `insecure-skip-tls-verify` is refused;
- tokens are produced lazily and refreshed before they expire (exec plugins, EKS, GKE), and never
  appear in an exception message or a repr;
- everything that can go wrong while obtaining credentials is a `ClusterAuthError` naming the
  auth mode and the cause, so the check reports `error` rather than a crash.
"""

from __future__ import annotations

import base64
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from outpost.config import ClusterAuth, EksAuth, GkeAuth, KubeconfigAuth, TokenAuth
from outpost.errors import ClusterAuthError, OutpostError
from outpost.secrets import resolve

TokenSource = Callable[[], str]

EKS_TOKEN_PREFIX = "k8s-aws-v1."  # noqa: S105 - a format prefix, not a credential
EKS_TOKEN_LIFETIME_SECONDS = 600  # EKS accepts 15 min; refresh well before.
GKE_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


@dataclass
class Credentials:
    """Where the API server is, how to trust it and who we are."""

    server: str
    ssl_context: ssl.SSLContext
    token: TokenSource | None = field(default=None, repr=False)


def build_credentials(auth: ClusterAuth) -> Credentials:
    try:
        if isinstance(auth, KubeconfigAuth):
            return _from_kubeconfig(auth)
        if isinstance(auth, TokenAuth):
            return _from_token(auth)
        if isinstance(auth, EksAuth):
            return Credentials(auth.server, _context_from_ca(ca_data=auth.ca_data), _eks_token_source(auth))
        return Credentials(auth.server, _context_from_ca(ca_data=auth.ca_data), _gke_token_source(auth))
    except OutpostError:
        raise
    except Exception as error:  # noqa: BLE001 - any loader failure means "cannot authenticate"
        raise ClusterAuthError(f"{auth.mode} credentials: {type(error).__name__}: {_first_line(error)}") from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else "no detail"


def _context_from_ca(ca_file: str | None = None, ca_data: str | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if ca_file:
        context.load_verify_locations(cafile=str(Path(ca_file).expanduser()))
    elif ca_data:
        try:
            pem = base64.b64decode(ca_data, validate=True).decode("ascii")
        except ValueError:
            raise ClusterAuthError("ca_data is not base64-encoded PEM") from None
        context.load_verify_locations(cadata=pem)
    return context


def _from_token(auth: TokenAuth) -> Credentials:
    context = _context_from_ca(auth.ca_file, auth.ca_data)
    reference = auth.token

    def token() -> str:
        return resolve(reference).reveal().strip()

    return Credentials(auth.server, context, token)


def _from_kubeconfig(auth: KubeconfigAuth) -> Credentials:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(Path(auth.path).expanduser()) if auth.path else None,
        context=auth.context,
        client_configuration=configuration,
        persist_config=False,
    )
    if not configuration.verify_ssl:
        raise ClusterAuthError(
            "kubeconfig sets insecure-skip-tls-verify; Outpost never turns TLS verification off "
            "(give the cluster's certificate-authority instead)"
        )
    context = _context_from_ca(configuration.ssl_ca_cert)
    if configuration.cert_file and configuration.key_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)

    token_source: TokenSource | None = None
    if _has_token(configuration):

        def token() -> str:
            # The loader installs a refresh hook for exec plugins and expiring tokens. The key's
            # name changed across kubernetes releases ("authorization", then "BearerToken").
            hook = getattr(configuration, "refresh_api_key_hook", None)
            if callable(hook):
                hook(configuration)
            for key in ("BearerToken", "authorization"):
                value = configuration.get_api_key_with_prefix(key)
                if value:
                    return str(value).removeprefix("Bearer ").strip()
            raise ClusterAuthError("kubeconfig user has no usable token")

        token_source = token
    elif not configuration.cert_file and _user_expects_credentials(auth):
        # The loader logs a failed exec plugin and carries on anonymously; we refuse instead, so the
        # cause ("your credential plugin failed") is what the alert says, not a later 401.
        raise ClusterAuthError(
            f"kubeconfig credentials: the user of context {auth.context or '(current)'} has an exec plugin, "
            "auth provider or token file that produced no credentials"
        )
    return Credentials(str(configuration.host).rstrip("/"), context, token_source)


def _user_expects_credentials(auth: KubeconfigAuth) -> bool:
    from kubernetes import config as k8s_config

    config_file = str(Path(auth.path).expanduser()) if auth.path else None
    contexts, current = k8s_config.list_kube_config_contexts(config_file=config_file)  # type: ignore[no-untyped-call]
    chosen = next((c for c in contexts if c.get("name") == auth.context), None) if auth.context else current
    user_name = ((chosen or {}).get("context") or {}).get("user")
    loader = k8s_config.kube_config.KubeConfigMerger(  # type: ignore[no-untyped-call]
        config_file or k8s_config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION
    )
    for entry in loader.config.value.get("users") or []:
        if entry.get("name") == user_name:
            user = entry.get("user") or {}
            return any(key in user for key in ("exec", "auth-provider", "token", "tokenFile"))
    return False


def _has_token(configuration: object) -> bool:
    api_key = getattr(configuration, "api_key", {}) or {}
    return bool(api_key.get("BearerToken") or api_key.get("authorization"))


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


def eks_token(cluster_name: str, region: str, role_arn: str | None = None) -> str:
    """A bearer token exactly as `aws eks get-token` makes it: a presigned STS GetCallerIdentity URL."""
    import boto3
    from botocore.signers import RequestSigner

    session = boto3.session.Session(region_name=region)
    if role_arn:
        assumed = session.client("sts").assume_role(RoleArn=role_arn, RoleSessionName="outpost")["Credentials"]
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
    signer = RequestSigner(
        sts.meta.service_model.service_id, region, "sts", "v4", aws_credentials, session.events
    )
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
    return EKS_TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")


def _eks_token_source(auth: EksAuth) -> TokenSource:
    return _CachedToken(lambda: eks_token(auth.cluster_name, auth.region, auth.role_arn), EKS_TOKEN_LIFETIME_SECONDS)


def _gke_token_source(auth: GkeAuth) -> TokenSource:
    import google.auth
    import google.auth.transport.requests

    credentials, _project = google.auth.default(scopes=list(GKE_SCOPES))
    lock = threading.Lock()

    def token() -> str:
        with lock:
            if not credentials.valid:
                credentials.refresh(google.auth.transport.requests.Request())  # type: ignore[no-untyped-call]
            return str(credentials.token)

    return token

