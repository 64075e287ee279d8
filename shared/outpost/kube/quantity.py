"""Kubernetes resource quantities (`500m`, `2`, `1.5Gi`, `1e3`, `64Mi`) as exact decimals, read as the API
server's Go client reads them.

A port of k8s.io/apimachinery@v0.37.2 `pkg/api/resource/quantity.go` (tables in test_upstream_quantity.py): the
same grammar, whitespace trimmed as `UnmarshalJSON` does, exact Decimal values rounded away from zero to the
nano, BinarySI capped at 2^63-1. A malformed quantity is a ValueError quoting it, so a bad capacity is "could not
observe", never zero. Unlike Go's int64, `cpu_millis`/`memory_bytes` never wrap (docs/contracts.md).
"""

from __future__ import annotations

import re
from decimal import Decimal

MAX_ALLOWED = 2**63 - 1
"""upstream `maxAllowed`: the cap of a BinarySI quantity."""
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_GO_SPACE = (
    " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""Go's `unicode.IsSpace` (what `strings.TrimSpace` trims); Python's `str.strip()` also trims \\x1c-\\x1f."""


def _go_int64(text: str) -> int | None:
    """`strconv.ParseInt(text, 10, 64)`: an optional sign and ASCII digits, within int64."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not set(body) <= _DIGITS:
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _int32(value: int) -> int:
    """Go's `int32(value)` conversion of an int64: the low 32 bits, two's complement."""
    value &= 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """upstream `parseQuantityString`: (positive, value, numerator, fraction, suffix) or ValueError; `value` is
    the sign and number as written (what the arbitrary-precision path re-reads)."""
    positive, pos, end = True, 0, len(text)
    if text[:1] == "-":
        positive, pos = False, 1
    elif text[:1] == "+":
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return positive, text, text[start:], "", ""
    numerator = text[start:pos] or "0"
    fraction = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
        if pos >= end:
            return positive, text, numerator, fraction, ""
    number = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise ValueError("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    return positive, number, numerator, fraction, text[suffix_start:]


_INF_DEC = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)")
"""What `inf.Dec.SetString` reads (upstream's arbitrary-precision path re-reads the number with it)."""


def _fast_path(numerator: str, fraction: str, exponent: int, form: str) -> bool:
    """Whether upstream takes its int64 path (exact, no re-read, no rounding) rather than the inf.Dec one."""
    if form == "BinarySI":
        if exponent < 0 or fraction:
            return False
        precision = 15 - len(numerator) - int(exponent * 3 / 10) - 1
        return precision >= 0 and int(numerator) * 2**exponent < 2**63
    return 18 - (len(numerator) + len(fraction)) >= 0 and exponent - len(fraction) >= -9


def _interpret(suffix: str) -> tuple[int, int, str] | None:
    """upstream `suffixHandler.interpret`: (base, exponent, format) or None for an unknown suffix."""
    if suffix in _DECIMAL_EXPONENTS:
        return 10, _DECIMAL_EXPONENTS[suffix], "DecimalSI"
    if suffix in _BINARY_EXPONENTS:
        return 2, _BINARY_EXPONENTS[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = _go_int64(suffix[1:])
        if exponent is None:
            return None
        return 10, _int32(exponent), "DecimalExponent"
    return None


def _round_up_to_nano(coefficient: int, exponent: int) -> tuple[int, int]:
    """|value| = coefficient * 10**exponent rounded up (away from zero) to a multiple of 1e-9."""
    if exponent >= -9 or coefficient == 0:
        return coefficient, exponent
    shift = -9 - exponent
    if len(str(coefficient)) <= shift:  # below one nano: rounds up to exactly one (no 10**shift for huge shifts)
        return 1, -9
    quotient, remainder = divmod(coefficient, 10**shift)
    return quotient + (1 if remainder else 0), -9


def parse_quantity_format(value: str | int | float) -> tuple[Decimal, str]:
    """The quantity's exact value in base units and its upstream Format (DecimalSI, BinarySI, DecimalExponent)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"not a quantity: {value!r}")
    text = value.strip(_GO_SPACE) if isinstance(value, str) else repr(value)
    if not text:
        raise ValueError(f"not a quantity: {value!r} (empty)")
    if text == "0":
        return Decimal(0), "DecimalSI"
    try:
        positive, number, numerator, fraction, suffix = _split(text)
    except ValueError as error:
        raise ValueError(f"not a quantity: {value!r} ({error})") from None
    interpreted = _interpret(suffix)
    if interpreted is None:
        raise ValueError(f"not a quantity: {value!r} (unable to parse quantity's suffix)")
    base, exponent, form = interpreted
    if not _fast_path(numerator, fraction, exponent, form) and not _INF_DEC.fullmatch(number):
        raise ValueError(f"not a quantity: {value!r} (unable to parse numeric part of quantity)")
    coefficient = int(numerator + fraction)
    if base == 10:
        coefficient, decimal_exponent = coefficient, exponent - len(fraction)
    else:
        coefficient, decimal_exponent = coefficient * 2**exponent, -len(fraction)
    coefficient, decimal_exponent = _round_up_to_nano(coefficient, decimal_exponent)
    magnitude = Decimal(f"{coefficient}E{decimal_exponent}")
    if form == "BinarySI" and magnitude > MAX_ALLOWED:
        magnitude = Decimal(MAX_ALLOWED)
    if form == "BinarySI" and 0 < magnitude < 1:
        form = "DecimalSI"
    return (magnitude if positive else -magnitude), form


def parse_quantity(value: str | int | float) -> Decimal:
    """The quantity's value in base units (cores for CPU, bytes for memory), as upstream reads it (module doc)."""
    return parse_quantity_format(value)[0]


def _round_up(value: Decimal) -> int:
    """upstream `ScaledValue`: the magnitude rounded up, i.e. away from zero (`-1.5` is -2)."""
    return int(value.to_integral_value(rounding="ROUND_UP"))


def cpu_millis(value: str | int | float) -> int:
    """CPU in millicores, `MilliValue()`: rounded up (`100u` is 1m, `0.5` is 500m)."""
    return _round_up(parse_quantity(value).scaleb(3))


def memory_bytes(value: str | int | float) -> int:
    """Memory in bytes, `Value()`: rounded up (`1.5Gi` is 1610612736)."""
    return _round_up(parse_quantity(value))
