"""The notifier's functions end to end over their seams, with the vendors' own test doubles only.

AWS: the Lambda handler (`functions/notifier/main.py`'s `make_notifier_handler`) with real boto3 clients behind
botocore's Stubber: `FilterLogEvents` answers with run lines as a check writes them, `Publish` is checked for what it
carries. Google Cloud: the entry point `notifier` of the generated main.py, served by functions-framework's own
`create_app` (a CloudEvent function), its CloudEvent posted in binary mode; google-auth exchanges a real signed JWT
at a local token endpoint, and Cloud Logging's `entries:list` and Pub/Sub's `publish` are a real local HTTP server
speaking their REST shapes. Every message is checked for what it must carry and for what must never be in it (a
resolved secret, credentials in a URL, a Bearer token), in the message and in the function's own log lines.
"""

from __future__ import annotations

import base64
import copy
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import functions_framework
import pytest
import yaml
from botocore.stub import ANY, Stubber
from local_server import LocalServer, Recorded, Reply

from outpost import redaction
from outpost.errors import ConfigError, InvocationError
from outpost.logs import emit_run_log
from outpost.result import NextStep, Result, Status
from outpost.runtime.notifier import make_notifier_handler
from outpost.tooling.packaging.cloudfunctions import cloud_functions_main

REPO = Path(__file__).resolve().parents[2]
TOPIC_ARN = "arn:aws:sns:eu-west-1:123456789012:outpost-stage1-messages"
PUBSUB_TOPIC = "projects/outpost-example/topics/outpost-stage1-messages"
SECRET = "hb-Zq9xVt3Lm8Rk2Wp7-resolved"
"""A heartbeat token as `outpost.secrets` resolves and registers it."""
ALARM_AT = "2026-12-07T20:00:00.000+0000"
ALARM_MS = 1_796_673_600_000
CONFIG: dict[str, Any] = {
    "environment": "stage1",
    "deploy": {"platform": "aws", "region": "eu-west-1"},
    "cluster": {
        "name": "stage1-eu",
        "auth": {"mode": "token", "server": "https://k8s.example.test", "token": "ssm:/outpost/stage1/cluster"},
    },
    "vigilmon": {"channels": {"page": ["pagerduty"], "notify": ["slack"]}},
    "messages": {"enabled": True, "max_bytes": 4096},
    "checks": {
        "apiserver-health": {"heartbeat": "ssm:/outpost/stage1/heartbeat/apiserver-health", "monitor_id": "1"},
    },
}


def run_line(status: str = "failed", summary: str = "apiserver unhealthy: /readyz answered 500") -> str:
    """One run line as the check's function writes it (`emit_run_log`, EMF members included)."""
    steps = [
        NextStep(failure="readyz-failing", cause="a readyz check fails", command="kubectl get --raw '/readyz?verbose'"),
        NextStep(failure="etcd", cause="etcd is slow", command="kubectl -n kube-system logs -l component=etcd"),
    ]
    healthy = status == "ok"
    result = Result(
        check="apiserver-health",
        status=Status(status),
        summary=summary,
        errors=[] if healthy else ["readyz: 500", "etcd: slow"],
        next_steps=[] if healthy else steps,
    )
    stream = io.StringIO()
    emit_run_log(result, "stage1", cluster="stage1-eu", run_id="run-42", metrics=True, stream=stream)
    return stream.getvalue().strip()


def alarm_event(state: str = "ALARM", name: str = "outpost-stage1-apiserver-health-failed") -> dict[str, Any]:
    """A CloudWatch alarm's Lambda action event (docs: alarms-and-actions-Lambda.html)."""
    return {
        "source": "aws.cloudwatch",
        "alarmArn": f"arn:aws:cloudwatch:eu-west-1:123456789012:alarm:{name}",
        "accountId": "123456789012",
        "time": ALARM_AT,
        "region": "eu-west-1",
        "alarmData": {
            "alarmName": name,
            "state": {"value": state, "reason": "Threshold Crossed", "timestamp": ALARM_AT},
            "previousState": {"value": "OK", "reason": "", "timestamp": ALARM_AT},
            "configuration": {"description": "", "metrics": []},
        },
    }


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "stage1.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    monkeypatch.setenv("OUTPOST_CONFIG", str(path))
    monkeypatch.setenv("OUTPOST_MESSAGES_TOPIC", TOPIC_ARN)
    monkeypatch.setenv("OUTPOST_RUNBOOK_BASE_URL", "https://git.example/outpost/blob/main/")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    return path


