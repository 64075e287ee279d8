"""Recurring maintenance windows (issue 33, item 4): declared in the environment file, opened by the inhibitor.

A window (`maintenance_windows` in the file) names a 5-field cron expression read in an IANA time zone, a length in
minutes (at most `vigilmon.maintenance_max_minutes`) and the checks whose monitors it silences. The inhibitor, the
one deployed identity holding the Vigilmon API key, ticks every `TICK_MINUTES` and opens each window whose start
fell within the last `LOOKBACK_MINUTES`, for what is left of it: `duration_minutes` = the minutes from the tick to
the window's end (start + length), rounded up. Vigilmon's `POST /api/maintenance` sets a monitor's window to last
that long from the call (docs/contracts.md "Vigilmon interface"), so a second tick within the lookback asks for
the same end again: opening twice never lengthens a window, and a late tick opens only what is left. Ticks that
all fail for the whole lookback miss the window: the monitors alert as without it (fail-safe).

The cron dialect is the common one (crontab(5)): minute 0-59, hour 0-23, day of month 1-31, month 1-12, day of
week 0-7 (0 and 7 are Sunday); each field `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, or a comma list
of those; names (JAN, MON) and the non-standard `?`, `L`, `W`, `#` are refused. When both day fields are
restricted, a day matches either (crontab(5)). Times are local to the window's zone: a start in a skipped hour
(DST spring forward) never happens, one in a repeated hour (fall back) happens twice. Pure: no clock, no call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from outpost import registry
from outpost.config import RecurringWindow, Settings

TICK_MINUTES: Final = 1
"""How often the inhibitor's schedule calls it to open the recurring windows that are due."""

TICK: Final = "maintenance-windows"
"""The body's `tick` of a scheduled call of the inhibitor on Cloud Functions: `{"environment": E, "tick": TICK}`."""

LOOKBACK_MINUTES: Final = 5
"""A tick opens the windows whose start fell within this many minutes before it: a tick a few minutes late, or
the failure of a few ticks, still opens the window (for what is left of it)."""

_FIELDS: Final = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 7))


