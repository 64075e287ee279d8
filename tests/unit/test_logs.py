"""The log line format and the redaction guard (pure functions, no I/O beyond a string buffer)."""

from __future__ import annotations

import io
import json
import logging

import pytest

from outpost.logs import RedactingFilter, emit_run_log, redact
from outpost.result import Result, Status
from outpost.secrets import register_secret_value


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
    buffer = io.StringIO()
    emit_run_log(result, environment="prod", stream=buffer)
    (line,) = buffer.getvalue().splitlines()
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


@pytest.mark.parametrize(
    ("status", "level"), [(Status.OK, "INFO"), (Status.DEGRADED, "WARNING"), (Status.ERROR, "ERROR")]
)
def test_levels(status: Status, level: str) -> None:
    buffer = io.StringIO()
    emit_run_log(Result(check="c", status=status, summary="s"), environment="e", stream=buffer)
    assert json.loads(buffer.getvalue())["severity"] == level


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
