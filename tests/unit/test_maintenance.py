"""`outpost maintenance`: the bounded window and the all-or-nothing start.

The Vigilmon client is the real one (`VigilmonClient`) over a scripted `httpx.MockTransport`, which answers each
maintenance call by its monitor and duration and records what was sent; nothing leaves the process. The same
rollback over real HTTP against the Vigilmon stand-in: tests/functional/test_maintenance_standin.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from kit.vigilmon import API_KEY, Script
from kit.vigilmon import ScriptedVigilmon as Vigilmon
from outpost.cli import main
from outpost.config import Settings, parse_settings
from outpost.errors import ConfigError, ReportError
from outpost.tooling import maintenance

MONITORS = {"apiserver-health": "mon-1", "koord-manager-health": "mon-2", "koord-webhook": "mon-3"}


def settings(**vigilmon: Any) -> Settings:
    return parse_settings(
        {
            "environment": "staging",
            "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}},
            "vigilmon": {"api_key": "env:TEST_VIGILMON_KEY", **vigilmon},
            "checks": {check: {"monitor_id": monitor} for check, monitor in MONITORS.items()},
        }
    )


def start(minutes: int) -> argparse.Namespace:
    return argparse.Namespace(action="start", check=None, all=True, minutes=minutes)


# -- the bound ------------------------------------------------------------------------------------------------


def test_the_default_longest_window_is_240_minutes() -> None:
    assert settings().vigilmon.maintenance_max_minutes == 240


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (0, "greater than or equal to 1"),
        (10_081, "less than or equal to 10080"),
        ("240", "valid integer"),
        (True, "valid integer"),
        (2.5, "valid integer"),
    ],
)
def test_a_bad_longest_window_is_refused_by_its_path(value: object, reason: str) -> None:
    with pytest.raises(ConfigError) as refused:
        settings(maintenance_max_minutes=value)
    [problem] = refused.value.problems
    assert problem.startswith("vigilmon.maintenance_max_minutes: ")
    assert reason in problem


def test_outpost_validate_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "env.yaml"
    document = {
        "environment": "staging",
        "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}},
        "vigilmon": {"maintenance_max_minutes": 0},
    }
    path.write_text(yaml.safe_dump(document))
    assert main(["validate", "--config", str(path)]) == 64
    assert "  vigilmon.maintenance_max_minutes: Input should be greater than or equal to 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("minutes", "configured", "refusal"),
    [
        (0, {}, "--minutes 0: a window lasts at least 1 minute"),
        (-5, {}, "--minutes -5: a window lasts at least 1 minute"),
        (241, {}, "--minutes 241: longer than the 240 min environment 'staging' allows"),
        (1_000_000_000, {}, "--minutes 1000000000: longer than the 240 min environment 'staging' allows"),
        (601, {"maintenance_max_minutes": 600}, "--minutes 601: longer than the 600 min environment 'staging' allows"),
    ],
)
def test_a_window_out_of_bounds_is_refused_before_any_request(
    minutes: int, configured: dict[str, int], refusal: str
) -> None:
    vigilmon = Vigilmon(lambda monitor, duration: 200)
    with pytest.raises(ConfigError) as refused:
        maintenance.run(start(minutes), settings(**configured), vigilmon.connect)
    assert refused.value.headline.startswith(refusal)
    assert refused.value.problems == []  # one line
    assert (vigilmon.clients, vigilmon.calls) == (0, [])


@pytest.mark.parametrize(("minutes", "configured"), [(1, {}), (240, {}), (600, {"maintenance_max_minutes": 600})])
def test_a_window_within_bounds_is_opened_for_every_monitor(minutes: int, configured: dict[str, int]) -> None:
    vigilmon = Vigilmon(lambda monitor, duration: 200)
    assert maintenance.run(start(minutes), settings(**configured), vigilmon.connect) == 0
    assert vigilmon.calls == [(monitor, minutes) for monitor in MONITORS.values()]


# -- all or nothing -------------------------------------------------------------------------------------------


def fails(monitor: str, status: int, *, on_end: dict[str, int] | None = None) -> Script:
    """`monitor`'s start answers `status`; an end answers `on_end[monitor]` if given; everything else 200."""

    def script(called: str, minutes: int) -> int:
        if minutes == 0:
            return (on_end or {}).get(called, 200)
        return status if called == monitor else 200

    return script


