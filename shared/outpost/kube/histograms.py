"""Prometheus histograms from a `/metrics` scrape: parsing, deltas between scrapes, quantiles.

Pure (no I/O). The text is parsed by `prometheus_client.parser` (the maintained parser of the
Prometheus text format), never by hand; this module only does the arithmetic.

Guarantees:
- `le` is parsed as a number, `+Inf` included;
- `delta(before, after)` subtracts per series (a series = one label set without `le`), the way
  Prometheus' `increase()` treats counters: a series whose buckets or count went DOWN (the API server
  restarted: a counter reset), or whose bucket boundaries changed (an upgrade changed the bucket
  set: it restarted too), contributes its `after` values, i.e. what it counted since the reset, and
  is named in `Delta.resets`; a series that appeared between the scrapes contributes all of its
  counts (it did not exist at the first scrape);
- series are summed bucket by bucket over the boundaries they all share (`+Inf` always among them):
  summing cumulative counts at a common boundary is exact, so a mix of old and new bucket sets is
  coarsened, never mis-added;
- a series without a `+Inf` bucket uses its `_count` as `+Inf` (the same number by definition of a
  Prometheus histogram); without either it is dropped and named in `incomplete`, never guessed;
- `quantile(q, buckets)` is PromQL's `histogram_quantile`: linear interpolation inside the bucket
  holding the rank, the lower edge 0 for the first bucket, the highest finite boundary when the rank
  falls into `+Inf`, and no value (None) with fewer than two buckets, no `+Inf`, or no observations.
"""

from __future__ import annotations

import math
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

    def label(self, name: str) -> str:
        return dict(self.labels).get(name, "")

    def with_inf(self) -> Series | None:
        """This series with a `+Inf` bucket (from `_count` when the bucket is missing), or None."""
        if INF in self.buckets:
            return self
        if self.count is None:
            return None
        return Series(self.labels, {**self.buckets, INF: self.count}, self.count)


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
        raise MalformedResponse(f"{where}: not Prometheus text format ({type(error).__name__}: "
                                f"{str(error).splitlines()[0][:120] if str(error) else ''})") from None
    buckets: dict[LabelSet, dict[float, float]] = {}
    counts: dict[LabelSet, float] = {}
    for family in families:
        if family.name != name:
            continue
        for sample in family.samples:
            labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
            if sample.name == f"{name}_bucket":
                try:
                    bound = float(sample.labels["le"])
                except (KeyError, ValueError):
                    raise MalformedResponse(f"{where}: {name}_bucket without a numeric le label") from None
                buckets.setdefault(labels, {})[bound] = float(sample.value)
            elif sample.name == f"{name}_count":
                counts[labels] = float(sample.value)
    return {labels: Series(labels, bucket, counts.get(labels)) for labels, bucket in buckets.items()}


def _family_lines(text: str, name: str) -> str:
    """Only the lines of family `name` (its HELP/TYPE comments and samples): a kube-apiserver scrape is
    several MB of other families, which the parser need not turn into objects. Each sample line starts
    with its metric name, so nothing of `name` is lost, and the parser still reads what is kept."""
    keep = []
    for line in text.splitlines():
        if line.startswith(name):
            rest = line[len(name):]
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


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """PromQL `histogram_quantile(q, ...)` over (upper bound, cumulative count) pairs; None = NaN."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is outside [0, 1]")
    ordered = sorted(buckets)
    if len(ordered) < 2 or ordered[-1][0] != INF:
        return None
    # Cumulative counts must not decrease (rounding, or a scrape racing an observation): as
    # Prometheus does, carry the running maximum forward.
    monotonic: list[tuple[float, float]] = []
    running = 0.0
    for bound, count in ordered:
        running = max(running, count)
        monotonic.append((bound, running))
    observations = monotonic[-1][1]
    if observations <= 0:
        return None
    rank = q * observations
    index = next(i for i, (_, count) in enumerate(monotonic) if count >= rank)
    if index == len(monotonic) - 1:
        return monotonic[-2][0]
    if index == 0 and monotonic[0][0] <= 0:
        return monotonic[0][0]
    start, below = (0.0, 0.0) if index == 0 else monotonic[index - 1]
    end, count = monotonic[index]
    in_bucket = count - below
    if in_bucket <= 0:
        return end
    return start + (end - start) * ((rank - below) / in_bucket)


def select(series: Mapping[LabelSet, Series], keep: Callable[[Series], bool]) -> list[Series]:
    return [one for one in series.values() if keep(one)]
