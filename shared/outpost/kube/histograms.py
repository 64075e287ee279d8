"""Prometheus histograms from a `/metrics` scrape: parsing, deltas between scrapes, quantiles.

Pure; `prometheus_client.parser` parses, this module does the arithmetic as Prometheus v3.16.0 does
(`promql/quantile.go` BucketQuantile ported line for line; tables in test_upstream_histograms.py). Deltas treat
a decrease or a changed bucket set as a counter reset, sum only shared boundaries (exact), and name what they
drop. `quantile` returns None for anything not finite: a caller must never read "no value" as within a
threshold. Details and differences from PromQL: docs/contracts.md "Parsing as upstream".
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from outpost.errors import MalformedResponse

LabelSet = tuple[tuple[str, str], ...]
"""A series' labels without `le`, sorted: a hashable key."""

INF = math.inf


@dataclass(frozen=True)
class Series:
    """One histogram series: cumulative bucket counts by upper bound, and its `_count`."""

    labels: LabelSet
    buckets: Mapping[float, float]
    count: float | None = None
    ignored: tuple[str, ...] = ()
    """`le` values that are not a number PromQL would use (NaN, unparseable, out of range): left out."""

    def label(self, name: str) -> str:
        return dict(self.labels).get(name, "")

    def with_inf(self) -> Series | None:
        """This series with a `+Inf` bucket (from `_count` when the bucket is missing), or None."""
        if INF in self.buckets:
            return self
        if self.count is None:
            return None
        return Series(self.labels, {**self.buckets, INF: self.count}, self.count, self.ignored)


@dataclass(frozen=True)
class Delta:
    series: dict[LabelSet, Series]
    resets: list[LabelSet] = field(default_factory=list)
    """Series taken from the second scrape alone (counter reset or bucket set changed)."""


def parse_histogram(text: str, name: str, where: str) -> dict[LabelSet, Series]:
    """Every series of histogram `name` in Prometheus text `text` (empty when the metric is absent)."""
    try:
        from prometheus_client.parser import text_string_to_metric_families

        families = list(text_string_to_metric_families(_family_lines(text, name)))
    except (ValueError, TypeError, IndexError) as error:
        raise MalformedResponse(
            f"{where}: not Prometheus text format ({type(error).__name__}: "
            f"{str(error).splitlines()[0][:120] if str(error) else ''})"
        ) from None
    buckets: dict[LabelSet, dict[float, float]] = {}
    ignored: dict[LabelSet, list[str]] = {}
    counts: dict[LabelSet, float] = {}
    for family in families:
        if family.name != name:
            continue
        for sample in family.samples:
            labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
            if sample.name == f"{name}_bucket":
                if "le" not in sample.labels:
                    raise MalformedResponse(f"{where}: {name}_bucket without a le label")
                bound = go_parse_float(sample.labels["le"])
                series = buckets.setdefault(labels, {})
                if bound is None or math.isnan(bound):
                    ignored.setdefault(labels, []).append(sample.labels["le"])
                elif bound not in series:  # a scrape keeps the first sample of a series (module doc)
                    series[bound] = float(sample.value)
            elif sample.name == f"{name}_count":
                counts.setdefault(labels, float(sample.value))
    return {
        labels: Series(labels, bucket, counts.get(labels), tuple(ignored.get(labels, ())))
        for labels, bucket in buckets.items()
    }


_GO_DIGITS = r"[0-9](?:_?[0-9])*"
_GO_HEX = r"[0-9a-fA-F](?:_?[0-9a-fA-F])*"
_GO_DECIMAL = re.compile(rf"[+-]?(?:{_GO_DIGITS}(?:\.(?:{_GO_DIGITS})?)?|\.{_GO_DIGITS})(?:[eE][+-]?{_GO_DIGITS})?")
_GO_HEXFLOAT = re.compile(rf"[+-]?0[xX]_?(?:{_GO_HEX}(?:\.(?:{_GO_HEX})?)?|\.{_GO_HEX})[pP][+-]?{_GO_DIGITS}")
_GO_SPECIAL = re.compile(r"([+-]?)(inf|infinity)|(nan)", re.IGNORECASE)


