"""The notifier's outside systems, one class each: where the run line is read, where the message goes.

- `CloudWatchLogsSource` (AWS): `FilterLogEvents` on the check's log group (`outpost.deploy.log_group`), a JSON
  filter pattern on the line's `check` and `status`, within the alarm's window; the newest match wins.
- `CloudLoggingSource` (Google Cloud): `entries:list` (Cloud Logging REST v2) with a filter on the check function's
  Cloud Run service and the line's `check` and `status`, newest first, one entry.
- `SnsPublisher` (AWS): `Publish` to the messages topic, with a subject and string message attributes.
- `PubSubPublisher` (Google Cloud): `topics.publish` (Pub/Sub REST v1), the body as `data`, with attributes.
Each call is bounded by its budget (`outpost.deploy.NOTIFIER_READ_SECONDS`, `NOTIFIER_PUBLISH_SECONDS`): botocore's
connect and read timeouts and one attempt, or an httpx client over `outpost.bounded.bounded_transport`. Every
failure is a `ReportError` naming the system and the cause (an error code, an HTTP status, an exception's class),
never a token or a response body.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import httpx

from outpost.bounded import BodyRefused, Deadline, bearer_post, https_or_loopback, read_body
from outpost.deploy import NOTIFIER_PUBLISH_SECONDS, NOTIFIER_READ_SECONDS, function_name, log_group
from outpost.errors import OutpostError, ReportError
from outpost.notify.message import Message

LOGGING_ENDPOINT_ENV: Final = "OUTPOST_LOGGING_ENDPOINT"
PUBSUB_ENDPOINT_ENV: Final = "OUTPOST_PUBSUB_ENDPOINT"
LOGGING_ENDPOINT: Final = "https://logging.googleapis.com"
PUBSUB_ENDPOINT: Final = "https://pubsub.googleapis.com"
MAX_PAGES: Final = 10
"""FilterLogEvents pages read at most (a window holds a few runs' lines; an endless nextToken is not followed)."""
MAX_ANSWER_BYTES: Final = 1024 * 1024
"""Largest Cloud Logging or Pub/Sub answer read (one entry, or the published message's id)."""
_SCOPES: Final = ("https://www.googleapis.com/auth/cloud-platform",)

RunLineDocument = str | Mapping[str, Any]
"""A run line as a source found it: CloudWatch's message text, or Cloud Logging's `jsonPayload`."""


class RunLineSource(Protocol):
    """The newest run line of `check` with `status` written between `start` and `end`; None when there is none;
    ReportError when it could not be read."""

    def latest(self, check: str, status: str, start: dt.datetime, end: dt.datetime) -> RunLineDocument | None: ...

    def where(self, check: str) -> str:
        """Where the lines of `check` are read, for the message that says none was found."""
        ...


class Publisher(Protocol):
    """Publishes one message; the system's id of it, or ReportError."""

    def publish(self, message: Message) -> str: ...


def _millis(at: dt.datetime) -> int:
    return int(at.timestamp() * 1000)


def _aws_client(service: str, timeout: float) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=max(0.1, timeout),
        read_timeout=max(0.1, timeout),
        retries={"max_attempts": 1, "mode": "standard"},
    )
    return boto3.client(service, config=config)  # type: ignore[call-overload]


def _aws_failure(what: str, service: str, error: Exception) -> ReportError:
    from botocore.exceptions import ClientError, NoCredentialsError, NoRegionError

    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "unknown")
        return ReportError(f"{what}: {service} answered {code}")
    if isinstance(error, NoCredentialsError):
        return ReportError(f"{what}: no AWS credentials")
    if isinstance(error, NoRegionError):
        return ReportError(f"{what}: no AWS region")
    return ReportError(f"{what}: {service} unreachable ({type(error).__name__})")


