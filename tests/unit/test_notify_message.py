"""The message of an alarm state change (`outpost.notify.message`): what it carries, redacted, escaped and capped.

Tables over real run lines as `outpost.logs.emit_run_log` writes them (a `Result` with its next steps), a resolved
secret registered with the redaction guard as `outpost.secrets` registers it, and the documented caps.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from typing import Any

import pytest

from outpost import redaction
from outpost.logs import emit_run_log
from outpost.notify.message import CUT, SUBJECT_MAX, AlarmFacts, RunLine, compose, parse_run_line
from outpost.result import NextStep, Result, Status

AT = dt.datetime(2026, 12, 7, 20, 0, tzinfo=dt.UTC)
RESOLVED_SECRET = "hb-Zq9xVt3Lm8Rk2Wp7"
"""A heartbeat URL's token, as `outpost.secrets` would have resolved and registered it."""


def facts(state: str = "ALARM", rule: str = "failed", check: str = "apiserver-health") -> AlarmFacts:
    return AlarmFacts("prod", check, rule, state, AT, f"outpost-prod-{check}-{rule}")  # type: ignore[arg-type]


def run_line(summary: str = "apiserver unhealthy: /readyz answered 500", steps: int = 2, **extra: Any) -> RunLine:
    """A run line exactly as a run writes it (`emit_run_log`), read back."""
    result = Result(
        check=extra.pop("check", "apiserver-health"),
        status=Status(extra.pop("status", "failed")),
        summary=summary,
        errors=[f"error line {index}" for index in range(steps)],
        next_steps=[
            NextStep(
                failure=f"class-{index}",
                cause=f"cause {index}",
                command=f"kubectl get --raw /readyz?verbose # step {index}",
            )
            for index in range(steps)
        ],
    )
    stream = io.StringIO()
    emit_run_log(result, "prod", cluster=extra.pop("cluster", "prod-eu"), run_id="run-1234", stream=stream)
    return parse_run_line(stream.getvalue(), "apiserver-health")


def size(text: str) -> int:
    return len(text.encode("utf-8"))


def test_an_alarm_message_carries_every_fact_and_the_runs_details() -> None:
    message = compose(facts(), run_line(), runbook_base="https://git.example/blob/main/", max_bytes=4096)
    body = message.body
    for expected in (
        "Environment: prod",
        "Cluster: prod-eu",
        "check apiserver-health, rule failed: entered ALARM",
        "Alarm: outpost-prod-apiserver-health-failed entered ALARM at 2026-12-07T20:00:00Z",
        "Run: run-1234 at ",
        "Summary: apiserver unhealthy: /readyz answered 500",
        "- class-0: cause 0",
        "  $ kubectl get --raw /readyz?verbose # step 1",
        "Runbook: https://git.example/blob/main/docs/runbooks.md#apiserver-health",
    ):
        assert expected in body, expected
    assert message.subject == "Outpost prod: apiserver-health failed ALARM"
    assert message.attributes == {
        "environment": "prod",
        "check": "apiserver-health",
        "rule": "failed",
        "state": "ALARM",
        "run_id": "run-1234",
    }


def test_an_ok_message_says_it_cleared_and_carries_the_ok_runs_line() -> None:
    message = compose(facts("OK"), run_line("apiserver healthy", steps=0, status="ok"), max_bytes=4096)
    assert "cleared (OK)" in message.body
    assert "Summary: apiserver healthy" in message.body
    assert "Next steps" not in message.body
    assert message.subject == "Outpost prod: apiserver-health failed OK (cleared)"
    assert "Runbook: docs/runbooks.md#apiserver-health" in message.body  # no base URL: the repository path


def test_without_a_run_line_the_alarms_own_facts_go_with_one_line_saying_why() -> None:
    why = "no failed run line of apiserver-health between 2026-12-07T19:50:00Z and 2026-12-07T20:01:00Z"
    message = compose(facts(), None, missing=why, cluster="prod-eu", max_bytes=4096)
    lines = message.body.splitlines()
    assert f"Details missing: {why}" in lines
    assert "Cluster: prod-eu" in lines
    assert not [line for line in lines if line.startswith(("Run:", "Summary:"))]
    assert "run_id" not in message.attributes


