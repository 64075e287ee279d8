from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from outpost.kube.timestamps import age_seconds, format_time, parse_time

NOW = datetime(2026, 12, 3, 11, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-03T11:00:00Z", NOW),
        ("2026-12-03T10:59:30.123456Z", NOW - timedelta(seconds=29, microseconds=876544)),
        ("2026-12-03T10:59:30.5Z", NOW - timedelta(seconds=29.5)),
        ("2026-12-03T10:59:30.123456789Z", NOW - timedelta(seconds=29, microseconds=876544)),
        ("2026-12-03T12:00:00+01:00", NOW),
        ("2026-12-03t11:00:00z", NOW),
        (None, None),
        ("", None),
    ],
)
def test_parse_time(text: str | None, expected: datetime | None) -> None:
    parsed = parse_time(text)
    assert parsed == expected
    if parsed is not None:
        assert parsed.tzinfo is UTC


@pytest.mark.parametrize("text", ["yesterday", "2026-12-03", "2026-12-03T11:00:00", "2026-13-03T11:00:00Z"])
def test_parse_time_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        parse_time(text)


@pytest.mark.parametrize(
    ("stamp", "age"),
    [
        ("2026-12-03T10:55:00Z", 300.0),
        (NOW - timedelta(seconds=40), 40.0),
        ("2026-12-03T11:00:05Z", -5.0),  # clock skew keeps its sign
        (None, None),
    ],
)
def test_age_seconds(stamp: str | datetime | None, age: float | None) -> None:
    assert age_seconds(stamp, NOW) == age


def test_age_refuses_naive_now() -> None:
    with pytest.raises(ValueError, match="aware"):
        age_seconds("2026-12-03T10:55:00Z", datetime(2026, 12, 3, 11))


def test_format_time_round_trips() -> None:
    moment = datetime(2026, 12, 3, 12, 0, 1, 250000, tzinfo=timezone(timedelta(hours=1)))
    assert format_time(moment) == "2026-12-03T11:00:01Z"
    assert format_time(moment, micro=True) == "2026-12-03T11:00:01.250000Z"
    assert parse_time(format_time(moment, micro=True)) == moment
