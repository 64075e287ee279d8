"""Go's own text parsers, as upstream reads annotations and fields: the same text is accepted or refused here as
there, so a value the scheduler ignores is ignored (and said) here too.

- `go_duration_seconds`: `time.ParseDuration` (`metav1.Duration`, koord's `waiting-time` and aggregated periods).
- `go_int32`: `strconv.ParseInt(text, 10, 32)` (koord's gang `min-available` and `total-number`).
"""

from __future__ import annotations

import re

_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_PART = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_GO_INT = re.compile(r"[+-]?[0-9]+")


def go_duration_seconds(text: str) -> float | None:
    """Seconds of a Go `time.ParseDuration` string (`600s`, `1h30m`, `1.5m`); None when Go would refuse it."""
    sign, rest = (-1.0, text[1:]) if text[:1] == "-" else (1.0, text[1:] if text[:1] == "+" else text)
    if rest == "0":
        return 0.0
    total, position = 0.0, 0
    while position < len(rest):
        match = _GO_PART.match(rest, position)
        if match is None:
            return None
        total += float(match.group(1)) * _GO_UNITS[match.group(2)]
        position = match.end()
    return sign * total if rest else None


def go_int32(text: str) -> int | None:
    """A Go `strconv.ParseInt(text, 10, 32)` value; None when Go would refuse it."""
    if not _GO_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**31) <= value < 2**31 else None
