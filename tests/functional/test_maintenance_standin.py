"""`outpost maintenance start|end` end to end: the CLI, the monitors `outpost monitors` defines, the stand-in.

The monitors are created from the environment's own `outpost monitors` document, the window is opened and
closed by the real command over HTTP, and the stand-in's alert rule decides (on a fake clock): no alert
inside the window, an alert as soon as it is over (or ended) while the checks are still silent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fake_clock import FakeClock

from outpost.cli import main
from outpost.settings import load_settings
from outpost.tooling import monitors
from outpost_sandbox.vigilmon import Vigilmon

CHECKS = {"apiserver-health": "mon-health", "koord-webhook": "mon-webhook"}


@pytest.fixture
def env_file(tmp_path: Path, vigilmon: Vigilmon, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TEST_VIGILMON_KEY", vigilmon.api_key)
    path = tmp_path / "env.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "environment": "staging",
                "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}},
                "vigilmon": {"api_url": vigilmon.api_url, "api_key": "env:TEST_VIGILMON_KEY"},
                "heartbeat": {"retries": 0, "timeout_seconds": 2},
                "checks": {check: {"monitor_id": monitor_id} for check, monitor_id in CHECKS.items()},
            }
        )
    )
    vigilmon.create_monitors(monitors.document(load_settings(path)))
    return path


def overdue_after(vigilmon: Vigilmon) -> float:
    """Seconds of silence after which every monitor is overdue (the longest interval + grace)."""
    return max((m.interval_seconds or 0) + m.grace_seconds for m in vigilmon.monitors.values())


def test_no_alert_inside_the_window_and_alerts_after_it(
    env_file: Path, vigilmon: Vigilmon, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    assert set(vigilmon.monitors) == set(CHECKS.values())
    silent_for = overdue_after(vigilmon)
    minutes = int(silent_for // 60) + 5  # a window longer than it takes to go overdue
    assert main(["maintenance", "start", "--all", "--minutes", str(minutes), "--config", str(env_file)]) == 0
    start = clock.now
    for second in range(0, minutes * 60, 10):  # the checks stay silent all through the window
        clock.now = start + second
        assert vigilmon.evaluate() == []
    clock.now = start + minutes * 60 - 0.5
    assert vigilmon.evaluate() == []
    clock.now = start + minutes * 60
    assert {event.check for event in vigilmon.evaluate()} == set(CHECKS)
    assert vigilmon.api_key not in capsys.readouterr().out


def test_ending_the_window_early_lets_the_silence_alert(env_file: Path, vigilmon: Vigilmon, clock: FakeClock) -> None:
    assert main(["maintenance", "start", "--check", "koord-webhook", "--minutes", "60", "--config", str(env_file)]) == 0
    clock.now += overdue_after(vigilmon) + 1
    assert [event.check for event in vigilmon.evaluate()] == ["apiserver-health"]  # not in a window
    assert main(["maintenance", "end", "--check", "koord-webhook", "--config", str(env_file)]) == 0
    assert [event.check for event in vigilmon.evaluate()] == ["koord-webhook"]


def test_a_window_for_an_unknown_monitor_fails(
    env_file: Path, vigilmon: Vigilmon, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vigilmon.monitors.pop("mon-webhook")
    assert main(["maintenance", "start", "--all", "--minutes", "5", "--config", str(env_file)]) == 2
    assert "404" in capsys.readouterr().err
