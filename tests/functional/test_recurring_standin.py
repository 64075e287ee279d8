"""Recurring maintenance windows end to end: the inhibitor's tick against the Vigilmon stand-in's real HTTP API
and its alert rule, on the stand-in's fake clock.

A nightly window (02:00 UTC, 60 minutes) on two monitors: a tick at its start opens it; ticks a few minutes
later ask for the same end (never longer); the covered monitors stay quiet inside it while the others alert, and
alert once it is over; a tick outside any window sends nothing. The Lambda entry opens a window on EventBridge's
scheduled event, the Cloud Functions target on Cloud Scheduler's body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import functions_framework
import httpx
import pytest
from fake_clock import FakeClock
from werkzeug.serving import make_server

from outpost.config import Settings
from outpost.holdback import inhibitor
from outpost.runtime.inhibitor import make_inhibitor_handler
from outpost.settings import load_settings
from outpost.tooling import monitors
from outpost.windows import connector
from outpost_sandbox.vigilmon import Vigilmon

COVERED = ["koordlet-coverage", "nodemetric-freshness"]
OTHER = "apiserver-health"
START = datetime(2026, 12, 8, 2, 0, tzinfo=UTC)
INHIBITOR_ENTRY = Path(__file__).resolve().parents[2] / "functions" / "inhibitor" / "main.py"
SCHEDULED_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


def write_env(tmp_path: Path, vigilmon: Vigilmon, cron: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TEST_VIGILMON_KEY", vigilmon.api_key)
    path = tmp_path / "staging.yaml"
    document: dict[str, Any] = {
        "environment": "staging",
        "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}},
        "heartbeat": {"timeout_seconds": 2, "retries": 0},
        "vigilmon": {"api_url": vigilmon.api_url, "api_key": "env:TEST_VIGILMON_KEY"},
        "maintenance_windows": [{"name": "node-upgrades", "cron": cron, "minutes": 60, "checks": COVERED}],
        "checks": {check: {"monitor_id": f"mon-{check}"} for check in [OTHER, *COVERED]},
    }
    path.write_text(json.dumps(document))
    vigilmon.create_monitors(monitors.document(load_settings(path)))
    return path


@pytest.fixture
def nightly(tmp_path: Path, vigilmon: Vigilmon, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> Settings:
    clock.now = START.timestamp() - 60  # the monitors are created a minute before the window
    return load_settings(write_env(tmp_path, vigilmon, "0 2 * * *", monkeypatch))


def tick_at(settings: Settings, clock: FakeClock) -> dict[str, Any]:
    at = datetime.fromtimestamp(clock.now, UTC)
    return inhibitor.tick(settings, SCHEDULED_EVENT, connect=connector(settings), now=lambda: at, log=False)


def alerted(vigilmon: Vigilmon) -> list[str]:
    return [event.check or "" for event in vigilmon.events if event.kind == "alert"]


def test_a_recurring_window_opens_at_its_start_and_silences_only_its_monitors_until_its_end(
    nightly: Settings, vigilmon: Vigilmon, clock: FakeClock
) -> None:
    clock.advance(60 + 30)  # 02:00:30, the first tick after the start
    assert [o["minutes"] for o in tick_at(nightly, clock)["opened"]] == [60]
    assert [(c["monitor_id"], c["duration_minutes"]) for c in vigilmon.maintenance_calls] == [
        ("mon-koordlet-coverage", 60),
        ("mon-nodemetric-freshness", 60),
    ]
    end = {check: vigilmon.monitor_for(check).maintenance_until for check in COVERED}
    clock.advance(150)  # 02:03: a later tick within the lookback asks for the same end, no later
    tick_at(nightly, clock)
    assert vigilmon.maintenance_calls[-1]["duration_minutes"] == 57
    for check in COVERED:
        assert abs((vigilmon.monitor_for(check).maintenance_until or 0) - (end[check] or 0)) <= 60
        assert (vigilmon.monitor_for(check).maintenance_until or 0) <= START.timestamp() + 3600
    # Nobody pings: inside the window only the uncovered monitor alerts; after it, the covered ones too.
    while clock.now < START.timestamp() + 3600 - 60:
        clock.advance(60)
        vigilmon.evaluate()
    assert alerted(vigilmon) == [OTHER]
    clock.now = START.timestamp() + 3600 + 1
    vigilmon.evaluate()
    assert sorted(alerted(vigilmon)) == sorted([OTHER, *COVERED])


def test_a_tick_outside_any_window_sends_nothing(nightly: Settings, vigilmon: Vigilmon, clock: FakeClock) -> None:
    clock.now = START.timestamp() + 10 * 60  # 02:10: past the lookback of 02:00's start
    assert tick_at(nightly, clock)["opened"] == []
    assert vigilmon.maintenance_calls == []


# -- the deployed entries: every minute is a start (cron * * * * *), so the real clock's tick is due -----------------


@pytest.fixture
def every_minute(tmp_path: Path, vigilmon: Vigilmon, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = write_env(tmp_path, vigilmon, "* * * * *", monkeypatch)
    monkeypatch.setenv("OUTPOST_CONFIG", str(path))
    return path


def test_the_lambda_entry_opens_the_due_window_on_the_scheduled_event(every_minute: Path, vigilmon: Vigilmon) -> None:
    handler = make_inhibitor_handler()
    outcome = handler(SCHEDULED_EVENT, None)
    assert [o["window"] for o in outcome["opened"]] == ["node-upgrades"]
    assert {c["monitor_id"] for c in vigilmon.maintenance_calls} == {f"mon-{check}" for check in COVERED}
    assert {c["duration_minutes"] for c in vigilmon.maintenance_calls} <= {59, 60}


@pytest.fixture
def inhibitor_url(every_minute: Path) -> Iterator[str]:
    app = functions_framework.create_app(target="http", source=str(INHIBITOR_ENTRY))  # type: ignore[no-untyped-call]
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    thread.join(5)


def test_the_cloud_functions_target_opens_the_due_window_on_cloud_schedulers_body(
    inhibitor_url: str, vigilmon: Vigilmon
) -> None:
    answer = httpx.post(inhibitor_url, json={"environment": "staging", "tick": "maintenance-windows"}, timeout=10)
    assert answer.status_code == 200, answer.text
    assert {c["monitor_id"] for c in vigilmon.maintenance_calls} == {f"mon-{check}" for check in COVERED}
    refused = httpx.post(inhibitor_url, json={"environment": "prod", "tick": "maintenance-windows"}, timeout=10)
    assert refused.status_code == 400
    assert "tick refused" in refused.json()["error"]