def go_parse_float(text: str) -> float | None:
    """Go's `strconv.ParseFloat(text, 64)`: the value, or None where Go returns an error (bad syntax, or beyond
    float64's range, where Go answers ±Inf with ErrRange). NaN is returned as NaN (`nan` in any case, unsigned)."""
    special = _GO_SPECIAL.fullmatch(text)
    if special:
        if special.group(3):
            return math.nan
        return -math.inf if special.group(1) == "-" else math.inf
    try:
        if _GO_DECIMAL.fullmatch(text):
            value = float(text.replace("_", ""))
        elif _GO_HEXFLOAT.fullmatch(text):
            value = float.fromhex(text.replace("_", ""))
        else:
            return None
    except (ValueError, OverflowError):
        return None
    return None if math.isinf(value) else value


def _family_lines(text: str, name: str) -> str:
    """Only the lines of family `name` (its HELP/TYPE comments and samples): a kube-apiserver scrape is
    several MB of other families, which the parser need not turn into objects. Each sample line starts
    with its metric name, so nothing of `name` is lost, and the parser still reads what is kept."""
    keep = []
    for line in text.splitlines():
        if line.startswith(name):
            rest = line[len(name) :]
            if rest[:1] in ("{", " ") or rest.startswith(("_bucket", "_count", "_sum", "_created")):
                keep.append(line)
        elif line.startswith("#") and (f" {name} " in line or line.endswith(f" {name}")):
            keep.append(line)
    return "\n".join(keep) + "\n"


def _went_down(before: Series, after: Series) -> bool:
    if any(after.buckets[bound] < value for bound, value in before.buckets.items()):
        return True
    return before.count is not None and after.count is not None and after.count < before.count


def delta(before: Mapping[LabelSet, Series], after: Mapping[LabelSet, Series]) -> Delta:
    """What each series counted between two scrapes (module doc: resets and new series)."""
    result: dict[LabelSet, Series] = {}
    resets: list[LabelSet] = []
    for labels, now in after.items():
        then = before.get(labels)
        if then is None:
            result[labels] = now
            continue
        if set(then.buckets) != set(now.buckets) or _went_down(then, now):
            result[labels] = now
            resets.append(labels)
            continue
        count = None if now.count is None or then.count is None else now.count - then.count
        result[labels] = Series(labels, {b: now.buckets[b] - then.buckets[b] for b in now.buckets}, count)
    return Delta(result, resets)


@dataclass(frozen=True)
class Aggregate:
    buckets: list[tuple[float, float]]
    """(upper bound, cumulative count), ascending, `+Inf` last."""
    series: int
    incomplete: list[LabelSet]
    coarsened: bool
    """The series did not all share one bucket set: only their common boundaries were kept."""

    @property
    def observations(self) -> float:
        return self.buckets[-1][1] if self.buckets else 0.0


def aggregate(series: Iterable[Series]) -> Aggregate:
    """The series summed bucket by bucket over their common boundaries (module doc)."""
    complete: list[Series] = []
    incomplete: list[LabelSet] = []
    for one in series:
        fixed = one.with_inf()
        if fixed is None:
            incomplete.append(one.labels)
        else:
            complete.append(fixed)
    if not complete:
        return Aggregate([], 0, incomplete, False)
    bound_sets = [set(one.buckets) for one in complete]
    common = set.intersection(*bound_sets)
    coarsened = any(bounds != common for bounds in bound_sets)
    totals = [(bound, sum(one.buckets[bound] for one in complete)) for bound in sorted(common)]
    return Aggregate(totals, len(complete), incomplete, coarsened)


SMALL_DELTA_TOLERANCE = 1e-12
"""promql/quantile.go `smallDeltaTolerance`."""
_MIN_NORMAL = 2.2250738585072014e-308
_MAX_FLOAT = 1.7976931348623157e308


