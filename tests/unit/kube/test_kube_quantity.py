from __future__ import annotations

from decimal import Decimal

import pytest

from outpost.kube.quantity import cpu_millis, memory_bytes, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2", Decimal(2)),
        ("500m", Decimal("0.5")),
        ("100u", Decimal("0.0001")),
        ("5n", Decimal("5e-9")),
        ("1k", Decimal(1000)),
        ("3M", Decimal(3_000_000)),
        ("1G", Decimal(10**9)),
        ("2T", Decimal(2 * 10**12)),
        ("1P", Decimal(10**15)),
        ("1E", Decimal(10**18)),
        ("1Ki", Decimal(1024)),
        ("64Mi", Decimal(64 * 2**20)),
        ("1.5Gi", Decimal(3 * 2**29)),
        ("1Ti", Decimal(2**40)),
        ("1Pi", Decimal(2**50)),
        ("1Ei", Decimal(2**60)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("12e-3", Decimal("0.012")),
        (".5", Decimal("0.5")),
        ("+1", Decimal(1)),
        ("-1", Decimal(-1)),
        (4, Decimal(4)),
        (0.25, Decimal("0.25")),
    ],
)
def test_parse_quantity(text: str | int | float, value: Decimal) -> None:
    assert parse_quantity(text) == value


# A bare suffix ("m", "Ki") is zero upstream, not garbage (tests/unit/kube/test_upstream_quantity.py).
@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "1Xi", "1KiB", "1e", "i", "1 Gi", True, None])
def test_garbage_is_refused_with_the_text(text: object) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity(text)  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "millis"), [("2", 2000), ("250m", 250), ("100u", 1), ("0.5", 500), (3, 3000)])
def test_cpu_millis(text: str | int, millis: int) -> None:
    assert cpu_millis(text) == millis


@pytest.mark.parametrize(
    ("text", "size"),
    [("1Gi", 2**30), ("1.5Gi", 1610612736), ("16318212Ki", 16318212 * 1024), ("1k", 1000), ("1500m", 2)],
)
def test_memory_bytes(text: str, size: int) -> None:
    assert memory_bytes(text) == size
