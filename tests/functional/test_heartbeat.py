"""The heartbeat and Vigilmon seams against a real local HTTP server (no transport mocks)."""

from __future__ import annotations

import json
import logging
import time
import traceback

import pytest
from hostile import HostileServer, big_gzip_bomb, endless_body, stacked_gzip_bomb

from outpost.errors import ReportError
from outpost.heartbeat import HeartbeatClient, VigilmonClient
from outpost.logs import emit
from outpost.secrets import Secret

TOKEN = "hb-7Qx2mZ9kLp4RtW8v"


class SleepLog:
    """Records the backoff delays instead of sleeping them (the waits themselves are not under test)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def heartbeat_url(server) -> Secret:  # type: ignore[no-untyped-def]
    return Secret(f"{server.base_url}/api/heartbeat/{TOKEN}?source=outpost")


def rendered(error: BaseException) -> str:
    """The whole traceback as a platform would log it, chained exceptions included."""
    return "".join(traceback.format_exception(error))


def assert_no_token(*texts: str) -> None:
    for text in texts:
        assert TOKEN not in text
        assert "/api/heartbeat" not in text


def test_ping_once_on_success(receiver) -> None:  # type: ignore[no-untyped-def]
    sleep = SleepLog()
    with HeartbeatClient(timeout_seconds=2, retries=3, backoff_seconds=0.5, sleep=sleep) as client:
        client.ping(heartbeat_url(receiver), label="apiserver-health")
    assert [(r.method, r.path) for r in receiver.requests] == [("GET", f"/api/heartbeat/{TOKEN}?source=outpost")]
    assert sleep.delays == []


def test_retries_5xx_with_exponential_backoff_then_succeeds(receiver) -> None:  # type: ignore[no-untyped-def]
    receiver.script = [(500, {}, b"boom"), (503, {}, b"busy"), (200, {}, b"OK")]
    sleep = SleepLog()
    with HeartbeatClient(timeout_seconds=2, retries=3, backoff_seconds=0.5, sleep=sleep) as client:
        client.ping(heartbeat_url(receiver), label="apiserver-health")
    assert len(receiver.requests) == 3
    assert sleep.delays == [0.5, 1.0]


def test_gives_up_after_retries_on_5xx(receiver, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    receiver.script = [(502, {}, b"bad gateway")]
    sleep = SleepLog()
    with (
        HeartbeatClient(timeout_seconds=2, retries=2, backoff_seconds=0.25, sleep=sleep) as client,
        pytest.raises(ReportError) as raised,
    ):
        client.ping(heartbeat_url(receiver), label="apiserver-health")
    assert str(raised.value) == "heartbeat for apiserver-health: HTTP 502 (gave up after 3 attempts)"
    assert len(receiver.requests) == 3
    assert sleep.delays == [0.25, 0.5]
    assert_no_token(str(raised.value), repr(raised.value), caplog.text)
    assert_no_token(rendered(raised.value))


def test_4xx_is_not_retried(receiver, caplog, capsys) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    receiver.script = [(404, {}, b"no such heartbeat")]
    sleep = SleepLog()
    client = HeartbeatClient(timeout_seconds=2, retries=3, backoff_seconds=0.5, sleep=sleep)
    with pytest.raises(ReportError) as raised:
        client.ping(heartbeat_url(receiver), label="koordlet-coverage")
    client.close()
    assert str(raised.value) == "heartbeat for koordlet-coverage: HTTP 404 (not retried)"
    assert len(receiver.requests) == 1
    assert sleep.delays == []
    # The error as it would be logged by an adapter: still no URL.
    emit("ERROR", str(raised.value), error=raised.value)
    assert_no_token(str(raised.value), caplog.text, capsys.readouterr().out, repr(client))


def test_redirect_is_not_followed(receiver) -> None:  # type: ignore[no-untyped-def]
    receiver.script = [(302, {"Location": "http://127.0.0.1:9/elsewhere"}, b"")]
    with (
        HeartbeatClient(timeout_seconds=2, retries=3, sleep=SleepLog()) as client,
        pytest.raises(ReportError, match=r"HTTP 302 \(redirect not followed, not retried\)"),
    ):
        client.ping(heartbeat_url(receiver), label="x")
    assert len(receiver.requests) == 1


def test_timeout_is_retried_and_reported_without_url(receiver, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    receiver.script = ["hang", "hang", (200, {}, b"OK")]
    sleep = SleepLog()
    with HeartbeatClient(timeout_seconds=0.3, retries=2, backoff_seconds=0.1, sleep=sleep) as client:
        client.ping(heartbeat_url(receiver), label="apiserver-health")
    assert len(receiver.requests) == 3
    assert sleep.delays == [0.1, 0.2]
    assert "timed out after 0.3s" in caplog.text
    assert_no_token(caplog.text)


def test_timeout_exhausted(receiver) -> None:  # type: ignore[no-untyped-def]
    receiver.script = ["hang"]
    with (
        HeartbeatClient(timeout_seconds=0.2, retries=1, backoff_seconds=0, sleep=SleepLog()) as client,
        pytest.raises(ReportError) as raised,
    ):
        client.ping(heartbeat_url(receiver), label="apiserver-health")
    assert str(raised.value) == "heartbeat for apiserver-health: timed out after 0.2s (gave up after 2 attempts)"
    assert len(receiver.requests) == 2
    assert_no_token(rendered(raised.value))


def test_connection_refused_is_retried(closed_port: int) -> None:
    sleep = SleepLog()
    url = Secret(f"http://127.0.0.1:{closed_port}/api/heartbeat/{TOKEN}")
    with (
        HeartbeatClient(timeout_seconds=1, retries=2, backoff_seconds=0.1, sleep=sleep) as client,
        pytest.raises(ReportError) as raised,
    ):
        client.ping(url, label="apiserver-health")
    assert str(raised.value) == (
        "heartbeat for apiserver-health: connection failed (ConnectError) (gave up after 3 attempts)"
    )
    assert sleep.delays == [0.1, 0.2]
    assert_no_token(rendered(raised.value))


@pytest.mark.parametrize(
    "url",
    [
        f"http://vigilmon.example/api/heartbeat/{TOKEN}",  # clear text off the machine
        f"ftp://127.0.0.1/api/heartbeat/{TOKEN}",
        f"not a url /api/heartbeat/{TOKEN}",
        "",
    ],
)
def test_refuses_unsafe_or_invalid_url_without_quoting_it(url: str) -> None:
    with HeartbeatClient(sleep=SleepLog()) as client, pytest.raises(ReportError) as raised:
        client.ping(Secret(url), label="apiserver-health")
    assert str(raised.value).startswith("heartbeat for apiserver-health: the URL ")
    assert_no_token(rendered(raised.value))


def test_vigilmon_maintenance_start_and_end(receiver) -> None:  # type: ignore[no-untyped-def]
    api_key = Secret("vk_live_9f8e7d6c5b4a3210")
    with VigilmonClient(f"{receiver.base_url}/api", api_key, sleep=SleepLog()) as vigilmon:
        vigilmon.start_maintenance("mon-123", 30)
        vigilmon.end_maintenance("mon-123")
        assert "vk_live" not in repr(vigilmon)
    first, second = receiver.requests
    for request in (first, second):
        assert (request.method, request.path) == ("POST", "/api/maintenance")
        assert request.headers["Authorization"] == "Bearer vk_live_9f8e7d6c5b4a3210"
        assert request.headers["Content-Type"] == "application/json"
    assert json.loads(first.body) == {"monitor_id": "mon-123", "duration_minutes": 30}
    assert json.loads(second.body) == {"monitor_id": "mon-123", "duration_minutes": 0}


def test_vigilmon_rejected_key_is_not_retried_nor_echoed(receiver, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    receiver.script = [(401, {"Content-Type": "application/json"}, b'{"error":"bad key"}')]
    with (
        VigilmonClient(f"{receiver.base_url}/api", Secret("vk_live_9f8e7d6c5b4a3210"), sleep=SleepLog()) as v,
        pytest.raises(ReportError) as raised,
    ):
        v.start_maintenance("mon-123", 15)
    assert str(raised.value) == "vigilmon maintenance for monitor mon-123: HTTP 401 (not retried)"
    assert len(receiver.requests) == 1
    assert "vk_live" not in str(raised.value) + caplog.text


@pytest.mark.parametrize("minutes", [0, -5, True, 2.5])
def test_vigilmon_start_needs_positive_whole_minutes(receiver, minutes) -> None:  # type: ignore[no-untyped-def]
    with (
        VigilmonClient(f"{receiver.base_url}/api", Secret("vk_live_9f8e7d6c5b4a3210")) as vigilmon,
        pytest.raises(ValueError, match="duration_minutes"),
    ):
        vigilmon.start_maintenance("mon-123", minutes)
    assert receiver.requests == []


# -- issue 20: an answer is judged by its status line; no byte of its body is read -------------------------------


HOSTILE_ANSWERS = {
    "endless body": lambda: endless_body(200),
    "trickled body": lambda: endless_body(200, interval=0.5),
    "stacked gzip bomb": lambda: stacked_gzip_bomb(1024 * 1024 * 1024),
    "1 GiB gzip bomb": lambda: big_gzip_bomb(1024 * 1024 * 1024),
}


@pytest.mark.parametrize("answer", list(HOSTILE_ANSWERS))
def test_a_2xx_is_delivered_at_once_whatever_its_body(answer: str) -> None:
    with HostileServer(HOSTILE_ANSWERS[answer]()) as server:
        started = time.monotonic()
        with HeartbeatClient(timeout_seconds=2, retries=0, backoff_seconds=0, sleep=SleepLog()) as client:
            client.ping(Secret(f"{server.url}/api/heartbeat/{TOKEN}"), label="apiserver-health")
        assert time.monotonic() - started < 1.5
        assert [r.headers.get("accept-encoding") for r in server.requests] == ["identity"]


def test_a_5xx_with_an_endless_body_is_retried_without_reading_it() -> None:
    sleep = SleepLog()
    with HostileServer(endless_body(503)) as server:
        url = Secret(f"{server.url}/api/heartbeat/{TOKEN}")
        started = time.monotonic()
        with (
            HeartbeatClient(timeout_seconds=2, retries=2, backoff_seconds=0.1, sleep=sleep) as client,
            pytest.raises(ReportError, match=r"HTTP 503 \(gave up after 3 attempts\)") as caught,
        ):
            client.ping(url, label="apiserver-health")
        assert time.monotonic() - started < 1.5
        assert len(server.requests) == 3
    assert_no_token(rendered(caught.value))


def test_maintenance_answer_with_an_endless_body_is_not_read() -> None:
    with HostileServer(endless_body(200)) as server:
        started = time.monotonic()
        with VigilmonClient(f"{server.url}/api", Secret("vk_live_9f8e7d6c5b4a3210"), sleep=SleepLog()) as vigilmon:
            vigilmon.start_maintenance("mon-1", 5)
        assert time.monotonic() - started < 1.5
        assert [r.line for r in server.requests] == ["POST /api/maintenance HTTP/1.1"]
