"""Kubernetes resource quantities (`500m`, `2`, `1.5Gi`, `1e3`, `64Mi`) as exact decimals.

Guarantees: every suffix the API accepts (decimal SI n u m "" k M G T P E, binary Ki Mi Gi Ti Pi
Ei, and decimal exponents e/E) is read exactly (Decimal, no float rounding); anything else is a
ValueError that quotes the text, so a malformed capacity is "could not observe", never zero.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(\d+(\.\d*)?|\.\d+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)


def parse_quantity(value: str | int | float) -> Decimal:
    """The quantity's value in base units (cores for CPU, bytes for memory)."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(str(value))
    if not isinstance(value, str):
        raise ValueError(f"not a quantity: {value!r}")
    match = _QUANTITY.match(value.strip())
    if not match:
        raise ValueError(f"not a quantity: {value!r}")
    try:
        number = Decimal(match["number"])
    except InvalidOperation:
        raise ValueError(f"not a quantity: {value!r}") from None
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * (Decimal(10) ** int(suffix[1:]))


def cpu_millis(value: str | int | float) -> int:
    """CPU in millicores, rounded up as Kubernetes does (`100u` is 1m, `0.5` is 500m)."""
    millis = parse_quantity(value) * 1000
    return int(millis.to_integral_value(rounding="ROUND_CEILING"))


def memory_bytes(value: str | int | float) -> int:
    """Memory in bytes, rounded up (`1.5Gi` is 1610612736)."""
    return int(parse_quantity(value).to_integral_value(rounding="ROUND_CEILING"))
