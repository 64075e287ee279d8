"""The seam a failing parent's run asks the inhibitor through: one `send(request)`, three transports.

- `LocalSender`: a direct call to `inhibitor.handle` in this process (`outpost run`, tests); the process holds
  the API key, as `outpost maintenance` does on the operator's machine.
- `LambdaSender` (AWS): an asynchronous invocation (`InvocationType=Event`) of the stage's inhibitor function,
  which alone may read the key; accepted is HTTP 202, the windows are the inhibitor's to open.
- `HttpSender` (Cloud Functions): a POST of the request to the inhibitor's URI with the runtime identity's
  Google ID token (audience: the URI), as Cloud Scheduler calls the checks; 2xx means the windows are open.
Every failure is a `ReportError` naming the transport and its cause, never a token or a key: the caller records
it and goes on, and the dependants, unheld, alert as they would without hold-back.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

import httpx

from outpost.bounded import Deadline, bearer_post, https_or_loopback
from outpost.config import Settings
from outpost.deploy import function_name
from outpost.errors import InvocationError, OutpostError, ReportError
from outpost.heartbeat import worst_case_seconds
from outpost.holdback import inhibitor
from outpost.holdback.decision import INHIBITOR, HoldRequest
from outpost.windows import Connect

INHIBITOR_URL_ENV = "OUTPOST_INHIBITOR_URL"
"""Set on every check function by infra/gcp: the inhibitor function's URI (its `url` output, in the same apply)."""

SEND_TIMEOUT_SECONDS = 10.0
"""A hold request's budget at most: one asynchronous invocation, or one HTTP request the inhibitor answers once
its windows are open. A failing run does not ping, so it is spent within the heartbeat's budget (`sender_for`)."""


class HoldSender(Protocol):
    """Asks the inhibitor to hold a failing parent's dependants; a one-line account, or ReportError."""

    def send(self, request: HoldRequest) -> str: ...


class LocalSender:
    """The inhibitor called in process, with this process's settings (and so its API key)."""

    def __init__(self, settings: Settings, connect: Connect | None = None) -> None:
        self._settings = settings
        self._connect = connect

    def send(self, request: HoldRequest) -> str:
        try:
            outcome = inhibitor.handle(self._settings, request.model_dump(), connect=self._connect, log=False)
        except InvocationError as error:
            raise ReportError(str(error)) from None
        held = outcome["held"]
        if not held:
            return "no enabled dependant has a monitor to hold"
        return "held back " + ", ".join(f"{item['check']} {item['minutes']} min" for item in held)


class LambdaSender:
    """An asynchronous invocation of the stage's inhibitor Lambda (`client`: a boto3 Lambda client, or one made
    on first use with short timeouts and no SDK retries)."""

    def __init__(self, function: str, client: Any = None, timeout_seconds: float = SEND_TIMEOUT_SECONDS) -> None:
        self.function = function
        self._client = client
        self._timeout = timeout_seconds

    def send(self, request: HoldRequest) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        what = f"hold request to {self.function}"
        try:
            client = self._client if self._client is not None else _lambda_client(self._timeout)
            answer = client.invoke(
                FunctionName=self.function, InvocationType="Event", Payload=request.model_dump_json().encode()
            )
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "unknown")
            raise ReportError(f"{what}: lambda Invoke failed ({code})") from None
        except BotoCoreError as error:
            raise ReportError(f"{what}: lambda unreachable ({type(error).__name__})") from None
        status = answer.get("StatusCode") if isinstance(answer, dict) else None
        if status != 202:
            raise ReportError(f"{what}: lambda Invoke answered {status} (202 accepts an asynchronous invocation)")
        return f"asked {self.function} (asynchronous invocation accepted)"


def _lambda_client(timeout_seconds: float) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=timeout_seconds, read_timeout=timeout_seconds, retries={"max_attempts": 1, "mode": "standard"}
    )
    return boto3.client("lambda", config=config)


IdToken = Callable[[str], str]
"""audience -> a Google ID token for it."""


def google_id_token(audience: str) -> str:
    """The runtime identity's ID token for `audience`, from application default credentials (on Cloud Functions,
    the metadata server)."""
    import google.auth.transport.requests
    import google.oauth2.id_token

    request = google.auth.transport.requests.Request()
    token = google.oauth2.id_token.fetch_id_token(request, audience)  # type: ignore[no-untyped-call]
    if not isinstance(token, str) or not token:
        raise ReportError("no ID token was issued")
    return token


class HttpSender:
    """A POST to the inhibitor's URI with an ID token whose audience is that URI."""

    def __init__(
        self,
        url: str,
        id_token: IdToken = google_id_token,
        timeout_seconds: float = SEND_TIMEOUT_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not https_or_loopback(url):
            raise ValueError("the inhibitor URL must be https:// (plain http to loopback only)")
        self.url = url
        self._id_token = id_token
        self._timeout = timeout_seconds
        self._transport = transport

    def send(self, request: HoldRequest) -> str:
        what = "hold request to the inhibitor"
        deadline = Deadline(self._timeout)
        try:
            token = self._id_token(self.url)
        except OutpostError as error:
            raise ReportError(f"{what}: no ID token ({error})") from None
        except Exception as error:  # noqa: BLE001 - google-auth's messages may quote a token endpoint's body
            raise ReportError(f"{what}: no ID token ({type(error).__name__})") from None
        try:
            with bearer_post(self.url, request.model_dump(), token, deadline, self._transport) as answer:
                status = answer.status_code
        except httpx.TimeoutException:
            raise ReportError(f"{what}: timed out after {self._timeout:g}s") from None
        except httpx.TransportError as error:
            raise ReportError(f"{what}: connection failed ({type(error).__name__})") from None
        if not 200 <= status < 300:
            raise ReportError(f"{what}: HTTP {status} (the dependants are not held back)")
        return f"the inhibitor held the dependants (HTTP {status})"


def sender_for(
    settings: Settings, platform: Literal["aws", "gcf", "local"], environ: Mapping[str, str] = os.environ
) -> HoldSender | None:
    """The seam a run of `settings` asks through on `platform`, or None when hold-back is off (or, on Cloud
    Functions, no inhibitor URI is known: `hold_back.inhibitor_url`, else `$OUTPOST_INHIBITOR_URL`, which
    infra/gcp sets)."""
    if not settings.hold_back.enabled:
        return None
    # A failing run does not ping: the heartbeat's budget, already in the function timeout, is the request's.
    beat = settings.heartbeat
    budget = min(SEND_TIMEOUT_SECONDS, worst_case_seconds(beat.timeout_seconds, beat.retries, beat.backoff_seconds))
    if platform == "aws":
        return LambdaSender(function_name(settings.environment, INHIBITOR), timeout_seconds=budget)
    if platform == "gcf":
        url = settings.hold_back.inhibitor_url or environ.get(INHIBITOR_URL_ENV)
        if not url:  # nothing holds back: every monitor alerts as without hold-back (the cold start says so)
            return None
        return HttpSender(url, timeout_seconds=budget)
    return LocalSender(settings)
