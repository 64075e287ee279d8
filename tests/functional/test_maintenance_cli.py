"""`outpost maintenance` against a real local Vigilmon stand-in (HTTP on loopback)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from outpost.cli import main
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver


@pytest.fixture
def vigilmon() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as receiver:
        yield receiver


def config(tmp_path: Path, api_url: str, *, with_monitor: bool = True) -> Path:
    checks: dict[str, object] = {"apiserver-health": {"monitor_id": "mon-42"} if with_monitor else {}}
    path = tmp_path / "env.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "environment": "staging",
                "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}},
                "vigilmon": {"api_url": api_url, "api_key": "env:TEST_VIGILMON_KEY"},
                "heartbeat": {"retries": 0, "timeout_seconds": 2},
                "checks": checks,
            }
        )
    )
    return path


def test_start_and_end_window(
    tmp_path: Path, vigilmon: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TEST_VIGILMON_KEY", vigilmon.api_key)
    path = str(config(tmp_path, f"{vigilmon.base_url}/api"))
    assert main(["maintenance", "start", "--all", "--minutes", "30", "--config", path]) == 0
    assert main(["maintenance", "end", "--check", "apiserver-health", "--config", path]) == 0
    assert vigilmon.maintenance == [
        {"monitor_id": "mon-42", "duration_minutes": 30},
        {"monitor_id": "mon-42", "duration_minutes": 0},
    ]
    output = capsys.readouterr()
    assert "maintenance started: apiserver-health (monitor mon-42) for 30 min" in output.out
    assert vigilmon.api_key not in output.out + output.err


def test_wrong_key_is_refused_and_not_printed(
    tmp_path: Path, vigilmon: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TEST_VIGILMON_KEY", "wrong-key-value")
    path = str(config(tmp_path, f"{vigilmon.base_url}/api"))
    assert main(["maintenance", "start", "--all", "--minutes", "5", "--config", path]) == 2
    output = capsys.readouterr()
    assert "401" in output.err
    assert "wrong-key-value" not in output.out + output.err
    assert vigilmon.maintenance == []


def test_missing_monitor_id_is_a_config_error(
    tmp_path: Path, vigilmon: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TEST_VIGILMON_KEY", vigilmon.api_key)
    path = str(config(tmp_path, f"{vigilmon.base_url}/api", with_monitor=False))
    assert main(["maintenance", "start", "--all", "--minutes", "5", "--config", path]) == 64
    assert "checks.apiserver-health.monitor_id: required" in capsys.readouterr().err
    assert vigilmon.maintenance == []