@dataclass
class Aws:
    logs: Any
    sns: Any
    logs_stub: Stubber
    sns_stub: Stubber
    published: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def aws(config: Path) -> Iterator[Aws]:
    session = boto3.session.Session(region_name="eu-west-1")
    logs, sns = session.client("logs"), session.client("sns")
    found = Aws(logs, sns, Stubber(logs), Stubber(sns))
    # What Publish carried, as the client serialises it (the Stubber checks the rest of the call's shape).
    sns.meta.events.register("provide-client-params.sns.Publish", lambda params, **_: found.published.append(params))
    with found.logs_stub, found.sns_stub:
        yield found
    found.logs_stub.assert_no_pending_responses()
    found.sns_stub.assert_no_pending_responses()


def expect_filter(stub: Stubber, events: list[tuple[int, str]], status: str = "failed") -> None:
    stub.add_response(
        "filter_log_events",
        {"events": [{"timestamp": stamp, "message": text, "logStreamName": "s"} for stamp, text in events]},
        {
            "logGroupName": "/aws/lambda/outpost-stage1-apiserver-health",
            "startTime": ANY,
            "endTime": ALARM_MS + 60_000,
            "filterPattern": f'{{ ($.check = "apiserver-health") && ($.status = "{status}") && '
            '($.environment = "stage1") }',
        },
    )


def expect_publish(stub: Stubber, state: str = "ALARM") -> None:
    stub.add_response(
        "publish",
        {"MessageId": "m-1"},
        {
            "TopicArn": TOPIC_ARN,
            "Subject": f"Outpost stage1: apiserver-health failed {'ALARM' if state == 'ALARM' else 'OK (cleared)'}",
            "Message": ANY,
            "MessageAttributes": ANY,
        },
    )


def test_an_alarm_publishes_the_newest_matching_runs_summary_and_next_steps(
    aws: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    older = run_line(summary="an older failure")
    newest = run_line()
    expect_filter(aws.logs_stub, [(ALARM_MS - 120_000, older), (ALARM_MS - 60_000, newest)])
    expect_publish(aws.sns_stub)
    outcome = make_notifier_handler(aws.logs, aws.sns)(alarm_event(), None)
    assert outcome["published"] is True
    assert (outcome["message_id"], outcome["run_id"], outcome["details"]) == ("m-1", "run-42", True)
    (published,) = aws.published
    body = published["Message"]
    assert "Summary: apiserver unhealthy: /readyz answered 500" in body
    assert "  $ kubectl get --raw '/readyz?verbose'" in body
    assert "  $ kubectl -n kube-system logs -l component=etcd" in body
    assert "Run: run-42 at " in body
    assert "Cluster: stage1-eu" in body
    assert "Runbook: https://git.example/outpost/blob/main/docs/runbooks.md#apiserver-health" in body
    assert "an older failure" not in body
    attributes = {key: value["StringValue"] for key, value in published["MessageAttributes"].items()}
    assert attributes == {
        "environment": "stage1",
        "check": "apiserver-health",
        "rule": "failed",
        "state": "ALARM",
        "run_id": "run-42",
    }
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["message"] for line in lines] == [
        "notifier: outpost-stage1-apiserver-health-failed ALARM: message published "
        f"({len(body.encode())} bytes, with the run's details)"
    ]


def test_a_cleared_alarm_publishes_the_newest_ok_run(aws: Aws) -> None:
    expect_filter(aws.logs_stub, [(ALARM_MS - 30_000, run_line("ok", "apiserver healthy"))], status="ok")
    expect_publish(aws.sns_stub, state="OK")
    outcome = make_notifier_handler(aws.logs, aws.sns)(alarm_event("OK"), None)
    assert outcome["published"] is True
    assert "cleared (OK)" in aws.published[0]["Message"]
    assert "Summary: apiserver healthy" in aws.published[0]["Message"]