@pytest.mark.parametrize(
    ("script", "calls", "line"),
    [
        pytest.param(
            fails("mon-1", 429),
            [("mon-1", 60)],
            "maintenance start failed for apiserver-health (monitor mon-1): vigilmon maintenance for monitor mon-1: "
            "HTTP 429 (not retried); no window was opened",
            id="the first is refused: nothing to roll back",
        ),
        pytest.param(
            fails("mon-3", 404),
            [("mon-1", 60), ("mon-2", 60), ("mon-3", 60), ("mon-1", 0), ("mon-2", 0)],
            "maintenance start failed for koord-webhook (monitor mon-3): vigilmon maintenance for monitor mon-3: "
            "HTTP 404 (not retried); rolled back (window ended): apiserver-health (monitor mon-1), "
            "koord-manager-health (monitor mon-2)",
            id="the last is refused: the two opened are ended",
        ),
        pytest.param(
            fails("mon-2", 503),
            [("mon-1", 60), ("mon-2", 60), ("mon-1", 0), ("mon-2", 0)],
            "maintenance start failed for koord-manager-health (monitor mon-2): vigilmon maintenance for monitor "
            "mon-2: HTTP 503 (gave up after 1 attempt); rolled back (window ended): apiserver-health (monitor mon-1), "
            "koord-manager-health (monitor mon-2)",
            id="a 5xx may have been applied: its window is ended too",
        ),
        pytest.param(
            fails("mon-2", 0),
            [("mon-1", 60), ("mon-2", 60), ("mon-1", 0), ("mon-2", 0)],
            "maintenance start failed for koord-manager-health (monitor mon-2): vigilmon maintenance for monitor "
            "mon-2: connection failed (ConnectError) (gave up after 1 attempt); rolled back (window ended): "
            "apiserver-health (monitor mon-1), koord-manager-health (monitor mon-2)",
            id="no answer may have been applied: its window is ended too",
        ),
        pytest.param(
            fails("mon-3", 403, on_end={"mon-1": 503}),
            [("mon-1", 60), ("mon-2", 60), ("mon-3", 60), ("mon-1", 0), ("mon-2", 0)],
            "maintenance start failed for koord-webhook (monitor mon-3): vigilmon maintenance for monitor mon-3: "
            "HTTP 403 (not retried); rolled back (window ended): koord-manager-health (monitor mon-2); "
            "NOT rolled back, may stay silenced for up to 60 min: apiserver-health (monitor mon-1): vigilmon "
            "maintenance for monitor mon-1: HTTP 503 (gave up after 1 attempt); end them with "
            "`outpost maintenance end --check apiserver-health`",
            id="a rollback that fails is named, and the rest still rolled back",
        ),
        pytest.param(
            fails("mon-3", 401, on_end={"mon-1": 401, "mon-2": 0}),
            [("mon-1", 60), ("mon-2", 60), ("mon-3", 60), ("mon-1", 0), ("mon-2", 0)],
            "maintenance start failed for koord-webhook (monitor mon-3): vigilmon maintenance for monitor mon-3: "
            "HTTP 401 (not retried); NOT rolled back, may stay silenced for up to 60 min: apiserver-health "
            "(monitor mon-1): vigilmon maintenance for monitor mon-1: HTTP 401 (not retried), koord-manager-health "
            "(monitor mon-2): vigilmon maintenance for monitor mon-2: connection failed (ConnectError) (gave up "
            "after 1 attempt); end them with `outpost maintenance end --check apiserver-health --check "
            "koord-manager-health`",
            id="no rollback succeeds: every monitor still silenced is named",
        ),
    ],
)
def test_a_failed_start_ends_what_it_opened(
    script: Script, calls: list[tuple[str, int]], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    vigilmon = Vigilmon(script)
    with pytest.raises(ReportError) as failed:
        maintenance.run(start(60), settings(), vigilmon.connect)
    assert str(failed.value) == line
    assert vigilmon.calls == calls
    out = capsys.readouterr().out
    assert API_KEY not in out + line


def test_the_rollback_has_a_delivery_budget_of_its_own() -> None:
    """The start's client may have spent its budget on the failure; the rollback runs on a new client."""
    vigilmon = Vigilmon(fails("mon-2", 503))
    with pytest.raises(ReportError):
        maintenance.run(start(30), settings(), vigilmon.connect)
    assert vigilmon.clients == 2


def test_an_unexpected_failure_is_named_by_its_type_and_still_rolled_back() -> None:
    """A bug below the client (its text might hold anything) still ends what was opened; the line says only its
    type."""

    class Broken(Exception):
        pass

    def script(monitor: str, minutes: int) -> int:
        if monitor == "mon-2" and minutes:
            raise Broken(f"Authorization: Bearer {API_KEY}")
        return 200

    vigilmon = Vigilmon(script)
    with pytest.raises(ReportError) as failed:
        maintenance.run(start(30), settings(), vigilmon.connect)
    assert str(failed.value).startswith(
        "maintenance start failed for koord-manager-health (monitor mon-2): unexpected Broken; rolled back"
    )
    assert API_KEY not in str(failed.value)
    assert vigilmon.calls[-2:] == [("mon-1", 0), ("mon-2", 0)]


def test_end_tries_every_monitor_and_names_each_it_could_not_end(capsys: pytest.CaptureFixture[str]) -> None:
    vigilmon = Vigilmon(lambda monitor, minutes: 500 if monitor == "mon-2" else 200)
    args = argparse.Namespace(action="end", check=None, all=True)
    with pytest.raises(ReportError) as failed:
        maintenance.run(args, settings(), vigilmon.connect)
    assert vigilmon.calls == [("mon-1", 0), ("mon-2", 0), ("mon-3", 0)]
    assert str(failed.value) == (
        "could not end 1 of 3 windows, still silenced until they run out: koord-manager-health (monitor mon-2): "
        "vigilmon maintenance for monitor mon-2: HTTP 500 (gave up after 1 attempt); run `outpost maintenance end "
        "--check NAME` again for each"
    )
    assert "maintenance ended: koord-webhook (monitor mon-3)" in capsys.readouterr().out
