"""The Lambda entry point of `apiserver-health`, invoked with real event shapes.

The configured API server is a closed loopback port: a real `error` result (connection refused), which
must raise for a scheduled run, answer 503 over HTTP, and never ping. Healthy and failed results through
the same handler, against the sandbox cluster, are in tests/e2e/test_runtimes_e2e.py.
"""

from __future__ import annotations

import base64
import copy
import json
import signal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from unreachable import ENTRY_MODULE, HEARTBEAT_TOKEN, write_unreachable_config

from kit.entries import cold_import
from outpost.errors import ConfigError, InvocationError
from outpost.runtime.common import CheckUnhealthy
from samples.aws_events import FUNCTION_URL_EVENT, REST_V1_EVENT, SCHEDULED_EVENT


def url_event(method: str = "GET", query: str = "", body: str | None = None, b64: bool = False) -> dict[str, Any]:
    event = copy.deepcopy(FUNCTION_URL_EVENT)
    event["requestContext"]["http"]["method"] = method
    event["rawQueryString"] = query
    if body is not None:
        event["body"] = base64.b64encode(body.encode()).decode() if b64 else body
        event["isBase64Encoded"] = b64
    return event


def load_entry_module() -> ModuleType:
    """Import the entry module afresh: one cold start."""
    return cold_import(ENTRY_MODULE)


@pytest.fixture
def entry(unreachable_cluster_config: Path) -> ModuleType:
    return load_entry_module()


def run_log_lines(out: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [line for line in lines if "status" in line]


def test_scheduled_error_raises_and_does_not_ping(entry, receiver, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CheckUnhealthy) as raised:
        entry.handler(SCHEDULED_EVENT, None)
    message = str(raised.value)
    assert message.startswith("apiserver-health error: ")
    assert "\n" not in message
    assert raised.value.result["status"] == "error"
    assert raised.value.result["reported"] is False
    assert receiver.requests == []  # silence is the alarm
    out = capsys.readouterr().out
    (line,) = run_log_lines(out)
    assert line["check"] == "apiserver-health"
    assert line["status"] == "error"
    assert line["severity"] == line["level"] == "ERROR"
    assert line["environment"] == "test"
    assert line["reported"] is False
    assert HEARTBEAT_TOKEN not in out + message


class LambdaContext:
    """The one attribute of Lambda's context object the handler reads."""

    aws_request_id = "6f1c1a0e-2b7d-4c55-9e7a-0c1d2e3f4a5b"


def test_scheduled_line_names_the_request_and_publishes_the_outcome_metrics(entry, receiver, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CheckUnhealthy) as raised:
        entry.handler(SCHEDULED_EVENT, LambdaContext())
    (line,) = run_log_lines(capsys.readouterr().out)
    assert line["run_id"] == raised.value.result["run_id"] == LambdaContext.aws_request_id
    assert line["cluster"]
    assert line["counted"] is True
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Outpost"
    assert directive["Dimensions"] == [["environment", "check"]]
    assert {name: line[name] for name in ("Failed", "Error", "Degraded", "Ok")} == {
        "Failed": 0,
        "Error": 1,
        "Degraded": 0,
        "Ok": 0,
    }


def test_an_on_demand_run_counts_towards_no_alarm(entry, receiver, capsys) -> None:  # type: ignore[no-untyped-def]
    response = entry.handler(url_event("GET"), LambdaContext())
    (line,) = run_log_lines(capsys.readouterr().out)
    assert json.loads(response["body"])["run_id"] == line["run_id"] == LambdaContext.aws_request_id
    assert "_aws" not in line
    assert line["counted"] is False
    assert not {"Failed", "Error", "Degraded", "Ok"} & set(line)


def test_function_url_get_answers_503_with_the_result(entry, receiver) -> None:  # type: ignore[no-untyped-def]
    response = entry.handler(url_event("GET"), None)
    assert response["statusCode"] == 503
    assert response["headers"]["Content-Type"] == "application/json"
    body = json.loads(response["body"])
    assert body["status"] == "error"
    assert body["check"] == "apiserver-health"
    assert body["environment"] == "test"
    assert "connection refused" in body["summary"]
    assert receiver.requests == []


@pytest.mark.parametrize(
    "event",
    [
        url_event("GET", query="report=false"),
        url_event("POST", body='{"report": false}'),
        url_event("POST", body='{"report": false}', b64=True),
        url_event("POST", body=""),
        {
            **REST_V1_EVENT,
            "queryStringParameters": {"report": "false"},
            "multiValueQueryStringParameters": {"report": ["false"]},
        },
        REST_V1_EVENT,
    ],
    ids=["url-query", "url-json", "url-json-base64", "url-empty-post", "rest-v1-query", "rest-v1-plain"],
)
def test_http_shapes_all_run_the_check(entry, receiver, event) -> None:  # type: ignore[no-untyped-def]
    response = entry.handler(event, None)
    assert response["statusCode"] == 503, response
    assert json.loads(response["body"])["status"] == "error"
    assert receiver.requests == []


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (url_event("GET", query="report=maybe"), "query parameter 'report' must be true or false"),
        (url_event("GET", query="report=true&report=false"), "query parameter 'report' given more than once"),
        (url_event("GET", query="verbose=1"), "unknown query parameter 'verbose' (allowed: report)"),
        (url_event("POST", body="report=false"), "request body is not valid JSON"),
        (url_event("POST", body="[false]"), 'request body must be a JSON object such as {"report": false}'),
        (url_event("POST", body='{"report": "no"}'), "option 'report': Input should be a valid boolean"),
        (url_event("POST", body='{"dry_run": true}'), "unknown option 'dry_run' in the body (allowed: report)"),
        (
            url_event("POST", query="report=false", body='{"report": false}'),
            "option 'report' given in both the query and the body",
        ),
        (
            {**url_event("POST"), "body": "%%%", "isBase64Encoded": True},
            "request body is marked base64 but is not valid base64",
        ),
        (
            {**url_event("GET"), "requestContext": {"http": {}}},
            "malformed event: requestContext.http.method: Field required",
        ),
        (
            url_event("POST", body="[" * 100_000 + "]" * 100_000),
            'request body nests deeper than 32 levels (the options are one flat object: {"report": false})',
        ),
        (
            url_event("POST", body='{"report": false}' + " " * 100_000),
            'request body is larger than 65536 bytes (the options are tiny: {"report": false})',
        ),
        (
            url_event("POST", body="[" * 33 + "]" * 33),
            'request body nests deeper than 32 levels (the options are one flat object: {"report": false})',
        ),
        (
            url_event("POST", body="[" * 100_000, b64=True),
            'request body nests deeper than 32 levels (the options are one flat object: {"report": false})',
        ),
        (
            url_event("POST", body='{"report": false, "report": true}'),
            "option 'report' given more than once in the body",
        ),
        (
            {**url_event("POST"), "isBase64Encoded": "false"},
            "malformed event: isBase64Encoded: Input should be a valid boolean",
        ),
        ({**REST_V1_EVENT, "isBase64Encoded": 1}, "malformed event: isBase64Encoded: Input should be a valid boolean"),
        (
            {**REST_V1_EVENT, "httpMethod": "POST", "body": '{"report": true, "report": false}'},
            "option 'report' given more than once in the body",
        ),
    ],
)
def test_malformed_requests_answer_400(entry, receiver, event, reason) -> None:  # type: ignore[no-untyped-def]
    response = entry.handler(event, None)
    assert response["statusCode"] == 400
    assert json.loads(response["body"]) == {"error": reason}
    assert receiver.requests == []