@pytest.mark.parametrize(
    ("summary", "leaked", "shown"),
    [
        (f"ping to https://hb.example/ping/{RESOLVED_SECRET} failed", RESOLVED_SECRET, "***"),
        ("GET https://probe:hunter2-password@api.example:6443/readyz refused", "hunter2-password", "***@api.example"),
        ("upstream said: Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload.sig", "eyJhbGciOiJSUzI1NiJ9", "Bearer ***"),
        ("token: abcdefgh12345678 in the error body", "abcdefgh12345678", "token: ***"),
    ],
    ids=["resolved-secret", "url-credentials", "bearer-token", "keyed-token"],
)
def test_every_secret_shape_is_redacted_from_summary_steps_subject_and_attributes(
    summary: str, leaked: str, shown: str
) -> None:
    redaction.register(RESOLVED_SECRET)
    # Straight from a line (as another process, or a line written before the secret was known, could have it).
    document = json.loads(run_line().model_dump_json())
    document["summary"] = summary
    document["next_steps"] = [{"failure": "f", "cause": summary, "command": f"curl -v {summary}", "see": summary}]
    document["run_id"] = summary
    run = parse_run_line(document, "apiserver-health")
    message = compose(facts(), run, cluster=summary, max_bytes=4096)
    everything = message.subject + message.body + json.dumps(message.attributes)
    assert leaked not in everything
    assert shown in message.body


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("line one\nForged: line", "line one\\nForged: line"),
        ("carriage\rreturn", "carriage\\rreturn"),
        ("escape \x1b[2J clears a terminal", "escape \\x1b[2J clears a terminal"),
        ("C1 \x9b31m control", "C1 \\x9b31m control"),
        ("DEL \x7f here", "DEL \\x7f here"),
    ],
    ids=["newline", "carriage-return", "escape", "c1-csi", "del"],
)
def test_control_characters_in_the_run_line_are_shown_as_escapes(raw: str, escaped: str) -> None:
    document = json.loads(run_line(steps=0).model_dump_json())
    document["summary"] = raw  # as a line from elsewhere could carry it (a run's own summary is one line)
    message = compose(facts(), parse_run_line(document, "apiserver-health"), max_bytes=4096)
    assert f"Summary: {escaped}" in message.body.splitlines()
    assert not any((ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F for c in message.body)


@pytest.mark.parametrize(
    ("steps", "summary_chars", "cap", "kept_steps", "cut"),
    [
        (3, 40, 4096, 3, False),  # fits whole
        (30, 40, 1024, None, False),  # next steps dropped from the end until it fits
        (2, 5000, 1024, 0, True),  # every step dropped, then the summary cut with the marker
        (0, 600, 512, 0, True),
    ],
    ids=["fits", "steps-dropped", "summary-cut", "smallest-cap"],
)
def test_the_body_is_capped_dropping_next_steps_from_the_end_then_cutting_the_summary(
    steps: int, summary_chars: int, cap: int, kept_steps: int | None, cut: bool
) -> None:
    run = run_line("é" * summary_chars, steps=steps)  # two bytes a character: the cap is in UTF-8 bytes
    message = compose(facts(), run, runbook_base="https://git.example/blob/main/", max_bytes=cap)
    assert size(message.body) <= cap
    shown = [line for line in message.body.splitlines() if line.startswith("  $ ")]
    if kept_steps is not None:
        assert len(shown) == kept_steps
    else:
        assert 0 < len(shown) < steps
        # The first ones are kept, in order; the message says how many were left out.
        assert [line.rsplit(" ", 1)[1] for line in shown] == [str(index) for index in range(len(shown))]
        assert f"({steps - len(shown)} more next step(s) left out to fit messages.max_bytes" in message.body
    assert (CUT in message.body) is cut
    assert message.body.rstrip("\n").endswith("docs/runbooks.md#apiserver-health")  # the link always survives


def test_facts_too_long_for_the_cap_are_cut_last_still_within_it() -> None:
    message = compose(facts(), None, missing="x", cluster="c" * 2000, max_bytes=512)
    assert size(message.body) <= 512
    assert message.body.endswith(CUT)


def test_the_subject_is_ascii_one_line_under_snss_limit() -> None:
    long_check = "kruise-manager-replicas"
    message = compose(facts(check=long_check, rule="degraded"), None, missing="x", max_bytes=4096)
    assert len(message.subject) <= SUBJECT_MAX < 100
    assert message.subject.isascii()
    assert "\n" not in message.subject


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("not json", "the run line is not JSON"),
        ("[1, 2]", "the run line is not a JSON object"),
        ('{"check": "apiserver-health", "status": "failed", "run_id": "r", "time": "t"}', "summary"),
        ('{"check": "apiserver-health", "status": "sick", "summary": "s", "run_id": "r", "time": "t"}', "status"),
        ('{"check": "koord-webhook", "status": "failed", "summary": "s", "run_id": "r", "time": "t"}', "koord-webhook"),
        (
            '{"check": "apiserver-health", "status": "failed", "summary": "s", "run_id": "r", "time": "t", '
            '"next_steps": [{"cause": "no command"}]}',
            "next_steps.0.command",
        ),
    ],
    ids=["not-json", "not-object", "no-summary", "bad-status", "another-check", "step-without-command"],
)
def test_a_malformed_run_line_is_refused_naming_the_field(raw: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_run_line(raw, "apiserver-health")
