"""An alarm's state change as each cloud delivers it to the notifier, parsed into `AlarmFacts` at the edge.

- AWS: the event of a CloudWatch alarm's Lambda action, metric or composite alarm alike (docs.aws.amazon.com/
  AmazonCloudWatch/latest/monitoring/alarms-and-actions-Lambda.html, its example payloads: `source`
  `aws.cloudwatch`, `alarmArn`, `accountId`, `time`, `region`, `alarmData` with `alarmName`, `state` {`value`,
  `reason`, `timestamp`} and `previousState`). Composite alarms take Lambda actions too (API_PutCompositeAlarm:
  "Composite alarms can take the following actions: Notify Amazon SNS topics. Invoke Lambda functions. ...").
- Google Cloud: a Cloud Monitoring Pub/Sub notification (docs.cloud.google.com/monitoring/support/
  notification-options, "Pub/Sub", schema version 1.2: `{"version": "1.2", "incident": {"incident_id", "policy_name",
  "state": "open"|"closed", "started_at", "ended_at", ...}}`), delivered to the function as the `data` of a Pub/Sub
  CloudEvent (`google.cloud.pubsub.topic.v1.messagePublished`: `{"message": {"data": base64, ...}}`).

The alarm's name (the policy's display name) says the check and the rule (`outpost.deploy.alarm_of`); one that is
not this environment's, a check it does not enable, a state that is no change of ours (INSUFFICIENT_DATA) or a
field of the wrong shape is an `InvocationError` naming the field: never a message of garbage.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from outpost.config import Settings
from outpost.deploy import alarm_of
from outpost.errors import InvocationError
from outpost.notify.message import AlarmFacts, State

MAX_EVENT_BYTES = 256 * 1024
"""Largest event accepted (a CloudWatch alarm event carries its metrics' configuration: a few KiB)."""


class _Event(BaseModel):
    # The clouds add fields over time; what is not read is ignored rather than refused.
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class _AlarmState(_Event):
    value: Literal["OK", "ALARM", "INSUFFICIENT_DATA"]
    reason: StrictStr = ""
    timestamp: dt.datetime


class _AlarmData(_Event):
    alarm_name: StrictStr = Field(alias="alarmName", min_length=1, max_length=255)
    state: _AlarmState
    previous_state: _AlarmState | None = Field(None, alias="previousState")


class CloudWatchAlarmEvent(_Event):
    """A CloudWatch alarm's Lambda action."""

    source: Literal["aws.cloudwatch"]
    alarm_arn: StrictStr = Field(alias="alarmArn")
    account_id: StrictStr = Field(alias="accountId")
    time: dt.datetime
    region: StrictStr
    alarm_data: _AlarmData = Field(alias="alarmData")


class _Incident(_Event):
    incident_id: StrictStr
    policy_name: StrictStr = Field(min_length=1, max_length=512)
    state: Literal["open", "closed"]
    started_at: StrictInt
    ended_at: StrictInt | None = None
    summary: StrictStr = ""
    url: StrictStr = ""


class IncidentNotification(_Event):
    """A Cloud Monitoring Pub/Sub notification (schema 1.2)."""

    version: Literal["1.2"]
    incident: _Incident


class _PubSubMessage(_Event):
    data: StrictStr
    attributes: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    message_id: StrictStr = Field("", alias="messageId")


class PubSubEnvelope(_Event):
    """The `data` of a `google.cloud.pubsub.topic.v1.messagePublished` CloudEvent."""

    message: _PubSubMessage
    subscription: StrictStr = ""


def _validated(model: type[BaseModel], document: object, what: str) -> Any:
    try:
        return model.model_validate(document)
    except ValidationError as error:
        item = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in item["loc"]) or "(event)"
        raise InvocationError(f"{what} refused: {where}: {item['msg']}") from None


def _facts(settings: Settings, name: str, state: State, at: dt.datetime, what: str) -> AlarmFacts:
    found = alarm_of(settings.environment, name)
    if found is None:
        raise InvocationError(
            f"{what} refused: alarm {name[:255]!r} is not a check alarm of environment {settings.environment!r}"
        )
    check, rule = found
    configured = settings.checks.get(check)
    if configured is None or not configured.enabled:
        raise InvocationError(f"{what} refused: check {check} is not enabled in environment {settings.environment!r}")
    if at.tzinfo is None:
        at = at.replace(tzinfo=dt.UTC)
    return AlarmFacts(settings.environment, check, rule, state, at, name)


def from_cloudwatch(settings: Settings, event: object) -> AlarmFacts | None:
    """The facts of a CloudWatch alarm's Lambda action; None for INSUFFICIENT_DATA (no alarm of ours acts on it,
    so it tells nothing to do); InvocationError naming the field otherwise."""
    what = "CloudWatch alarm event"
    _bounded(event, what)
    parsed: CloudWatchAlarmEvent = _validated(CloudWatchAlarmEvent, event, what)
    data = parsed.alarm_data
    if data.state.value == "INSUFFICIENT_DATA":
        return None
    return _facts(settings, data.alarm_name, data.state.value, data.state.timestamp, what)


def from_incident(settings: Settings, envelope: object) -> AlarmFacts:
    """The facts of a Cloud Monitoring incident's Pub/Sub notification, given the CloudEvent's `data` (the Pub/Sub
    envelope); InvocationError naming the field otherwise."""
    what = "Pub/Sub incident notification"
    _bounded(envelope, what)
    message: PubSubEnvelope = _validated(PubSubEnvelope, envelope, what)
    try:
        document = json.loads(base64.b64decode(message.message.data, validate=True))
    except (binascii.Error, ValueError):
        raise InvocationError(f"{what} refused: message.data: not base64 of a JSON document") from None
    notification: IncidentNotification = _validated(IncidentNotification, document, what)
    incident = notification.incident
    closed = incident.state == "closed"
    seconds = incident.ended_at if closed and incident.ended_at else incident.started_at
    try:
        at = dt.datetime.fromtimestamp(seconds, dt.UTC)
    except (OverflowError, OSError, ValueError):
        raise InvocationError(f"{what} refused: incident.started_at/ended_at: not a time") from None
    return _facts(settings, incident.policy_name, "OK" if closed else "ALARM", at, what)


def _bounded(document: object, what: str) -> None:
    try:
        size = len(json.dumps(document, default=str))
    except (TypeError, ValueError):
        raise InvocationError(f"{what} refused: (event): not a JSON document") from None
    if size > MAX_EVENT_BYTES:
        raise InvocationError(f"{what} refused: (event): {size} bytes, over {MAX_EVENT_BYTES}")
