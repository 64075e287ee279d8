"""An alarm's state change as each cloud delivers it (`outpost.notify.events`), from the documented payloads.

AWS: the Lambda action payloads of docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-actions-
Lambda.html (a metric alarm's, a composite alarm's), with this stage's alarm names. Google Cloud: the Pub/Sub
notification of docs.cloud.google.com/monitoring/support/notification-options (schema 1.2), inside the Pub/Sub
CloudEvent's `data`. A malformed one is an InvocationError naming the field.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
from typing import Any

import pytest

from outpost.config import Settings
from outpost.errors import InvocationError
from outpost.notify.events import from_cloudwatch, from_incident

SETTINGS = Settings.model_validate(
    {
        "environment": "prod",
        "cluster": {"name": "prod-eu", "auth": {"mode": "token", "server": "https://k", "token": "env:T"}},
        "messages": {"enabled": True},
        "checks": {"apiserver-health": {}, "koord-webhook": {}, "koordlet-coverage": {"enabled": False}},
    }
)

METRIC_ALARM: dict[str, Any] = {
    "source": "aws.cloudwatch",
    "alarmArn": "arn:aws:cloudwatch:eu-west-1:444455556666:alarm:outpost-prod-apiserver-health-failed",
    "accountId": "444455556666",
    "time": "2023-08-04T12:36:15.490+0000",
    "region": "eu-west-1",
    "alarmData": {
        "alarmName": "outpost-prod-apiserver-health-failed",
        "state": {
            "value": "ALARM",
            "reason": "Threshold Crossed: 3 out of the last 3 datapoints were greater than or equal to the threshold",
            "reasonData": '{"version":"1.0","queryDate":"2023-08-04T12:36:15.488+0000"}',
            "timestamp": "2023-08-04T12:36:15.490+0000",
        },
        "previousState": {
            "value": "OK",
            "reason": "Threshold Crossed",
            "timestamp": "2023-08-04T12:20:15.490+0000",
        },
        "configuration": {
            "description": "Outpost check apiserver-health (prod, cluster prod-eu) failed 3 runs in a row; pages",
            "metrics": [
                {
                    "id": "1234e046-06f0-a3da-9534-EXAMPLEe4c",
                    "metricStat": {
                        "metric": {
                            "namespace": "Outpost",
                            "name": "Failed",
                            "dimensions": {"environment": "prod", "check": "apiserver-health"},
                        },
                        "period": 60,
                        "stat": "Maximum",
                    },
                    "returnData": True,
                }
            ],
        },
    },
}
COMPOSITE_ALARM: dict[str, Any] = {
    "source": "aws.cloudwatch",
    "alarmArn": "arn:aws:cloudwatch:eu-west-1:444455556666:alarm:outpost-prod-koord-webhook-error-alert",
    "accountId": "444455556666",
    "time": "2023-08-04T12:56:46.138+0000",
    "region": "eu-west-1",
    "alarmData": {
        "alarmName": "outpost-prod-koord-webhook-error-alert",
        "state": {
            "value": "OK",
            "reason": "arn:aws:cloudwatch:eu-west-1:444455556666:alarm:outpost-prod-koord-webhook-error "
            "transitioned to OK at Friday 04 August, 2023 12:54:46 UTC",
            "reasonData": "{}",
            "timestamp": "2023-08-04T12:56:46.138+0000",
        },
        "previousState": {"value": "ALARM", "reason": "...", "timestamp": "2023-08-04T12:54:46.138+0000"},
        "configuration": {
            "alarmRule": 'ALARM("outpost-prod-koord-webhook-error")',
            "actionsSuppressor": "outpost-prod-koord-webhook-held",
            "actionsSuppressorWaitPeriod": 180,
            "actionsSuppressorExtensionPeriod": 300,
        },
    },
}


def incident(**changes: Any) -> dict[str, Any]:
    """A schema 1.2 notification of this stage's policy, as Cloud Monitoring publishes it."""
    body: dict[str, Any] = {
        "version": "1.2",
        "incident": {
            "incident_id": "0.opqiw61fsv7p",
            "scoping_project_id": "outpost-example",
            "scoping_project_number": 12345,
            "url": "https://console.cloud.google.com/monitoring/alerting/incidents/0.opqiw61fsv7p?project=outpost-example",
            "started_at": 1577840461,
            "ended_at": 1577877071,
            "state": "closed",
            "resource_id": "",
            "resource_name": "outpost-example outpost-prod-apiserver-health",
            "resource_display_name": "outpost-prod-apiserver-health",
            "resource_type_display_name": "Cloud Run Revision",
            "resource": {"type": "cloud_run_revision", "labels": {"project_id": "outpost-example"}},
            "metric": {
                "type": "logging.googleapis.com/user/outpost/prod/runs",
                "displayName": "Outpost prod check runs",
                "labels": {"check": "apiserver-health", "status": "failed"},
            },
            "metadata": {"system_labels": {}, "user_labels": {}},
            "policy_name": "outpost-prod-apiserver-health-failed",
            "policy_user_labels": {"service": "outpost", "environment": "prod"},
            "documentation": {"content": "Outpost check apiserver-health ...", "mime_type": "text/markdown"},
            "condition": {"name": "projects/outpost-example/alertPolicies/1/conditions/2", "displayName": "x"},
            "condition_name": "Outpost check apiserver-health (prod, cluster prod-eu) failed 3 runs in a row",
            "threshold_value": "2",
            "observed_value": "3.000",
            "summary": "Outpost prod check runs for outpost-example with metric labels {check=apiserver-health}",
        },
    }
    body["incident"].update(changes)
    return body


