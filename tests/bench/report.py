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
    cpu_seconds: float = math.nan
    """User + system time of the contender's processes (GNU time), or of the one run inside a warm instance."""


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
        rows.append(
            [
                f"{other.contender} / {ours.contender}",
                ratio_text(times(other.bytes_received, ours.bytes_received)),
                ratio_text(times(other.requests, ours.requests)),
                ratio_text(times(other.wall_seconds, ours.wall_seconds)),
                ratio_text(times(other.peak_rss_kib, ours.peak_rss_kib)),
                ratio_text(times(other.apiserver_cpu_seconds, ours.apiserver_cpu_seconds))
                if ours.apiserver_cpu_seconds > 0 and other.apiserver_cpu_seconds > 0
                else "n/a",
            ]
        )
    return rows


RATIO_HEADERS = ("ratio (higher = Outpost cheaper)", "bytes", "requests", "wall", "peak RSS", "API server CPU")
RAW_HEADERS = ("contender", "wall", "bytes received", "requests", "peak RSS", "API server CPU", "result")


def raw_rows(figures: Sequence[Figures]) -> list[list[str]]:
    return [
        [
            f.contender,
            seconds_text(f.wall_seconds),
            size_text(f.bytes_received),
            str(f.requests),
            f"{f.peak_rss_kib / 1024:.0f} MB",
            seconds_text(f.apiserver_cpu_seconds),
            ("ok" if f.ok else "NOT OK") + (f" ({f.note})" if f.note else ""),
        ]
        for f in figures
    ]


def request_summary(lines: Sequence[str], limit: int = 8, width: int = 110) -> str:
    """The distinct requests in order of first use, with how often each was sent, e.g. 'GET /api/v1/nodes x2'."""
    counted: dict[str, int] = {}
    for line in lines:
        counted[line] = counted.get(line, 0) + 1
    shown = [line[:width] + (f" x{count}" if count > 1 else "") for line, count in list(counted.items())[:limit]]
    more = len(counted) - limit
    return "; ".join(shown) + (f"; and {more} other distinct request(s)" if more > 0 else "")


# Warm and cold side by side ------------------------------------------------------------------------------------
SIDE_HEADERS = (
    "check",
    "contender",
    "bytes received",
    "requests",
    "wall",
    "CPU",
    "peak RSS",
    "API server CPU",
    "result",
)


def side_rows(check: str, figures: Sequence[Figures | None]) -> list[list[str]]:
    """One row per contender of one check (None: no such contender for this check, e.g. no kubectl pipeline)."""
    rows: list[list[str]] = []
    for f in figures:
        if f is None:
            continue
        rows.append(
            [
                check if not rows else "",
                f.contender,
                size_text(f.bytes_received),
                str(f.requests),
                seconds_text(f.wall_seconds),
                seconds_text(f.cpu_seconds),
                f"{f.peak_rss_kib / 1024:.1f} MB",
                seconds_text(f.apiserver_cpu_seconds),
                ("ok" if f.ok else "NOT OK") + (f" ({f.note[:70]})" if f.note else ""),
            ]
        )
    return rows


def short_path(path: str) -> str:
    """A collection path as `namespace/resource` or `resource`, its query (selectors) left off."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if "namespaces" in parts[:-1]:
        at = parts.index("namespaces")
        if at + 2 < len(parts):
            return f"{parts[at + 1]}/{parts[-1]}"
    return parts[-1] if parts else path


def read_text(how: str) -> str:
    """One `details.reads` entry, shortened: 'watch +3 (1.2 kB)', 'list 100 (52.1 kB: no state kept)'."""
    head, _, rest = how.partition(", ")
    fields = rest.split(", ")
    if head == "watch" and fields:
        changes = fields[0].split(" ", 1)[0]
        received = next((f for f in fields if f.endswith(" B")), "")
        size = size_text(int(received[:-2])) if received[:-2].isdigit() else "?"
        return f"watch +{changes} ({size})"
    if head == "list" and fields:
        objects = fields[0].split(" ", 1)[0]
        tail = ", ".join(fields[1:])
        received, _, why = tail.partition(": ")
        size = size_text(int(received[:-2])) if received.endswith(" B") and received[:-2].isdigit() else "?"
        why = why.split(" (", 1)[0][:60]
        return f"list {objects} ({size}: {why})" if why else f"list {objects} ({size})"
    return how[:80]


def reads_summary(reads: dict[str, str], previous_scrape: str | None = None) -> str:
    """How a run read each collection (`details.reads`), e.g. 'watch 2, list 0: nodes watch +3 (1.2 kB); ...'."""
    if not reads:
        return f"scrape: {previous_scrape}" if previous_scrape else "no collection read"
    methods = [how.partition(",")[0] for how in reads.values()]
    tally = f"watch {methods.count('watch')}, list {methods.count('list')}"
    parts = "; ".join(f"{short_path(path)} {read_text(how)}" for path, how in reads.items())
    return f"{tally}: {parts}" + (f"; scrape: {previous_scrape}" if previous_scrape else "")


@dataclass(frozen=True)
class Baseline:
    """An earlier run's cold figures (None where that run did not print one)."""

    bytes_received: int
    wall_seconds: float
    requests: int | None = None
    peak_rss_mb: float | None = None


WALL_NOISE = 1.3
"""Single wall times move by +-30 % between runs on the shared 2-CPU machine (docs/benchmark.md)."""


def no_worse(now: Figures, then: Baseline) -> str:
    """Today's cold run against an earlier one: bytes and peak RSS within 5 %, requests no more, wall within the
    machine's noise. E.g. 'bytes 2.6 MB vs 2.6 MB, wall 4.10 s vs 4.60 s: no worse (met)'."""
    checks = [
        (
            f"bytes {size_text(now.bytes_received)} vs {size_text(then.bytes_received)}",
            now.bytes_received <= then.bytes_received * 1.05,
        )
    ]
    if then.requests is not None:
        checks.append((f"requests {now.requests} vs {then.requests}", now.requests <= then.requests))
    checks.append(
        (
            f"wall {seconds_text(now.wall_seconds)} vs {seconds_text(then.wall_seconds)}",
            now.wall_seconds <= then.wall_seconds * WALL_NOISE,
        )
    )
    if then.peak_rss_mb is not None:
        checks.append(
            (
                f"peak RSS {now.peak_rss_kib / 1024:.1f} MB vs {then.peak_rss_mb:.1f} MB",
                now.peak_rss_kib / 1024 <= then.peak_rss_mb * 1.05,
            )
        )
    worse = [text.split(" ", 1)[0] if not text.startswith("peak") else "peak RSS" for text, ok in checks if not ok]
    verdict = "no worse (met)" if not worse else f"worse in {', '.join(worse)} (MISSED)"
    return ", ".join(text for text, _ in checks) + f": {verdict}"
