"""Health answers are read from their head only (`outpost.kube.health`): a million-line answer costs what its
head costs, and a 200 whose body went past the head is never judged healthy (fail closed)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from outpost.checks.apiserver_health import (
    ApiserverHealthData,
    ApiserverHealthParams,
    Endpoint,
    evaluate,
    parse_lines,
)
from outpost.kube.health import MAX_HEALTH_BYTES, MAX_HEALTH_LINES, parse_health_body, read_health_body
from outpost.result import Status

READY = "[+]ping ok\n[+]etcd ok\nreadyz check passed\n"
MILLION = "".join(f"[+]check-{n} ok\n" for n in range(1000)) * 1000


def judge(livez: tuple[int, str], readyz: tuple[int, str]):  # type: ignore[no-untyped-def]
    data = ApiserverHealthData(Endpoint("/livez", *livez), Endpoint("/readyz", *readyz))
    return evaluate(data, ApiserverHealthParams(), datetime.now(UTC))


def test_a_short_report_is_read_whole() -> None:
    body = read_health_body(READY)
    assert [line.name for line in body.lines] == ["ping", "etcd"]
    assert (body.truncated, body.size) == (False, len(READY))


def test_a_million_lines_are_read_from_the_head_only_and_quickly() -> None:
    started = time.monotonic()
    body = read_health_body(MILLION)
    assert time.monotonic() - started < 0.5
    assert body.truncated
    assert len(body.lines) <= MAX_HEALTH_LINES
    assert body.size == len(MILLION)
    assert len(parse_health_body(MILLION)) == len(body.lines)
    assert len(parse_lines(MILLION)) == len(body.lines)


def test_a_line_cut_at_the_head_is_not_read_as_a_line() -> None:
    body = "[+]a ok\n" + "[+]" + "x" * MAX_HEALTH_BYTES + " ok\n"
    read = read_health_body(body)
    assert read.truncated
    assert [line.name for line in read.lines] == ["a"]


def test_more_lines_than_the_cap_within_the_bytes_is_truncated_too() -> None:
    body = "[+]a ok\n" * (MAX_HEALTH_LINES + 1)
    assert len(body) < MAX_HEALTH_BYTES
    assert read_health_body(body).truncated
    assert not read_health_body("[+]a ok\n" * MAX_HEALTH_LINES).truncated


def test_a_200_past_the_head_is_not_judged_healthy() -> None:
    started = time.monotonic()
    result = judge((200, READY), (200, MILLION))
    assert time.monotonic() - started < 1.0
    assert result.status is Status.ERROR
    assert result.summary == (
        f"apiserver /readyz: HTTP 200 with an answer of {len(MILLION)} characters, longer than "
        f"a health report ({MAX_HEALTH_LINES} lines or {MAX_HEALTH_BYTES} bytes read): "
        "not judged"
    )
    assert result.details["readyz"]["truncated"] is True
    assert len(result.details["readyz"]["checks"]) <= MAX_HEALTH_LINES


def test_a_failing_status_past_the_head_is_judged_by_its_status_and_the_head() -> None:
    failing = "[-]etcd failed: reason withheld\n" + MILLION
    result = judge((200, READY), (503, failing))
    assert result.status is Status.FAILED
    assert result.summary == "apiserver unhealthy: /readyz 503; failing: etcd"


def test_a_non_report_body_of_a_failing_status_is_previewed_from_its_head() -> None:
    result = judge((502, "<html>" + "x" * 10_000_000 + "</html>"), (200, READY))
    assert result.status is Status.FAILED
    assert result.errors[0].startswith("apiserver /livez: HTTP 502 '<html>xxx")
    assert len(result.errors[0]) < 200