def test_other_methods_answer_405(entry) -> None:  # type: ignore[no-untyped-def]
    response = entry.handler(url_event("DELETE"), None)
    assert response["statusCode"] == 405
    assert response["headers"]["Allow"] == "GET, POST"
    assert json.loads(response["body"]) == {"error": "method DELETE not allowed (use GET or POST)"}


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ({}, "unrecognised event (keys: none)"),
        ([SCHEDULED_EVENT], "event is a list, not a JSON object"),
        ({"source": "aws.events", "detail-type": "Scheduled Event"}, "malformed event: id: Field required"),
        ({**SCHEDULED_EVENT, "detail-type": "EC2 Instance State-change Notification"}, "malformed event: detail-type"),
        ({"Records": [{"eventSource": "aws:sqs"}]}, "unrecognised event (keys: Records)"),
    ],
)
def test_unknown_events_fail_the_invocation(entry, receiver, event, reason) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvocationError) as raised:
        entry.handler(event, None)
    assert str(raised.value).startswith(reason)
    assert receiver.requests == []


def test_bad_configuration_fails_the_cold_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "environment: Test\n"
        "cluster: {name: x, auth: {mode: token, server: 'http://127.0.0.1:1', token: 'https://leak.example/t0k3n'}}\n"
        "checks: {apiserver-health: {heartbeat: 'https://vigilmon.online/api/heartbeat/t0k3nvalue'}}\n"
    )
    monkeypatch.setenv("OUTPOST_CONFIG", str(bad))
    with pytest.raises(ConfigError) as raised:
        load_entry_module()
    message = str(raised.value)
    for path in (
        "environment",
        "cluster.auth.token.server",
        "cluster.auth.token.token",
        "checks.apiserver-health.heartbeat",
    ):
        assert f"{path}: " in message, message
    assert "t0k3n" not in message


def test_disabled_check_fails_the_cold_start(tmp_path: Path, closed_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_unreachable_config(tmp_path / "off.yaml", closed_port, enabled=False)
    monkeypatch.setenv("OUTPOST_CONFIG", str(config))
    with pytest.raises(ConfigError, match=r"checks\.apiserver-health: disabled, but a function for it was started"):
        load_entry_module()


def test_missing_configuration_fails_the_cold_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OUTPOST_CONFIG", raising=False)
    monkeypatch.delenv("OUTPOST_ENV", raising=False)
    with pytest.raises(ConfigError, match="no configuration: set OUTPOST_CONFIG"):
        load_entry_module()


def test_signal_handlers_are_left_alone_outside_the_lambda_runtime(unreachable_cluster_config: Path) -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    load_entry_module()
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_in_the_lambda_runtime_sigterm_and_sigint_stop_the_process(
    unreachable_cluster_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    monkeypatch.setenv("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")
    try:
        load_entry_module()
        installed = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])
    assert installed[0] is installed[1]
    assert installed[0] not in before
    # What the handler does (exit 143, no ping, plugins killed) is proven in a child process:
    # tests/functional/test_fault_matrix_runtime.py.
