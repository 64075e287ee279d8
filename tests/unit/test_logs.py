"""The log line format and the redaction guard (pure functions, no I/O beyond a string buffer)."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import re
import uuid

import pytest

from outpost.logs import (
    METRIC_NAMESPACE,
    OUTCOME_METRICS,
    RedactingFilter,
    dumps,
    emit_run_log,
    redact,
    terminal_safe,
)
from outpost.result import Result, Status
from outpost.runbook import Runbook
from outpost.secrets import register_secret_value


def logged(result: Result, environment: str = "e") -> str:
    """The text `emit_run_log` writes for `result`, as written."""
    buffer = io.StringIO()
    emit_run_log(result, environment=environment, stream=buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "ping https://vigilmon.online/api/heartbeat/hb_Un1tT3stOnlyQ7z failed",
            "ping https://vigilmon.online/api/heartbeat/*** failed",
        ),
        ("GET http://127.0.0.1:8080/hb?token=abc&x=1", "GET http://127.0.0.1:8080/hb?***"),
        ("https://user:pa55w0rd@example.com/path", "https://***@example.com/path"),
        ("Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload", "Authorization: Bearer ***"),
        # Ordinary API paths keep their words: only generated-looking segments are tokens.
        (
            "GET https://10.0.0.1:6443/api/v1/namespaces/koordinator-system/pods/koord-manager-0:8000/proxy/readyz",
            "GET https://10.0.0.1:6443/api/v1/namespaces/koordinator-system/pods/koord-manager-0:8000/proxy/readyz",
        ),
        ("no url here", "no url here"),
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_registered_values_are_scrubbed_anywhere() -> None:
    register_secret_value("correct-horse-battery")
    assert redact("key=correct-horse-battery;") == "key=***;"


def test_run_log_line_has_both_platforms_fields() -> None:
    result = Result(
        check="koordlet-coverage",
        status=Status.FAILED,
        summary="1 of 3 nodes without a ready koordlet",
        errors=["daemonset koordinator-system/koordlet: node n7 has no ready pod"],
        details={"missing": ["n7"], "probe": "https://hooks.example/hb/AbCdEf0123456789xyz"},
        duration_ms=42,
    )
    (line,) = logged(result, environment="prod").splitlines()
    record = json.loads(line)
    assert record["severity"] == record["level"] == "ERROR"
    assert record["message"] == "koordlet-coverage failed: 1 of 3 nodes without a ready koordlet"
    assert {k: record[k] for k in ("check", "status", "summary", "duration_ms", "environment", "reported")} == {
        "check": "koordlet-coverage",
        "status": "failed",
        "summary": "1 of 3 nodes without a ready koordlet",
        "duration_ms": 42,
        "environment": "prod",
        "reported": False,
    }
    assert record["details"]["probe"] == "https://hooks.example/hb/***"
    assert record["time"].endswith("Z")
    assert record["next_steps"] == []


def test_run_log_line_names_its_run_and_cluster() -> None:
    result = Result(check="c", status=Status.OK, summary="s")
    buffer = io.StringIO()
    emit_run_log(result, environment="prod", cluster="prod-eu", run_id="8f0c-request", stream=buffer)
    record = json.loads(buffer.getvalue())
    assert (record["run_id"], record["cluster"]) == ("8f0c-request", "prod-eu")
    assert "_aws" not in record  # metrics only when asked for (AWS scheduled runs)
    assert record["counted"] is False  # counted towards the cloud alarms only when asked for
    # Where the platform gives no id, each line gets a fresh UUID of its own.
    first, second = (json.loads(logged(result))["run_id"] for _ in range(2))
    assert first != second
    assert uuid.UUID(first).version == 4


@pytest.mark.parametrize("status", list(Status))
def test_aws_run_line_publishes_one_metric_per_outcome_in_emf(status: Status) -> None:
    """The embedded metric format: `_aws.CloudWatchMetrics` names the namespace, the dimension set (members of the
    line) and the metrics; each metric's value is a member of the line: 1 for the run's outcome, 0 for the rest."""
    result = Result.error("apiserver-health", "apiserver-health: unreachable") if status is Status.ERROR else None
    result = result or Result(check="apiserver-health", status=status, summary="s")
    before = int(dt.datetime.now(dt.UTC).timestamp() * 1000)
    buffer = io.StringIO()
    emit_run_log(result, environment="prod", cluster="prod-eu", run_id="r1", metrics=True, stream=buffer)
    record = json.loads(buffer.getvalue())
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive == {
        "Namespace": METRIC_NAMESPACE,
        "Dimensions": [["environment", "check"]],
        "Metrics": [{"Name": name, "Unit": "Count"} for name in ("Failed", "Error", "Degraded", "Ok")],
    }
    assert (record["environment"], record["check"]) == ("prod", "apiserver-health")  # the dimensions' values
    assert {name: record[name] for name in OUTCOME_METRICS.values()} == {
        name: int(outcome is status) for outcome, name in OUTCOME_METRICS.items()
    }
    assert before <= record["_aws"]["Timestamp"] <= before + 60_000
    assert record["counted"] is True


def test_a_secret_in_a_result_never_reaches_the_run_line() -> None:
    """A resolved secret a server echoed into a result (summary, error line, next step, details) is scrubbed from
    the whole line, the EMF members included."""
    secret = "s3cr3t-heartbeat-token-Zq9"
    register_secret_value(secret)
    steps = Runbook("f", "t", "cause {x}", "curl {x}")
    result = Result.failed("c", f"echoed {secret}", [steps.at(f"line {secret}", x=secret)])
    result = result.model_copy(update={"details": {"body": f"<{secret}>", secret: [secret]}})
    buffer = io.StringIO()
    emit_run_log(result, environment="prod", cluster=f"c-{secret}", run_id=secret, metrics=True, stream=buffer)
    text = buffer.getvalue()
    assert secret not in text
    record = json.loads(text)
    assert record["summary"] == "echoed ***"
    assert record["run_id"] == record["details"]["body"].strip("<>") == "***"
    assert record["Failed"] == 1


def test_run_log_line_carries_each_lines_next_step() -> None:
    missing = Runbook("no-pod", "No ready pod", "the pod is not scheduled", "kubectl get pods -n {ns} -o wide -l {sel}")
    result = Result.failed(
        "koordlet-coverage", "1 node", [missing.at("node n7: no ready koordlet", ns="ks", sel="a=b")]
    )
    record = json.loads(logged(result, environment="prod"))
    assert record["next_steps"] == [
        {
            "failure": "no-pod",
            "cause": "the pod is not scheduled",
            "command": "kubectl get pods -n ks -o wide -l a=b",
            "see": "",
        }
    ]


@pytest.mark.parametrize(
    ("status", "level"), [(Status.OK, "INFO"), (Status.DEGRADED, "WARNING"), (Status.ERROR, "ERROR")]
)
def test_levels(status: Status, level: str) -> None:
    assert json.loads(logged(Result(check="c", status=status, summary="s")))["severity"] == level


def test_redacting_filter_rewrites_library_records() -> None:
    record = logging.LogRecord(
        "httpx",
        logging.INFO,
        __file__,
        1,
        'HTTP Request: GET %s "%s"',
        ("https://vigilmon.online/api/heartbeat/hb_Un1tT3stOnlyQ7z", "HTTP/1.1 200 OK"),
        None,
    )
    assert RedactingFilter().filter(record)
    assert record.getMessage() == 'HTTP Request: GET https://vigilmon.online/api/heartbeat/*** "HTTP/1.1 200 OK"'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("etcd \x1b]0;owned\x07 failed", "etcd \\x1b]0;owned\\x07 failed"),  # OSC retitle, BEL
        ("\x1b[2J\x9b31mred\x7f", "\\x1b[2J\\x9b31mred\\x7f"),  # CSI, the C1 CSI U+009B, DEL
        ("ok\rFAKE", "ok\\rFAKE"),  # a carriage return would overwrite the line
        ("a\x08\x08b\x00c\x85d", "a\\x08\\x08b\\x00c\\x85d"),  # backspace, NUL, C1 NEL
        ("tab\tkept, café, ✓", "tab\tkept, café, ✓"),  # tab and printable text, any script, unchanged
        ("two\nlines", "two\\nlines"),
    ],
)
def test_terminal_safe_shows_controls_as_escapes(text: str, expected: str) -> None:
    assert terminal_safe(text) == expected


def test_terminal_safe_keeps_line_breaks_when_meant() -> None:
    assert terminal_safe("one\ntwo\x1b[0m", keep_newlines=True) == "one\ntwo\\x1b[0m"


def test_log_line_never_carries_a_raw_control_character() -> None:
    result = Result(
        check="c",
        status=Status.FAILED,
        summary="etcd\x1b[2J failed \x9b31m\x7f café",
        errors=["line \x85 \x9b"],
        details={"key\x9b": "value\x7f"},
    )
    line = logged(result)
    assert line.endswith("\n")
    assert not re.search("[\x00-\x1f\x7f-\x9f]", line.rstrip("\n")), repr(line)
    assert "café" in line  # UTF-8 text stays readable
    record = json.loads(line)
    assert record["summary"] == "etcd\x1b[2J failed \x9b31m\x7f café"  # the same text, escaped in transit only
    assert record["details"] == {"key\x9b": "value\x7f"}


def test_dumps_escapes_del_and_c1_only() -> None:
    assert dumps({"a": "\x7f\x80\x9f\xa0é\n"}) == '{"a":"\\u007f\\u0080\\u009f\xa0é\\n"}'