class CloudWatchLogsSource:
    """The run lines of a stage's checks in CloudWatch Logs (`client`: a boto3 `logs` client, or one made on first
    use with the read budget and one attempt)."""

    def __init__(self, environment: str, client: Any = None, timeout_seconds: float = NOTIFIER_READ_SECONDS) -> None:
        self.environment = environment
        self._client = client
        self._timeout = timeout_seconds

    def where(self, check: str) -> str:
        return f"CloudWatch Logs group {log_group(self.environment, check)}"

    def latest(self, check: str, status: str, start: dt.datetime, end: dt.datetime) -> RunLineDocument | None:
        from botocore.exceptions import BotoCoreError, ClientError

        what = f"reading {check}'s run lines"
        deadline = Deadline(self._timeout)
        # Both names are [a-z0-9-] (`CHECK_NAME_PATTERN`, the outcomes): nothing a filter pattern reads specially.
        pattern = f'{{ ($.check = "{check}") && ($.status = "{status}") && ($.environment = "{self.environment}") }}'
        request: dict[str, Any] = {
            "logGroupName": log_group(self.environment, check),
            "startTime": _millis(start),
            "endTime": _millis(end),
            "filterPattern": pattern,
        }
        newest: tuple[int, str] | None = None
        try:
            client = self._client if self._client is not None else _aws_client("logs", self._timeout)
            for _page in range(MAX_PAGES):
                if deadline.expired:
                    raise ReportError(f"{what}: CloudWatch Logs took longer than {self._timeout:g}s")
                answer = client.filter_log_events(**request)
                for event in answer.get("events", []):
                    stamp, text = event.get("timestamp"), event.get("message")
                    if isinstance(stamp, int) and isinstance(text, str) and (newest is None or stamp >= newest[0]):
                        newest = (stamp, text)
                token = answer.get("nextToken")
                if not isinstance(token, str) or not token:
                    break
                request["nextToken"] = token
        except (ClientError, BotoCoreError) as error:
            raise _aws_failure(what, "CloudWatch Logs FilterLogEvents", error) from None
        return newest[1] if newest is not None else None


class SnsPublisher:
    """Publishes to an SNS topic (`client`: a boto3 `sns` client, or one made on first use)."""

    def __init__(self, topic_arn: str, client: Any = None, timeout_seconds: float = NOTIFIER_PUBLISH_SECONDS) -> None:
        self.topic_arn = topic_arn
        self._client = client
        self._timeout = timeout_seconds

    def publish(self, message: Message) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        what = f"publishing to {self.topic_arn}"
        if not self.topic_arn.startswith("arn:") or ":sns:" not in self.topic_arn:
            raise ReportError(f"{what}: not an SNS topic ARN")
        try:
            client = self._client if self._client is not None else _aws_client("sns", self._timeout)
            answer = client.publish(
                TopicArn=self.topic_arn,
                Subject=message.subject,
                Message=message.body,
                MessageAttributes={
                    key: {"DataType": "String", "StringValue": value} for key, value in message.attributes.items()
                },
            )
        except (ClientError, BotoCoreError) as error:
            raise _aws_failure(what, "SNS Publish", error) from None
        message_id = answer.get("MessageId") if isinstance(answer, dict) else None
        if not isinstance(message_id, str):
            raise ReportError(f"{what}: SNS Publish answered without a MessageId")
        return message_id


AccessToken = Callable[[float], str]
"""timeout -> an OAuth2 access token of the runtime identity (scope cloud-platform)."""


def google_access_token(timeout: float) -> str:
    """The runtime identity's access token, from application default credentials (on Cloud Functions, the metadata
    server), its token request bounded by `timeout`."""
    import google.auth
    import google.auth.transport.requests

    class _Bounded(google.auth.transport.requests.Request):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            kwargs["timeout"] = timeout
            return super().__call__(*args, **kwargs)  # type: ignore[no-untyped-call]

    credentials, _project = google.auth.default(scopes=list(_SCOPES))
    credentials.refresh(_Bounded())  # type: ignore[no-untyped-call]
    token = credentials.token
    if not isinstance(token, str) or not token:
        raise ReportError("no access token was issued")
    return token


def _endpoint(variable: str, default: str) -> str:
    """The REST endpoint: https, or plain http to loopback only (tests' stand-ins)."""
    url = os.environ.get(variable, default).rstrip("/")
    if https_or_loopback(url):
        return url
    raise ReportError(f"${variable} must be an https:// URL (plain http to loopback only)")


class _GoogleRest:
    """One bounded JSON request to a Google REST API with the runtime identity's access token."""

    def __init__(
        self, system: str, token: AccessToken, timeout_seconds: float, transport: httpx.BaseTransport | None
    ) -> None:
        self.system = system
        self._token = token
        self._timeout = timeout_seconds
        self._transport = transport

    def post(self, what: str, url: str, document: dict[str, Any]) -> Any:
        deadline = Deadline(self._timeout)
        try:
            token = self._token(self._timeout)
        except OutpostError as error:
            raise ReportError(f"{what}: no access token ({error})") from None
        except Exception as error:  # noqa: BLE001 - google-auth's messages may quote a token endpoint's body
            raise ReportError(f"{what}: no access token ({type(error).__name__})") from None
        try:
            with bearer_post(url, document, token, deadline, self._transport) as answer:
                body = read_body(
                    answer, cap=MAX_ANSWER_BYTES, cap_setting="the notifier's answer cap", deadline=deadline
                )
                status = answer.status_code
        except httpx.TimeoutException:
            raise ReportError(f"{what}: {self.system} timed out after {self._timeout:g}s") from None
        except httpx.TransportError as error:
            raise ReportError(f"{what}: {self.system} unreachable ({type(error).__name__})") from None
        except BodyRefused as error:
            raise ReportError(f"{what}: {self.system}'s answer refused ({error.reason})") from None
        if status != 200:
            raise ReportError(f"{what}: {self.system} answered HTTP {status}{_google_reason(body)}")
        try:
            return json.loads(body)
        except ValueError:
            raise ReportError(f"{what}: {self.system}'s answer is not JSON") from None