@pytest.mark.parametrize(
    ("logs_answer", "why"),
    [
        ({"error": "AccessDeniedException"}, "the run line could not be read: reading apiserver-health's run lines: "),
        ({"events": []}, "no failed run line of apiserver-health between "),
        ({"events": [(ALARM_MS, "{not json")]}, "the newest failed run line of apiserver-health is malformed: "),
    ],
    ids=["no-permission", "none-found", "malformed"],
)
def test_without_the_run_line_the_alarms_facts_still_go_with_why_and_the_cause_is_logged(
    aws: Aws, capsys: pytest.CaptureFixture[str], logs_answer: dict[str, Any], why: str
) -> None:
    if "error" in logs_answer:
        aws.logs_stub.add_client_error(
            "filter_log_events", service_error_code=logs_answer["error"], http_status_code=400
        )
    else:
        expect_filter(aws.logs_stub, logs_answer["events"])
    expect_publish(aws.sns_stub)
    outcome = make_notifier_handler(aws.logs, aws.sns)(alarm_event(), None)
    assert (outcome["published"], outcome["details"]) == (True, False)
    body = aws.published[0]["Message"]
    (missing,) = [line for line in body.splitlines() if line.startswith("Details missing: ")]
    assert missing.removeprefix("Details missing: ").startswith(why)
    assert "Alarm: outpost-stage1-apiserver-health-failed entered ALARM at 2026-12-07T20:00:00Z" in body
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["level"] == "WARNING"
    assert why in lines[0]["message"]


def test_a_failed_publish_is_logged_and_returned_never_raised(aws: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    expect_filter(aws.logs_stub, [(ALARM_MS, run_line())])
    aws.sns_stub.add_client_error("publish", service_error_code="AuthorizationError", http_status_code=403)
    outcome = make_notifier_handler(aws.logs, aws.sns)(alarm_event(), None)
    assert outcome["published"] is False
    assert outcome["error"] == f"publishing to {TOPIC_ARN}: SNS Publish answered AuthorizationError"
    (line,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert line["level"] == "ERROR"
    assert "message NOT published" in line["message"]


def test_a_malformed_event_raises_and_publishes_nothing(aws: Aws, capsys: pytest.CaptureFixture[str]) -> None:
    event = alarm_event()
    del event["alarmData"]["state"]
    with pytest.raises(InvocationError, match=r"alarmData\.state: Field required"):
        make_notifier_handler(aws.logs, aws.sns)(event, None)
    assert aws.published == []
    assert "message refused" in capsys.readouterr().out


def test_insufficient_data_publishes_nothing(aws: Aws) -> None:
    outcome = make_notifier_handler(aws.logs, aws.sns)(alarm_event("INSUFFICIENT_DATA"), None)
    assert outcome == {"environment": "stage1", "published": False, "ignored": "INSUFFICIENT_DATA"}
    assert aws.published == []


@pytest.mark.parametrize(
    ("summary", "never"),
    [
        (f"heartbeat https://hb.example/ping/{SECRET} refused", SECRET),
        ("GET https://probe:hunter2-password@api.example:6443/readyz", "hunter2-password"),
        ("the proxy echoed Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl", "eyJhbGciOiJSUzI1NiJ9"),
    ],
    ids=["resolved-secret", "url-credentials", "bearer-token"],
)
def test_a_secret_in_the_run_line_never_reaches_the_message_or_the_log(
    aws: Aws, capsys: pytest.CaptureFixture[str], summary: str, never: str
) -> None:
    # The line as read from the log group: written by a process that had not redacted it (a worst case).
    document = json.loads(run_line())
    document["summary"] = summary
    document["next_steps"][0]["command"] = f"curl -v '{summary}'"
    document["cluster"] = summary
    redaction.register(SECRET)
    expect_filter(aws.logs_stub, [(ALARM_MS, json.dumps(document))])
    expect_publish(aws.sns_stub)
    make_notifier_handler(aws.logs, aws.sns)(alarm_event(), None)
    (published,) = aws.published
    assert never not in json.dumps(published)
    assert never not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"messages": {"enabled": False}}, "messages.enabled: off, but the notifier's function was started"),
        ({"topic": ""}, "$OUTPOST_MESSAGES_TOPIC: missing"),
        ({"topic": "my-topic"}, "$OUTPOST_MESSAGES_TOPIC: malformed"),
    ],
    ids=["messages-off", "no-topic", "malformed-topic"],
)
def test_a_notifier_that_cannot_publish_fails_its_cold_start(
    config: Path, monkeypatch: pytest.MonkeyPatch, change: dict[str, Any], problem: str
) -> None:
    if "topic" in change:
        monkeypatch.setenv("OUTPOST_MESSAGES_TOPIC", change["topic"])
    else:
        changed = copy.deepcopy(CONFIG)
        changed.update(change)
        config.write_text(yaml.safe_dump(changed))
        monkeypatch.setenv("OUTPOST_CONFIG", str(config.with_name("stage1.yaml")))
        monkeypatch.setenv("OUTPOST_RUNBOOK_BASE_URL", "https://git.example/other/")  # a fresh cold start
    with pytest.raises(ConfigError) as raised:
        make_notifier_handler()
    assert problem in raised.value.problems[0]


