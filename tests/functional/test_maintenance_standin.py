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


HEARTBEAT_TOKENS = {check: f"hb-secret-{n}-token" for n, check in enumerate(CHECKS)}


@pytest.fixture
def env_with_heartbeats(env_file: Path, vigilmon: Vigilmon, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`env_file` with a heartbeat URL per check (secrets that must never be printed, whatever fails)."""
    document = yaml.safe_load(env_file.read_text())
    for n, check in enumerate(CHECKS):
        monkeypatch.setenv(f"TEST_HEARTBEAT_{n}", f"{vigilmon.base_url}/heartbeat/{HEARTBEAT_TOKENS[check]}")
        document["checks"][check]["heartbeat"] = f"env:TEST_HEARTBEAT_{n}"
    env_file.write_text(yaml.safe_dump(document))
    return env_file


def assert_no_secret(vigilmon: Vigilmon, output: str) -> None:
    assert vigilmon.api_key not in output
    for token in HEARTBEAT_TOKENS.values():
        assert token not in output


def test_a_refusal_part_way_ends_the_windows_already_opened(
    env_with_heartbeats: Path, vigilmon: Vigilmon, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    """apiserver-health opens, koord-webhook is refused (429): apiserver-health's window is ended again, so a
    silence alerts on both monitors as if the command had never run."""
    vigilmon.fail_maintenance = lambda monitor, minutes: 429 if monitor == "mon-webhook" else None
    argv = ["maintenance", "start", "--all", "--minutes", "60", "--config", str(env_with_heartbeats)]
    assert main(argv) == 2
    assert vigilmon.maintenance_calls == [
        {"monitor_id": "mon-health", "duration_minutes": 60},
        {"monitor_id": "mon-health", "duration_minutes": 0},
    ]
    assert all(monitor.maintenance_until is None for monitor in vigilmon.monitors.values())
    clock.now += overdue_after(vigilmon) + 1
    assert {event.check for event in vigilmon.evaluate()} == set(CHECKS)
    out, err = capsys.readouterr()
    assert "maintenance rolled back: apiserver-health (monitor mon-health)" in out
    [line] = err.splitlines()
    assert line.startswith("outpost maintenance: maintenance start failed for koord-webhook (monitor mon-webhook): ")
    assert "HTTP 429 (not retried)" in line
    assert "rolled back (window ended): apiserver-health (monitor mon-health)" in line
    assert "NOT rolled back" not in line
    assert_no_secret(vigilmon, out + err)


def test_a_rollback_that_fails_names_what_stays_silenced(
    env_with_heartbeats: Path, vigilmon: Vigilmon, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    """koord-webhook's start gets a 503 (it may have been applied, so it is ended too, and that works);
    apiserver-health's end gets a 503 as well: the line names it as still silenced, with the command to end it,
    and the stand-in agrees that it is."""

    def fail(monitor: str, minutes: int) -> int | None:
        if (monitor == "mon-webhook" and minutes > 0) or (monitor == "mon-health" and minutes == 0):
            return 503
        return None

    vigilmon.fail_maintenance = fail
    argv = ["maintenance", "start", "--all", "--minutes", "30", "--config", str(env_with_heartbeats)]
    assert main(argv) == 2
    assert vigilmon.maintenance_calls == [
        {"monitor_id": "mon-health", "duration_minutes": 30},
        {"monitor_id": "mon-webhook", "duration_minutes": 0},
    ]
    assert vigilmon.monitors["mon-health"].in_maintenance(clock.now)
    clock.now += overdue_after(vigilmon) + 1
    assert [event.check for event in vigilmon.evaluate()] == ["koord-webhook"]
    out, err = capsys.readouterr()
    [line] = err.splitlines()
    assert "maintenance start failed for koord-webhook (monitor mon-webhook): " in line
    assert "HTTP 503 (gave up after 1 attempt)" in line
    assert "rolled back (window ended): koord-webhook (monitor mon-webhook)" in line
    assert "NOT rolled back, may stay silenced for up to 30 min: apiserver-health (monitor mon-health): " in line
    assert "end them with `outpost maintenance end --check apiserver-health`" in line
    assert_no_secret(vigilmon, out + err)


def test_end_goes_on_past_a_failure_and_names_it(
    env_file: Path, vigilmon: Vigilmon, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["maintenance", "start", "--all", "--minutes", "30", "--config", str(env_file)]) == 0
    vigilmon.fail_maintenance = lambda monitor, minutes: 503 if monitor == "mon-health" else None
    assert main(["maintenance", "end", "--all", "--config", str(env_file)]) == 2
    assert vigilmon.monitors["mon-webhook"].maintenance_until is None
    assert vigilmon.monitors["mon-health"].maintenance_until is not None
    out, err = capsys.readouterr()
    assert "maintenance ended: koord-webhook (monitor mon-webhook)" in out
    assert (
        "could not end 1 of 2 windows, still silenced until they run out: apiserver-health (monitor mon-health)" in err
    )


@pytest.mark.parametrize("minutes", ["0", "241", "1000000000"])
def test_a_window_out_of_bounds_is_refused_before_any_request(
    env_file: Path, vigilmon: Vigilmon, capsys: pytest.CaptureFixture[str], minutes: str
) -> None:
    assert main(["maintenance", "start", "--all", "--minutes", minutes, "--config", str(env_file)]) == 64
    assert vigilmon.maintenance_calls == []
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"outpost maintenance: --minutes {minutes}: ")
    assert line.endswith("nothing was sent")
