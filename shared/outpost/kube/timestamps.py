"""Kubernetes timestamps: RFC 3339 `Time` (seconds) and `MicroTime` (microseconds), always UTC-aware.

Ages are computed against a `now` passed in, so verdicts are reproducible. A negative age (the writer's clock is
ahead) keeps its sign for the caller, because clamping to zero would make a skewed timestamp look fresh; past
`FUTURE_SKEW_SECONDS` checks judge it not fresh.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import Field

_FRACTION_DIGITS = 6

FUTURE_SKEW_SECONDS = 10.0
"""How far in the future a renewal or report time may be and still count as fresh: clock skew between the writer
(a manager's or kwok's host, which sets `renewTime` from its own clock) and this probe. NTP keeps hosts within
milliseconds of each other, so 10 s is already a broken clock; past it a time is not fresh but named, because a
writer that stopped with a renewal a day or a year ahead would otherwise look alive until then. Upstream's own
leader election never compares renewTime with its clock (client-go@v0.30.10 tools/leaderelection
leaderelection.go judges expiry by when it observed a change), so it needs no such bound; an outside observer
does."""


def future_skew_parameter(timestamp: str, default: float = FUTURE_SKEW_SECONDS) -> Any:
    """The `max_future_skew_seconds` parameter of a check that judges `timestamp` (one bound, one wording)."""
    return Field(
        default,
        ge=0,
        le=300,
        description=f"A {timestamp} further in the future than this is not fresh (clock skew beyond it).",
    )


def parse_time(value: str | None) -> datetime | None:
    """An aware UTC datetime from an RFC 3339 timestamp; None for None or ""."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"timestamp must be a string, got {type(value).__name__}")
    text = value.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    # fromisoformat takes 3 or 6 fraction digits only; the API server may send 1-9 (nanoseconds).
    if "." in text:
        head, _, rest = text.partition(".")
        digits = len(rest) - len(rest.lstrip("0123456789"))
        fraction, zone = rest[:digits], rest[digits:]
        text = f"{head}.{fraction[:_FRACTION_DIGITS].ljust(_FRACTION_DIGITS, '0')}{zone}" if fraction else head + zone
    if "T" not in text and "t" not in text:
        raise ValueError(f"not an RFC 3339 timestamp: {value!r}")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an RFC 3339 timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp without a time zone: {value!r}")
    return parsed.astimezone(UTC)


def age_seconds(timestamp: datetime | str | None, now: datetime) -> float | None:
    """Seconds from `timestamp` to `now` (negative under clock skew); None when there is no timestamp."""
    moment = parse_time(timestamp) if isinstance(timestamp, str) or timestamp is None else timestamp
    if moment is None:
        return None
    if now.tzinfo is None or moment.tzinfo is None:
        raise ValueError("age_seconds needs time-zone-aware datetimes")
    return (now - moment).total_seconds()


def format_time(moment: datetime, micro: bool = False) -> str:
    """`moment` as the API server writes it: `Time` (seconds) or, with `micro`, `MicroTime`."""
    if moment.tzinfo is None:
        raise ValueError("format_time needs a time-zone-aware datetime")
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")
