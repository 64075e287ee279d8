"""The Vigilmon stand-in over real HTTP on loopback, on a fake clock: alert, resolve, maintenance.

Pings and maintenance calls go through the product's own clients (`HeartbeatClient`, `VigilmonClient`), so
what is proven here is what a deployed function and `outpost maintenance` meet.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from fake_clock import FakeClock

from outpost.config import environment_file
from outpost.errors import ReportError
from outpost.heartbeat import HeartbeatClient, VigilmonClient
from outpost.secrets import Secret
from outpost.settings import load_settings
from outpost.tooling import monitors
from outpost_sandbox.vigilmon import Vigilmon


def ping(url: str) -> None:
    with HeartbeatClient(timeout_seconds=2, retries=0) as client:
        client.ping(Secret(url))


def test_monitors_come_from_outpost_monitors_json(vigilmon: Vigilmon) -> None:
    document = json.loads(monitors.render(load_settings(environment_file("local")), "json"))
    created = vigilmon.create_monitors(document)
    assert set(created) == {entry["check"] for entry in document["monitors"]}
    health = created["apiserver-health"]
    entry = next(m for m in document["monitors"] if m["check"] == "apiserver-health")
    assert (health.interval_seconds, health.grace_seconds) == (entry["interval_seconds"], entry["grace_seconds"])
    assert vigilmon.heartbeat_url(health.key).startswith(f"{vigilmon.base_url}/heartbeat/")


def test_alerts_once_when_overdue_and_resolves_on_the_next_ping(vigilmon: Vigilmon, clock: FakeClock) -> None:
    monitor = vigilmon.add_monitor("mon-1", check="apiserver-health", interval_seconds=60, grace_seconds=180)
    url = vigilmon.heartbeat_url("mon-1")
    ping(url)
    clock.advance(240)  # exactly interval + grace: not yet older than it
    assert vigilmon.evaluate() == []
    clock.advance(1)
    [alert] = vigilmon.evaluate()
    assert (alert.kind, alert.check, alert.at, alert.last_ping_at) == (
        "alert",
        "apiserver-health",
        clock.now,
        clock.now - 241,
    )
    clock.advance(600)
    assert vigilmon.evaluate() == []  # one outage, one alert
    ping(url)
    assert [e.kind for e in vigilmon.events] == ["alert", "resolve"]
    assert vigilmon.events[-1].at == clock.now
    assert monitor.alerting is False
    assert vigilmon.pings_for("mon-1") == 2


def test_a_monitor_that_never_pinged_alerts_from_its_creation(vigilmon: Vigilmon, clock: FakeClock) -> None:
    vigilmon.add_monitor("mon-1", check="koord-webhook", interval_seconds=60, grace_seconds=60)
    clock.advance(121)
    [alert] = vigilmon.evaluate()
    assert alert.last_ping_at is None


def test_unknown_or_revoked_heartbeat_is_404_and_recorded_nowhere(vigilmon: Vigilmon) -> None:
    vigilmon.add_monitor("mon-1", interval_seconds=60)
    with pytest.raises(ReportError, match="HTTP 404"):
        ping(vigilmon.heartbeat_url("mon-1") + "-revoked")
    assert vigilmon.pings == []


def test_no_alert_inside_a_maintenance_window_and_alerts_after_it(vigilmon: Vigilmon, clock: FakeClock) -> None:
    vigilmon.add_monitor("mon-7", check="kruise-webhook", interval_seconds=60, grace_seconds=180)
    ping(vigilmon.heartbeat_url("mon-7"))
    with VigilmonClient(vigilmon.api_url, Secret(vigilmon.api_key), retries=0) as client:
        client.start_maintenance("mon-7", 10)
    for _ in range(599):  # the whole window, second by second, silent
        clock.advance(1)
        assert vigilmon.evaluate() == []
    clock.advance(1)  # the window is over and the last ping is 600 s old
    [alert] = vigilmon.evaluate()
    assert alert.check == "kruise-webhook"
    assert vigilmon.maintenance_calls == [{"monitor_id": "mon-7", "duration_minutes": 10}]


def test_ending_a_window_early_restores_alerting(vigilmon: Vigilmon, clock: FakeClock) -> None:
    vigilmon.add_monitor("mon-7", interval_seconds=60, grace_seconds=60)
    with VigilmonClient(vigilmon.api_url, Secret(vigilmon.api_key), retries=0) as client:
        client.start_maintenance("mon-7", 30)
        clock.advance(300)
        assert vigilmon.evaluate() == []
        client.end_maintenance("mon-7")
    assert [e.kind for e in vigilmon.evaluate()] == ["alert"]


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ({"Authorization": "Bearer wrong"}, {"monitor_id": "mon-7", "duration_minutes": 5}, 401),
        ({}, {"monitor_id": "mon-7", "duration_minutes": 5}, 401),
        (None, {"monitor_id": "mon-8", "duration_minutes": 5}, 404),
        (None, {"monitor_id": "mon-7", "duration_minutes": -1}, 400),
        (None, {"monitor_id": "mon-7", "duration_minutes": True}, 400),
        (None, {"duration_minutes": 5}, 400),
    ],
)
def test_maintenance_calls_that_are_refused(
    vigilmon: Vigilmon, headers: dict[str, str] | None, body: dict[str, object], status: int
) -> None:
    vigilmon.add_monitor("mon-7", interval_seconds=60)
    sent = headers if headers is not None else {"Authorization": f"Bearer {vigilmon.api_key}"}
    answer = httpx.post(f"{vigilmon.api_url}/maintenance", json=body, headers=sent, timeout=5)
    assert answer.status_code == status
    assert vigilmon.maintenance_calls == []
    assert vigilmon.monitors["mon-7"].maintenance_until is None


def test_watch_evaluates_in_the_background(vigilmon: Vigilmon, clock: FakeClock) -> None:
    vigilmon.add_monitor("mon-1", check="leader-leases", interval_seconds=60, grace_seconds=60)
    vigilmon.watch(every_seconds=0.01)
    clock.advance(121)
    deadline = time.monotonic() + 5
    while not vigilmon.events and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [e.kind for e in vigilmon.events] == ["alert"]