# --- Google Cloud -----------------------------------------------------------------------------------------------


@dataclass
class Google:
    """Google's OAuth2 token endpoint, Cloud Logging's entries:list and Pub/Sub's publish, as one local server."""

    server: LocalServer
    entries: list[dict[str, Any]]
    access_token: str = "ya29.notifier-local-access-token"
    logging_status: int = 200
    lists: list[dict[str, Any]] = field(default_factory=list)
    publishes: list[dict[str, Any]] = field(default_factory=list)

    def reply(self, request: Recorded) -> Reply:
        json_type = {"Content-Type": "application/json"}
        if request.path == "/token":
            body = {"access_token": self.access_token, "expires_in": 3600, "token_type": "Bearer"}
            return 200, json_type, json.dumps(body).encode()
        if request.headers.get("Authorization") != f"Bearer {self.access_token}":
            return 401, json_type, b'{"error": {"code": 401, "status": "UNAUTHENTICATED"}}'
        if request.path == "/v2/entries:list" and request.method == "POST":
            self.lists.append(json.loads(request.body))
            if self.logging_status != 200:
                error = {"error": {"code": self.logging_status, "status": "PERMISSION_DENIED", "message": SECRET}}
                return self.logging_status, json_type, json.dumps(error).encode()
            return 200, json_type, json.dumps({"entries": self.entries}).encode()
        if request.path == f"/v1/{PUBSUB_TOPIC}:publish" and request.method == "POST":
            self.publishes.append(json.loads(request.body))
            return 200, json_type, b'{"messageIds": ["1234567890"]}'
        return 404, json_type, b'{"error": {"code": 404, "status": "NOT_FOUND"}}'


@pytest.fixture
def google(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service_account_key_pem: str
) -> Iterator[tuple[Google, Any]]:
    """The generated main.py's `notifier` target under functions-framework, and the Google stand-in it talks to."""
    server = LocalServer()
    stand_in = Google(server=server, entries=[])
    server.responder = stand_in.reply
    server.start()
    adc = tmp_path / "adc.json"
    adc.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "outpost-example",
                "private_key_id": "local-test-key",
                "private_key": service_account_key_pem,
                "client_email": "outpost-stage1-note@outpost-example.iam.gserviceaccount.com",
                "client_id": "1234567890",
                "token_uri": f"{server.base_url}/token",
            }
        )
    )
    config = copy.deepcopy(CONFIG)
    config["deploy"] = {"platform": "gcf", "region": "europe-west1", "project": "outpost-example"}
    config["cluster"]["auth"] = {"mode": "gke", "server": "https://k", "ca_data": "Q0E="}
    config["checks"]["apiserver-health"]["heartbeat"] = "gcpsm:projects/outpost-example/secrets/hb"
    path = tmp_path / "stage1.yaml"
    path.write_text(yaml.safe_dump(config))
    for name, value in {
        "GOOGLE_APPLICATION_CREDENTIALS": str(adc),
        "OUTPOST_CONFIG": str(path),
        "OUTPOST_MESSAGES_TOPIC": PUBSUB_TOPIC,
        "OUTPOST_RUNBOOK_BASE_URL": "",
        "OUTPOST_LOGGING_ENDPOINT": server.base_url,
        "OUTPOST_PUBSUB_ENDPOINT": server.base_url,
        # functions-framework writes the signature type it found here: restored after the test.
        "FUNCTION_SIGNATURE_TYPE": "http",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(REPO))  # the generated main.py imports functions.notifier.main, as in the bundle
    from outpost.settings import load_settings

    main = tmp_path / "source" / "main.py"
    main.parent.mkdir()
    main.write_text(cloud_functions_main(load_settings(path)))
    app = functions_framework.create_app(target="notifier", source=str(main))  # type: ignore[no-untyped-call]
    yield stand_in, app.test_client()
    server.stop()