def _almost_equal(a: float, b: float, epsilon: float) -> bool:
    """`util/almost.Equal` (the StaleNaN marker never reaches here: a scrape has no staleness markers)."""
    if math.isnan(a) and math.isnan(b):
        return True
    if a == b:
        return True
    abs_sum = abs(a) + abs(b)
    diff = abs(a - b)
    if a == 0 or b == 0 or abs_sum < _MIN_NORMAL:
        return diff < epsilon * _MIN_NORMAL
    return diff / min(abs_sum, _MAX_FLOAT) < epsilon


@dataclass(frozen=True)
class BucketQuantile:
    value: float
    forced_monotonic: bool = False
    fixed_precision: bool = False
    observations: float = math.nan
    """The `+Inf` count after coalescing and the monotonic envelope (NaN where Go returns before computing it)."""


def bucket_quantile(q: float, buckets: Iterable[tuple[float, float]]) -> BucketQuantile:
    """PromQL's `BucketQuantile(q, buckets)` for (upper bound, cumulative count) pairs, NaN included (module doc)."""
    if math.isnan(q):
        return BucketQuantile(math.nan)
    if q < 0:
        return BucketQuantile(-math.inf)
    if q > 1:
        return BucketQuantile(math.inf)
    ordered = sorted(buckets, key=lambda bucket: bucket[0])  # stable, by bound only, as slices.SortFunc
    if not ordered:
        return BucketQuantile(math.nan)
    if ordered[-1][0] != INF:
        return BucketQuantile(math.nan)
    coalesced: list[list[float]] = []
    for bound, count in ordered:
        if coalesced and coalesced[-1][0] == bound:
            coalesced[-1][1] += count
        else:
            coalesced.append([bound, count])
    forced = fixed = False
    previous = coalesced[0][1]
    for bucket in coalesced[1:]:
        current = bucket[1]
        if current == previous:
            continue
        if _almost_equal(previous, current, SMALL_DELTA_TOLERANCE):
            bucket[1] = previous
            fixed = True
            continue
        if current < previous:
            bucket[1] = previous
            forced = True
            continue
        previous = current
    observations = coalesced[-1][1]
    if len(coalesced) < 2 or observations == 0:
        return BucketQuantile(math.nan, forced, fixed, observations)
    rank = q * observations
    # sort.Search over all but the last bucket: the first index whose count is >= rank, else len-1.
    index = next((i for i in range(len(coalesced) - 1) if coalesced[i][1] >= rank), len(coalesced) - 1)
    if index == len(coalesced) - 1:
        return BucketQuantile(coalesced[-2][0], forced, fixed, observations)
    if index == 0 and coalesced[0][0] <= 0:
        return BucketQuantile(coalesced[0][0], forced, fixed, observations)
    start, end, count = 0.0, coalesced[index][0], coalesced[index][1]
    if index > 0:
        start = coalesced[index - 1][0]
        count -= coalesced[index - 1][1]
        rank -= coalesced[index - 1][1]
    try:
        return BucketQuantile(start + (end - start) * (rank / count), forced, fixed, observations)
    except ZeroDivisionError:  # Go's float division: x/0 is ±Inf, 0/0 is NaN
        ratio = math.nan if rank == 0 or math.isnan(rank) else math.copysign(math.inf, rank)
        return BucketQuantile(start + (end - start) * ratio, forced, fixed, observations)


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """The quantile a check may judge, or None for "no value" (module doc); never NaN or ±Inf."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is outside [0, 1]")
    result = bucket_quantile(q, [bucket for bucket in buckets if not math.isnan(bucket[0])])
    if not (result.observations > 0 and math.isfinite(result.observations)):
        return None
    return result.value if math.isfinite(result.value) else None


def select(series: Mapping[LabelSet, Series], keep: Callable[[Series], bool]) -> list[Series]:
    return [one for one in series.values() if keep(one)]