def envelope(document: Any, raw: bytes | None = None) -> dict[str, Any]:
    """The `data` of a `google.cloud.pubsub.topic.v1.messagePublished` CloudEvent carrying `document`."""
    data = raw if raw is not None else json.dumps(document).encode()
    return {
        "message": {
            "data": base64.b64encode(data).decode(),
            "messageId": "2070443601311540",
            "publishTime": "2020-01-01T01:01:01.000Z",
        },
        "subscription": "projects/outpost-example/subscriptions/eventarc-europe-west1-outpost-prod-notifier-000",
    }


@pytest.mark.parametrize(
    ("event", "check", "rule", "state", "at"),
    [
        (METRIC_ALARM, "apiserver-health", "failed", "ALARM", dt.datetime(2023, 8, 4, 12, 36, 15, 490000, dt.UTC)),
        (COMPOSITE_ALARM, "koord-webhook", "error", "OK", dt.datetime(2023, 8, 4, 12, 56, 46, 138000, dt.UTC)),
    ],
    ids=["metric alarm", "held-back composite alarm"],
)
def test_a_cloudwatch_alarms_lambda_action_gives_its_check_rule_state_and_time(
    event: dict[str, Any], check: str, rule: str, state: str, at: dt.datetime
) -> None:
    facts = from_cloudwatch(SETTINGS, event)
    assert facts is not None
    assert (facts.environment, facts.check, facts.rule, facts.state, facts.at) == ("prod", check, rule, state, at)
    assert facts.alarm == event["alarmData"]["alarmName"]


def test_insufficient_data_is_no_change_of_ours() -> None:
    event = copy.deepcopy(METRIC_ALARM)
    event["alarmData"]["state"]["value"] = "INSUFFICIENT_DATA"
    assert from_cloudwatch(SETTINGS, event) is None


def _changed(path: str, value: Any) -> dict[str, Any]:
    event = copy.deepcopy(METRIC_ALARM)
    *parents, last = path.split(".")
    target = event
    for part in parents:
        target = target[part]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return event


@pytest.mark.parametrize(
    ("event", "named"),
    [
        (_changed("source", "aws.events"), "source"),
        (_changed("alarmData.alarmName", KeyError), "alarmData.alarmName"),
        (_changed("alarmData.state.value", "BROKEN"), "alarmData.state.value"),
        (_changed("alarmData.state.timestamp", "yesterday"), "alarmData.state.timestamp"),
        (_changed("alarmData.alarmName", "outpost-staging-apiserver-health-failed"), "not a check alarm"),
        (_changed("alarmData.alarmName", "outpost-prod-eu-apiserver-health-failed"), "not a check alarm"),
        (_changed("alarmData.alarmName", "outpost-prod-apiserver-health-held"), "not a check alarm"),
        (_changed("alarmData.alarmName", "outpost-prod-koordlet-coverage-failed"), "not enabled"),
        ("a string", "(event)"),
        ({"x": "y" * 300_000}, "(event)"),
    ],
    ids=[
        "another-source",
        "no-alarm-name",
        "unknown-state",
        "bad-timestamp",
        "another-stage",
        "a-stage-sharing-the-prefix",
        "the-suppressor",
        "disabled-check",
        "not-an-object",
        "too-large",
    ],
)
def test_a_malformed_or_foreign_cloudwatch_event_is_refused_naming_the_field(event: Any, named: str) -> None:
    with pytest.raises(InvocationError, match="CloudWatch alarm event refused") as raised:
        from_cloudwatch(SETTINGS, event)
    assert named in str(raised.value)


@pytest.mark.parametrize(
    ("changes", "state", "at"),
    [
        ({"state": "open", "ended_at": None}, "ALARM", dt.datetime.fromtimestamp(1577840461, dt.UTC)),
        ({"state": "closed"}, "OK", dt.datetime.fromtimestamp(1577877071, dt.UTC)),
    ],
    ids=["opened", "closed"],
)
def test_a_cloud_monitoring_incident_gives_its_policys_check_rule_state_and_time(
    changes: dict[str, Any], state: str, at: dt.datetime
) -> None:
    facts = from_incident(SETTINGS, envelope(incident(**changes)))
    assert (facts.check, facts.rule, facts.state, facts.at) == ("apiserver-health", "failed", state, at)
    assert facts.alarm == "outpost-prod-apiserver-health-failed"


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"subscription": "s"}, "message"),
        ({"message": {"data": "%%% not base64"}}, "message.data"),
        (envelope(None, raw=b"\xff not json"), "message.data"),
        (envelope({**incident(), "version": "1.1"}), "version"),
        (envelope(incident(state="acknowledged")), "incident.state"),
        (envelope(incident(started_at="yesterday")), "incident.started_at"),
        (envelope({"version": "1.2"}), "incident"),
        (envelope(incident(policy_name="someone-elses-policy")), "not a check alarm"),
        (envelope(incident(started_at=10**20, state="open")), "not a time"),
    ],
    ids=[
        "no-message",
        "not-base64",
        "not-json",
        "another-schema-version",
        "unknown-state",
        "bad-time",
        "no-incident",
        "foreign-policy",
        "time-out-of-range",
    ],
)
def test_a_malformed_or_foreign_incident_is_refused_naming_the_field(data: Any, named: str) -> None:
    with pytest.raises(InvocationError, match="Pub/Sub incident notification refused") as raised:
        from_incident(SETTINGS, data)
    assert named in str(raised.value)
