"""Recurring maintenance windows (outpost.recurring): the 5-field cron matcher, the starts in a time zone, what a
tick opens and for how long, the validation of the declared windows by their paths, and the inhibitor's tick
against Vigilmon behind the real client (ScriptedVigilmon)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from kit.vigilmon import ScriptedVigilmon
from outpost.cli import main
from outpost.config import Settings, parse_settings
from outpost.errors import InvocationError, ReportError
from outpost.holdback import inhibitor
from outpost.recurring import (
    LOOKBACK_MINUTES,
    due,
    open_minutes,
    parse_cron,
    recurring_window_problems,
    remaining_minutes,
    starts,
)

NIGHTLY = {"name": "node-upgrades", "cron": "0 2 * * *", "time_zone": "Europe/Berlin", "minutes": 60}


def settings(
    *windows: dict[str, Any], hold_back: bool = False, checks: dict[str, dict[str, Any]] | None = None
) -> Settings:
    configured = {
        "apiserver-health": {"monitor_id": "mon-api"},
        "koordlet-coverage": {"monitor_id": "mon-koordlet"},
        "nodemetric-freshness": {"monitor_id": "mon-nodemetric"},
        **(checks or {}),
    }
    return parse_settings(
        {
            "environment": "staging",
            "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}, "deadline_seconds": 25},
            "vigilmon": {"api_key": "env:TEST_VIGILMON_KEY"},
            "hold_back": {"enabled": hold_back},
            "maintenance_windows": [
                {**NIGHTLY, "checks": ["koordlet-coverage", "nodemetric-freshness"], **window} for window in windows
            ],
            "checks": configured,
        }
    )


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# -- the cron matcher -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "local", "matches"),
    [
        ("0 2 * * *", "2026-12-07T02:00", True),
        ("0 2 * * *", "2026-12-07T02:01", False),
        ("*/15 * * * *", "2026-12-07T13:45", True),
        ("*/15 * * * *", "2026-12-07T13:50", False),
        ("30 1-3/2 * * *", "2026-12-07T03:30", True),  # hours 1 and 3
        ("30 1-3/2 * * *", "2026-12-07T02:30", False),
        ("0 2 * * 1-5", "2026-12-07T02:00", True),  # a Monday
        ("0 2 * * 0", "2026-12-06T02:00", True),  # a Sunday ...
        ("0 2 * * 7", "2026-12-06T02:00", True),  # ... which 7 names too
        ("0 2 * * 6,0", "2026-12-07T02:00", False),
        ("0 2 1 * 1", "2026-12-01T02:00", True),  # both day fields restricted: either matches (a Tuesday the 1st)
        ("0 2 1 * 1", "2026-12-07T02:00", True),  # ... a Monday the 7th
        ("0 2 1 * 1", "2026-12-08T02:00", False),
        ("0 2 * 12 *", "2026-11-07T02:00", False),
    ],
)
def test_cron_matches_as_crontab_reads_it(expression: str, local: str, matches: bool) -> None:
    assert parse_cron(expression).matches(datetime.fromisoformat(local)) is matches


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("0 2 * *", "4 fields, expected 5"),
        ("60 2 * * *", "minute: '60' is outside 0-59"),
        ("0 24 * * *", "hour: '24' is outside 0-23"),
        ("0 2 0 * *", "day of month: '0' is outside 1-31"),
        ("0 2 * 13 *", "month: '13' is outside 1-12"),
        ("0 2 * * 8", "day of week: '8' is outside 0-7"),
        ("0 2 * * MON", "day of week: 'MON' is not a number"),
        ("0 2 ? * *", "day of month: '?' is not a number"),
        ("*/0 * * * *", "minute: step '0' is not a whole number of at least 1"),
        ("0 5-3 * * *", "hour: range '5-3' runs backwards"),
        ("0,,5 2 * * *", "minute: an empty list item"),
    ],
)
def test_a_bad_cron_expression_is_refused_naming_the_field(expression: str, reason: str) -> None:
    with pytest.raises(ValueError, match="^" + reason.replace("?", r"\?").replace("*", r"\*")):
        parse_cron(expression)


def test_starts_are_read_in_the_windows_zone_across_daylight_saving() -> None:
    window = settings({}).maintenance_windows[0]
    # 02:00 in Berlin: 01:00 UTC in winter, 00:00 UTC in summer; on 29 March 2026 02:00 does not exist.
    assert starts(window, at("2026-12-06T12:00"), at("2026-12-07T12:00")) == [at("2026-12-07T01:00")]
    assert starts(window, at("2026-06-06T12:00"), at("2026-06-07T12:00")) == [at("2026-06-07T00:00")]
    assert starts(window, at("2026-03-28T12:00"), at("2026-03-29T12:00")) == []


# -- what a tick opens ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "minutes"),
    [
        ("2026-12-07T00:59", None),  # before the start
        ("2026-12-07T01:00", 60),
        ("2026-12-07T01:00:30", 60),  # 59.5 minutes left: rounded up
        ("2026-12-07T01:03", 57),  # a late tick opens what is left
        (f"2026-12-07T01:0{LOOKBACK_MINUTES}", None),  # past the lookback: the window's start is not due any more
    ],
)
def test_a_tick_opens_a_window_whose_start_is_due_for_what_is_left(now: str, minutes: int | None) -> None:
    opened = due(settings({}), at(now))
    assert [d.minutes for d in opened] == ([minutes] if minutes else [])
    if minutes:
        assert opened[0].targets == {"koordlet-coverage": "mon-koordlet", "nodemetric-freshness": "mon-nodemetric"}


def test_two_ticks_ask_for_the_same_end_so_opening_twice_never_lengthens_a_window() -> None:
    ends = set()
    for tick in ("2026-12-07T01:00", "2026-12-07T01:01", "2026-12-07T01:04"):
        (opened,) = due(settings({}), at(tick))
        ends.add(at(tick) + timedelta(minutes=opened.minutes))
    assert ends == {at("2026-12-07T02:00")}
    assert remaining_minutes(at("2026-12-07T01:00"), 60, at("2026-12-07T02:00")) == 0


def test_a_hold_never_cuts_a_recurring_window_short() -> None:
    assert open_minutes(settings({}), "nodemetric-freshness", at("2026-12-07T01:30")) == 30
    assert open_minutes(settings({}), "nodemetric-freshness", at("2026-12-07T02:00")) == 0
    assert open_minutes(settings({}), "apiserver-health", at("2026-12-07T01:30")) == 0
    vigilmon = ScriptedVigilmon()
    held = settings({}, hold_back=True)
    request = {"environment": "staging", "parent": "koordlet-coverage", "status": "failed"}
    outcome = inhibitor.handle(held, request, connect=vigilmon.connect, now=lambda: at("2026-12-07T01:30"), log=False)
    assert vigilmon.calls == []  # its 30 minutes left outlast the hold's few: left alone, never cut short
    assert outcome["in_recurring_window"] == ["nodemetric-freshness"]
    inhibitor.handle(held, request, connect=vigilmon.connect, now=lambda: at("2026-12-07T01:58"), log=False)
    assert [monitor for monitor, _ in vigilmon.calls] == ["mon-nodemetric"]  # 2 minutes left: the hold is longer


# -- the inhibitor's tick ---------------------------------------------------------------------------------------


SCHEDULED_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


@pytest.mark.parametrize(
    "document",
    [SCHEDULED_EVENT, {"environment": "staging", "tick": "maintenance-windows"}],
    ids=["EventBridge's scheduled event", "Cloud Scheduler's body"],
)
def test_the_inhibitors_tick_opens_the_due_windows(document: dict[str, Any]) -> None:
    vigilmon = ScriptedVigilmon()
    assert inhibitor.is_tick(document)
    outcome = inhibitor.tick(settings({}), document, connect=vigilmon.connect, now=lambda: at("2026-12-07T01:02"))
    assert vigilmon.calls == [("mon-koordlet", 58), ("mon-nodemetric", 58)]
    assert outcome["opened"][0]["window"] == "node-upgrades"
    quiet = ScriptedVigilmon()
    inhibitor.tick(settings({}), document, connect=quiet.connect, now=lambda: at("2026-12-07T12:00"))
    assert quiet.calls == []


def test_a_tick_for_another_environment_is_refused() -> None:
    with pytest.raises(InvocationError, match="tick refused: it is for environment 'prod'"):
        inhibitor.tick(settings({}), {"environment": "prod", "tick": "maintenance-windows"}, connect=None)


def test_a_window_that_fails_is_rolled_back_and_the_others_still_open() -> None:
    vigilmon = ScriptedVigilmon(lambda monitor, _minutes: 500 if monitor == "mon-nodemetric" else 200)
    two = settings({}, {"name": "api", "checks": ["apiserver-health"]})
    with pytest.raises(ReportError, match=r"node-upgrades: .*mon-nodemetric"):
        inhibitor.tick(two, SCHEDULED_EVENT, connect=vigilmon.connect, now=lambda: at("2026-12-07T01:00"))
    # node-upgrades: koordlet opened, nodemetric failed (a 5xx may have applied), both ended; api opened.
    assert vigilmon.calls == [
        ("mon-koordlet", 60),
        ("mon-nodemetric", 60),
        ("mon-koordlet", 0),
        ("mon-nodemetric", 0),
        ("mon-api", 60),
    ]


# -- validation -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "problem"),
    [
        ({"cron": "0 2 * *"}, "maintenance_windows.0.cron: 4 fields, expected 5"),
        ({"time_zone": "Mars/Olympus"}, "maintenance_windows.0.time_zone: unknown IANA time zone 'Mars/Olympus'"),
        ({"minutes": 241}, "maintenance_windows.0.minutes: 241 is longer than vigilmon.maintenance_max_minutes (240)"),
        ({"checks": ["no-such-check"]}, "maintenance_windows.0.checks.0: 'no-such-check' is not a check of the cata"),
        ({"checks": ["koord-webhook"]}, "maintenance_windows.0.checks.0: koord-webhook is not enabled in this envi"),
    ],
    ids=["bad cron", "unknown zone", "too long", "unknown check", "check not enabled"],
)
def test_a_bad_window_is_refused_by_its_path(window: dict[str, Any], problem: str) -> None:
    problems = recurring_window_problems(settings(window))
    assert [line[: len(problem)] for line in problems] == [problem]


def test_two_windows_of_one_name_and_a_check_without_monitor_are_refused() -> None:
    problems = recurring_window_problems(settings({}, {}, checks={"koordlet-coverage": {}}))
    assert "maintenance_windows.1.name: 'node-upgrades' is declared twice" in problems
    assert "maintenance_windows.0.checks.0: koordlet-coverage has no monitor_id, so no window to open" in problems


def test_outpost_validate_refuses_a_bad_window_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "staging.yaml"
    document = {
        "environment": "staging",
        "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/nonexistent"}},
        "vigilmon": {"api_key": "env:TEST_VIGILMON_KEY"},
        "maintenance_windows": [{**NIGHTLY, "cron": "0 25 * * *", "checks": ["apiserver-health"]}],
        "checks": {"apiserver-health": {"monitor_id": "a"}},
    }
    path.write_text(yaml.safe_dump(document))
    assert main(["validate", "--config", str(path)]) == 64
    assert "maintenance_windows.0.cron: hour: '25' is outside 0-23" in capsys.readouterr().err