def post_incident(client: Any, state: str = "open", policy: str = "outpost-stage1-apiserver-health-failed") -> Any:
    """Eventarc's delivery of the incidents topic's message: a binary-mode CloudEvent whose data is the envelope."""
    notification = {
        "version": "1.2",
        "incident": {
            "incident_id": "0.abc",
            "policy_name": policy,
            "state": state,
            "started_at": 1_796_673_600,
            "ended_at": 1_796_674_200 if state == "closed" else None,
            "summary": "Outpost stage1 check runs",
        },
    }
    envelope = {
        "message": {"data": base64.b64encode(json.dumps(notification).encode()).decode(), "messageId": "1"},
        "subscription": "projects/outpost-example/subscriptions/eventarc",
    }
    headers = {
        "ce-id": "1",
        "ce-source": "//pubsub.googleapis.com/projects/outpost-example/topics/outpost-stage1-incidents",
        "ce-type": "google.cloud.pubsub.topic.v1.messagePublished",
        "ce-specversion": "1.0",
    }
    return client.post("/", json=envelope, headers=headers)


def test_an_incident_publishes_the_runs_message_to_pubsub(google: tuple[Google, Any]) -> None:
    stand_in, client = google
    stand_in.entries = [{"jsonPayload": json.loads(run_line()), "timestamp": "2026-12-07T19:59:00Z"}]
    answer = post_incident(client)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    (listed,) = stand_in.lists
    assert listed["resourceNames"] == ["projects/outpost-example"]
    assert (listed["orderBy"], listed["pageSize"]) == ("timestamp desc", 1)
    assert 'resource.labels.service_name="outpost-stage1-apiserver-health"' in listed["filter"]
    assert 'jsonPayload.status="failed"' in listed["filter"]
    assert 'timestamp<="2026-12-07T20:01:00Z"' in listed["filter"]
    (published,) = stand_in.publishes
    (message,) = published["messages"]
    body = base64.b64decode(message["data"]).decode()
    assert "Summary: apiserver unhealthy: /readyz answered 500" in body
    assert "  $ kubectl get --raw '/readyz?verbose'" in body
    assert "Runbook: docs/runbooks.md#apiserver-health" in body
    assert message["attributes"] == {
        "subject": "Outpost stage1: apiserver-health failed ALARM",
        "environment": "stage1",
        "check": "apiserver-health",
        "rule": "failed",
        "state": "ALARM",
        "run_id": "run-42",
    }


def test_a_closed_incident_reads_the_ok_run_and_a_denied_read_still_publishes_why(
    google: tuple[Google, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    stand_in, client = google
    stand_in.logging_status = 403
    redaction.register(SECRET)
    answer = post_incident(client, state="closed")
    assert answer.status_code == 200
    assert 'jsonPayload.status="ok"' in stand_in.lists[0]["filter"]
    body = base64.b64decode(stand_in.publishes[0]["messages"][0]["data"]).decode()
    assert (
        "Details missing: the run line could not be read: reading apiserver-health's run lines: "
        "Cloud Logging entries:list answered HTTP 403 (PERMISSION_DENIED)"
    ) in body
    out = capsys.readouterr().out
    assert SECRET not in body + out  # Google's error message is never quoted
    assert stand_in.access_token not in body + out


def test_a_foreign_incident_is_refused_and_publishes_nothing(google: tuple[Google, Any]) -> None:
    stand_in, client = google
    answer = post_incident(client, policy="someone-elses-policy")
    assert answer.status_code == 500  # functions-framework's answer to a raised error: the delivery failed
    assert stand_in.publishes == []
    assert stand_in.lists == []