@dataclass(frozen=True)
class Cron:
    """A parsed 5-field cron expression: the values each field allows."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    """0 = Sunday ... 6 = Saturday (a 7 is read as 0)."""
    any_day: bool
    any_weekday: bool

    def matches(self, local: datetime) -> bool:
        """Whether the minute `local` (a wall-clock time in the window's zone) is a start."""
        if local.minute not in self.minutes or local.hour not in self.hours or local.month not in self.months:
            return False
        day = local.day in self.days
        weekday = (local.isoweekday() % 7) in self.weekdays
        if self.any_day and self.any_weekday:
            return True
        if self.any_day:
            return weekday
        if self.any_weekday:
            return day
        return day or weekday  # both restricted: either (crontab(5))


def _field(text: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise ValueError(f"{name}: an empty list item")
        spec, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) < 1:
                raise ValueError(f"{name}: step {step_text!r} is not a whole number of at least 1")
            step = int(step_text)
        if spec == "*":
            first, last = low, high
        else:
            start_text, dash, end_text = spec.partition("-")
            if not start_text.isdigit() or (dash and not end_text.isdigit()):
                raise ValueError(f"{name}: {part!r} is not a number, a range a-b or * (names are not read)")
            first = int(start_text)
            last = int(end_text) if dash else (high if slash else first)
            if first > last:
                raise ValueError(f"{name}: range {spec!r} runs backwards")
        if first < low or last > high:
            raise ValueError(f"{name}: {part!r} is outside {low}-{high}")
        values.update(range(first, last + 1, step))
    return frozenset(values)


def parse_cron(text: str) -> Cron:
    """A 5-field cron expression; ValueError naming the field and why otherwise."""
    parts = text.split()
    if len(parts) != len(_FIELDS):
        raise ValueError(f"{len(parts)} fields, expected 5 (minute hour day-of-month month day-of-week)")
    parsed = [_field(part, name, low, high) for part, (name, low, high) in zip(parts, _FIELDS, strict=True)]
    minutes, hours, days, months, weekdays = parsed
    return Cron(
        minutes,
        hours,
        days,
        months,
        frozenset(day % 7 for day in weekdays),
        any_day=parts[2] == "*",
        any_weekday=parts[4] == "*",
    )


def zone(name: str) -> ZoneInfo:
    """The IANA time zone `name`; ValueError otherwise."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown IANA time zone {name!r} (e.g. Europe/Berlin, Etc/UTC)") from None


def starts(window: RecurringWindow, after: datetime, until: datetime) -> list[datetime]:
    """The window's starts in (after, until], in UTC, whole minutes."""
    cron, local_zone = parse_cron(window.cron), zone(window.time_zone)
    minute = after.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
    found = []
    while minute <= until:
        if cron.matches(minute.astimezone(local_zone)):
            found.append(minute)
        minute += timedelta(minutes=1)
    return found


@dataclass(frozen=True)
class Due:
    """A recurring window a tick opens: `targets` (check -> monitor) for `minutes` from the tick."""

    name: str
    start: datetime
    minutes: int
    targets: dict[str, str]


def remaining_minutes(start: datetime, length: int, now: datetime) -> int:
    """What is left at `now` of a window of `length` minutes from `start`, in whole minutes rounded up (0: over)."""
    left = (start + timedelta(minutes=length) - now).total_seconds()
    return max(0, math.ceil(left / 60))


def targets(settings: Settings, window: RecurringWindow) -> dict[str, str]:
    """The monitors `window` silences: each named, enabled check's `monitor_id` (validation refuses others)."""
    found = {}
    for check in window.checks:
        configured = settings.checks.get(check)
        if configured is not None and configured.enabled and configured.monitor_id:
            found[check] = configured.monitor_id
    return found


def due(settings: Settings, now: datetime) -> list[Due]:
    """The windows a tick at `now` opens: each whose latest start fell within `LOOKBACK_MINUTES` and is not over."""
    found = []
    for window in settings.maintenance_windows:
        recent = starts(window, now - timedelta(minutes=LOOKBACK_MINUTES), now)
        if not recent:
            continue
        start = recent[-1]
        minutes = remaining_minutes(start, window.minutes, now)
        monitors = targets(settings, window)
        if minutes and monitors:
            found.append(Due(window.name, start, minutes, monitors))
    return found


def open_minutes(settings: Settings, check: str, now: datetime) -> int:
    """What is left at `now` of the longest recurring window open on `check`'s monitor (0: none): a hold-back
    window on that monitor must not end it early (`outpost.holdback.inhibitor`)."""
    longest = 0
    for window in settings.maintenance_windows:
        if check not in window.checks:
            continue
        for start in starts(window, now - timedelta(minutes=window.minutes), now):
            longest = max(longest, remaining_minutes(start, window.minutes, now))
    return longest


def recurring_window_problems(settings: Settings) -> list[str]:
    """Every reason a declared window could not be opened as written, as `path: reason` lines."""
    problems: list[str] = []
    longest = settings.vigilmon.maintenance_max_minutes
    seen: set[str] = set()
    for index, window in enumerate(settings.maintenance_windows):
        path = f"maintenance_windows.{index}"
        if window.name in seen:
            problems.append(f"{path}.name: {window.name!r} is declared twice")
        seen.add(window.name)
        try:
            parse_cron(window.cron)
        except ValueError as error:
            problems.append(f"{path}.cron: {error}")
        try:
            zone(window.time_zone)
        except ValueError as error:
            problems.append(f"{path}.time_zone: {error}")
        if window.minutes > longest:
            problems.append(
                f"{path}.minutes: {window.minutes} is longer than vigilmon.maintenance_max_minutes ({longest})"
            )
        for position, check in enumerate(window.checks):
            configured = settings.checks.get(check)
            if check not in registry.names():
                problems.append(f"{path}.checks.{position}: {check!r} is not a check of the catalogue")
            elif configured is None or not configured.enabled:
                problems.append(f"{path}.checks.{position}: {check} is not enabled in this environment")
            elif not configured.monitor_id:
                problems.append(f"{path}.checks.{position}: {check} has no monitor_id, so no window to open")
    if settings.maintenance_windows and settings.vigilmon.api_key is None:
        problems.append("vigilmon.api_key: not set, but maintenance_windows needs it: the inhibitor opens them with it")
    return problems
