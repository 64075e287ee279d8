"""Formatting of the benchmark's figures: ratios first, raw figures after, targets printed beside (never asserted)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Figures:
    """One contender's run of one scenario."""

    contender: str
    wall_seconds: float
    bytes_received: int
    requests: int
    peak_rss_kib: int
    apiserver_cpu_seconds: float
    ok: bool
    note: str = ""
    request_lines: tuple[str, ...] = ()


def times(theirs: float, ours: float) -> float:
    """How many times `theirs` is of `ours` (>1: ours is smaller/faster); inf when ours is 0 and theirs is not."""
    if ours <= 0:
        return math.inf if theirs > 0 else 1.0
    return theirs / ours


def ratio_text(value: float) -> str:
    if math.isinf(value):
        return "inf"
    if value >= 100:
        return f"{value:.0f}x"
    if value >= 10:
        return f"{value:.1f}x"
    return f"{value:.2f}x"


def size_text(count: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(count) >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def seconds_text(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value * 1000:.0f} ms" if abs(value) < 1 else f"{value:.2f} s"


def target_text(met: bool) -> str:
    return "met" if met else "MISSED"


def at_least(value: float, target: float) -> str:
    """`value` against a `>= target` target, e.g. '12.3x (target >= 10x: met)'."""
    return f"{ratio_text(value)} (target >= {target:g}x: {target_text(value >= target)})"


def at_most(value: float, target: float, unit: str) -> str:
    return f"{value:.3g} {unit} (target <= {target:g} {unit}: {target_text(value <= target)})"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain text table, first column left-aligned, the others right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)]
    lines = []
    for index, row in enumerate([headers, *rows]):
        cells = [str(cell).ljust(widths[0]) if i == 0 else str(cell).rjust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def ratio_rows(ours: Figures, others: Sequence[Figures]) -> list[list[str]]:
    """One row per other contender: how many times more bytes, requests, time, memory and API server CPU it took."""
    rows = []
    for other in others:
        rows.append([
            f"{other.contender} / {ours.contender}",
            ratio_text(times(other.bytes_received, ours.bytes_received)),
            ratio_text(times(other.requests, ours.requests)),
            ratio_text(times(other.wall_seconds, ours.wall_seconds)),
            ratio_text(times(other.peak_rss_kib, ours.peak_rss_kib)),
            ratio_text(times(other.apiserver_cpu_seconds, ours.apiserver_cpu_seconds))
            if ours.apiserver_cpu_seconds > 0 and other.apiserver_cpu_seconds > 0 else "n/a",
        ])
    return rows


RATIO_HEADERS = ("ratio (higher = Outpost cheaper)", "bytes", "requests", "wall", "peak RSS", "API server CPU")
RAW_HEADERS = ("contender", "wall", "bytes received", "requests", "peak RSS", "API server CPU", "result")


def raw_rows(figures: Sequence[Figures]) -> list[list[str]]:
    return [[f.contender, seconds_text(f.wall_seconds), size_text(f.bytes_received), str(f.requests),
             f"{f.peak_rss_kib / 1024:.0f} MB", seconds_text(f.apiserver_cpu_seconds),
             ("ok" if f.ok else "NOT OK") + (f" ({f.note})" if f.note else "")] for f in figures]


def request_summary(lines: Sequence[str], limit: int = 8, width: int = 110) -> str:
    """The distinct requests in order of first use, with how often each was sent, e.g. 'GET /api/v1/nodes x2'."""
    counted: dict[str, int] = {}
    for line in lines:
        counted[line] = counted.get(line, 0) + 1
    shown = [line[:width] + (f" x{count}" if count > 1 else "") for line, count in list(counted.items())[:limit]]
    more = len(counted) - limit
    return "; ".join(shown) + (f"; and {more} other distinct request(s)" if more > 0 else "")
