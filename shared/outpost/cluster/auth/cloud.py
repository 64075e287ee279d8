"""Cloud tokens: EKS (a presigned STS GetCallerIdentity URL, as `aws eks get-token` makes it) and GKE (Google
OAuth access tokens), each call bounded by what is left of the deadline.

A provider's failure becomes a `ClusterAuthError` naming only its class: the SDKs' messages can quote a response
body. Every token is registered for redaction before it is returned.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from typing import Any

from outpost import redaction
from outpost.bounded import Deadline
from outpost.cluster.auth.credentials import DEFAULT_CREDENTIALS_SECONDS, TokenSource
from outpost.config import (
    EksAuth,
    GkeAuth,
)
from outpost.errors import ClusterAuthError, OutpostError

EKS_TOKEN_PREFIX = "k8s-aws-v1."  # noqa: S105 - a format prefix, not a credential
EKS_TOKEN_LIFETIME_SECONDS = 600  # EKS accepts 15 min; refresh well before.
GKE_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


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


def eks_token_source(auth: EksAuth, deadline: Deadline) -> TokenSource:
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


def gke_token_source(auth: GkeAuth, deadline: Deadline) -> TokenSource:
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