def _google_reason(body: bytes) -> str:
    # Google's error body carries a status word (PERMISSION_DENIED, NOT_FOUND) that names the cause.
    try:
        status = json.loads(body)["error"]["status"]
    except (ValueError, KeyError, TypeError):
        return ""
    return f" ({status})" if isinstance(status, str) and status.isupper() and len(status) <= 40 else ""


class CloudLoggingSource:
    """The run lines of a stage's check functions in Cloud Logging (the project's `_Default` bucket)."""

    def __init__(
        self,
        project: str | None,
        environment: str,
        token: AccessToken = google_access_token,
        timeout_seconds: float = NOTIFIER_READ_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.project = project
        self.environment = environment
        self._rest = _GoogleRest("Cloud Logging entries:list", token, timeout_seconds, transport)

    def where(self, check: str) -> str:
        return f"Cloud Logging, service {function_name(self.environment, check)}"

    def latest(self, check: str, status: str, start: dt.datetime, end: dt.datetime) -> RunLineDocument | None:
        what = f"reading {check}'s run lines"
        if not self.project:
            raise ReportError(f"{what}: no Google Cloud project (deploy.project)")
        stamp = "%Y-%m-%dT%H:%M:%SZ"
        # Every value is [a-z0-9-] or a timestamp: nothing the logging query language reads specially.
        query = " AND ".join(
            [
                'resource.type="cloud_run_revision"',
                f'resource.labels.service_name="{function_name(self.environment, check)}"',
                f'jsonPayload.environment="{self.environment}"',
                f'jsonPayload.check="{check}"',
                f'jsonPayload.status="{status}"',
                f'timestamp>="{start.astimezone(dt.UTC).strftime(stamp)}"',
                f'timestamp<="{end.astimezone(dt.UTC).strftime(stamp)}"',
            ]
        )
        document = {
            "resourceNames": [f"projects/{self.project}"],
            "filter": query,
            "orderBy": "timestamp desc",
            "pageSize": 1,
        }
        answer = self._rest.post(what, f"{_endpoint(LOGGING_ENDPOINT_ENV, LOGGING_ENDPOINT)}/v2/entries:list", document)
        entries = answer.get("entries", []) if isinstance(answer, dict) else None
        if not isinstance(entries, list):
            raise ReportError(f"{what}: Cloud Logging's answer has no entries list")
        if not entries:
            return None
        payload = entries[0].get("jsonPayload") if isinstance(entries[0], dict) else None
        if not isinstance(payload, dict):
            raise ReportError(f"{what}: the newest entry has no jsonPayload")
        return payload


class PubSubPublisher:
    """Publishes to a Pub/Sub topic (`projects/P/topics/T`)."""

    def __init__(
        self,
        topic: str,
        token: AccessToken = google_access_token,
        timeout_seconds: float = NOTIFIER_PUBLISH_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.topic = topic
        self._rest = _GoogleRest("Pub/Sub publish", token, timeout_seconds, transport)

    def publish(self, message: Message) -> str:
        what = f"publishing to {self.topic}"
        if not self.topic.startswith("projects/") or "/topics/" not in self.topic:
            raise ReportError(f"{what}: not a Pub/Sub topic id (projects/P/topics/T)")
        attributes = {"subject": message.subject, **message.attributes}
        document = {
            "messages": [{"data": base64.b64encode(message.body.encode("utf-8")).decode(), "attributes": attributes}]
        }
        answer = self._rest.post(
            what, f"{_endpoint(PUBSUB_ENDPOINT_ENV, PUBSUB_ENDPOINT)}/v1/{self.topic}:publish", document
        )
        ids = answer.get("messageIds") if isinstance(answer, dict) else None
        if not isinstance(ids, list) or not ids or not isinstance(ids[0], str):
            raise ReportError(f"{what}: Pub/Sub answered without a message id")
        return ids[0]
