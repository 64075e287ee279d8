"""apiserver-latency and outpost.kube.histograms over real /metrics text captured from the sandbox's kube-apiserver.

`scrape1`/`scrape2` are two real scrapes ~5 s apart (kube-apiserver v1.37, its current bucket set 0.005 … 60),
trimmed to the `apiserver_request_duration_seconds` and `apiserver_request_total` families. The other variants are
derived from them by text edits, each named by what it simulates: the pre-1.2x bucket set (40 boundaries: 0.01,
0.15, … also present), a scrape without `+Inf` lines, one without `+Inf` and `_count` for a series, a counter
reset (the API server restarted between the scrapes).
"""

from __future__ import annotations

import gzip
import math
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from outpost.checks.apiserver_latency import ApiserverLatencyParams, Scrapes, evaluate
from outpost.errors import MalformedResponse
from outpost.kube.histograms import INF, Series, aggregate, delta, parse_histogram, quantile
from outpost.result import Status
from outpost.settings import check_problems

FIXTURES = Path(__file__).parent / "fixtures" / "apiserver_latency"
NOW = datetime(2026, 12, 3, 13, 40, tzinfo=UTC)
METRIC = "apiserver_request_duration_seconds"
SCRAPE1 = gzip.decompress((FIXTURES / "scrape1.txt.gz").read_bytes()).decode()
SCRAPE2 = gzip.decompress((FIXTURES / "scrape2.txt.gz").read_bytes()).decode()
NEW_BOUNDS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60]
OLD_BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1,
              1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60]
_BUCKET = re.compile(r'^(?P<head>' + METRIC + r'_bucket\{(?P<labels>.*),le="(?P<le>[^"]+)"\}) (?P<value>\S+)$')


def old_bucket_set(text: str) -> str:
    """The same scrape as an older kube-apiserver would expose it: the 40-boundary set. A boundary the new set
    lacks gets the count of the nearest lower new boundary (cumulative counts stay monotonic and consistent)."""
    by_series: dict[str, dict[float, str]] = {}
    order: list[str] = []
    out: list[str] = []
    for line in text.splitlines():
        match = _BUCKET.match(line)
        if not match:
            out.append(line)
            continue
        if match["labels"] not in by_series:
            by_series[match["labels"]] = {}
            order.append(match["labels"])
            out.append(f"@@{match['labels']}")
        by_series[match["labels"]][float(match["le"])] = match["value"]
    result: list[str] = []
    for line in out:
        if not line.startswith("@@"):
            result.append(line)
            continue
        labels = line[2:]
        counts = by_series[labels]
        for bound in OLD_BOUNDS:
            lower = max((b for b in counts if b <= bound), default=None)
            value = counts[lower] if lower is not None else "0"
            result.append(f'{METRIC}_bucket{{{labels},le="{bound:g}"}} {value}')
        result.append(f'{METRIC}_bucket{{{labels},le="+Inf"}} {counts[INF]}')
    return "\n".join(result) + "\n"


def without_inf(text: str, drop_count_for: str | None = None) -> str:
    lines = [line for line in text.splitlines() if 'le="+Inf"' not in line]
    if drop_count_for:
        lines = [line for line in lines if not (line.startswith(f"{METRIC}_count") and drop_count_for in line)]
    return "\n".join(lines) + "\n"


def series_of(text: str, **labels: str) -> Series:
    for one in parse_histogram(text, METRIC, "test").values():
        if all(one.label(k) == v for k, v in labels.items()):
            return one
    raise AssertionError(f"no series with {labels}")


# -- the parser and the arithmetic ------------------------------------------------------------------


def test_real_scrape_parses_every_series_with_numeric_le_and_inf() -> None:
    series = parse_histogram(SCRAPE1, METRIC, "test")
    assert len(series) == 94
    lists = series_of(SCRAPE1, verb="LIST", resource="namespaces")
    assert sorted(lists.buckets) == [*NEW_BOUNDS, INF]
    assert lists.count == lists.buckets[INF]
    assert {one.label("verb") for one in series.values()} >= {"GET", "LIST", "CONNECT", "APPLY"}


def test_other_families_and_absent_metric() -> None:
    assert parse_histogram(SCRAPE1, "apiserver_no_such_histogram", "test") == {}
    assert parse_histogram("", METRIC, "test") == {}


def test_text_that_is_not_prometheus_is_malformed() -> None:
    with pytest.raises(MalformedResponse, match="not Prometheus text format"):
        parse_histogram(f'{METRIC}_bucket{{verb="GET",le="0.1"}} not-a-number\n', METRIC, "GET /metrics")


def test_delta_between_real_scrapes_counts_only_the_window() -> None:
    before, after = parse_histogram(SCRAPE1, METRIC, "t"), parse_histogram(SCRAPE2, METRIC, "t")
    window = delta(before, after)
    assert window.resets == []
    for labels, one in window.series.items():
        if labels in before:
            assert one.buckets[INF] == after[labels].buckets[INF] - before[labels].buckets[INF]
        assert all(value >= 0 for value in one.buckets.values())


def test_counter_reset_falls_back_to_the_second_scrape() -> None:
    restarted = re.sub(r"\} (\d+)$", lambda m: "} " + str(max(0, int(m[1]) // 10)), SCRAPE1, flags=re.M)
    before, after = parse_histogram(SCRAPE2, METRIC, "t"), parse_histogram(restarted, METRIC, "t")
    window = delta(before, after)
    assert window.resets, "a series whose counts went down is a reset"
    for labels in window.resets:
        assert window.series[labels] == after[labels]


def test_bucket_set_change_is_a_reset_and_mixed_sets_are_coarsened() -> None:
    before, after = parse_histogram(SCRAPE1, METRIC, "t"), parse_histogram(old_bucket_set(SCRAPE2), METRIC, "t")
    window = delta(before, after)
    assert set(window.resets) == set(before) & set(after)
    mixed = [series_of(SCRAPE1, verb="LIST", resource="namespaces"),
             series_of(old_bucket_set(SCRAPE1), verb="LIST", resource="pods")]
    combined = aggregate(mixed)
    assert combined.coarsened
    assert [bound for bound, _ in combined.buckets] == [*sorted(set(NEW_BOUNDS) & set(OLD_BOUNDS)), INF]
    assert combined.observations == sum(one.buckets[INF] for one in mixed)


def test_missing_inf_uses_count_and_without_count_the_series_is_named_incomplete() -> None:
    target = 'resource="namespaces"'
    no_inf = series_of(without_inf(SCRAPE1), verb="LIST", resource="namespaces")
    assert INF not in no_inf.buckets
    fixed = no_inf.with_inf()
    assert fixed is not None
    assert fixed.buckets[INF] == no_inf.count
    broken = series_of(without_inf(SCRAPE1, drop_count_for=target), verb="LIST", resource="namespaces")
    combined = aggregate([broken, series_of(SCRAPE1, verb="LIST", resource="pods")])
    assert combined.incomplete == [broken.labels]
    assert combined.series == 1


@pytest.mark.parametrize(
    ("q", "buckets", "expected"),
    [
        # Interpolation inside the bucket holding the rank (PromQL histogram_quantile).
        pytest.param(0.5, [(0.1, 50), (0.2, 100), (INF, 100)], 0.1, id="rank-at-boundary"),
        pytest.param(0.75, [(0.1, 50), (0.2, 100), (INF, 100)], 0.15, id="interpolated"),
        pytest.param(0.25, [(0.1, 50), (0.2, 100), (INF, 100)], 0.05, id="first-bucket-from-zero"),
        # The rank in +Inf: the highest finite boundary.
        pytest.param(0.99, [(0.1, 50), (0.2, 90), (INF, 100)], 0.2, id="inf-bucket"),
        # Non-monotonic counts are carried up, as Prometheus does.
        pytest.param(0.5, [(0.1, 60), (0.2, 50), (INF, 100)], 0.1 * 50 / 60, id="non-monotonic"),
        pytest.param(0.5, [(0.1, 0), (INF, 0)], None, id="no-observations"),
        pytest.param(0.5, [(INF, 10)], None, id="one-bucket"),
        pytest.param(0.5, [(0.1, 5), (0.2, 10)], None, id="no-inf"),
    ],
)
def test_quantile_is_histogram_quantile(q: float, buckets: list[tuple[float, float]], expected: float | None) -> None:
    value = quantile(q, buckets)
    if expected is None:
        assert value is None
    else:
        assert value is not None
        assert math.isclose(value, expected, rel_tol=1e-9)


# -- evaluate -----------------------------------------------------------------------------------------


def test_healthy_window_between_real_scrapes_is_ok_with_p99_per_verb() -> None:
    result = evaluate(Scrapes(after=SCRAPE2, before=SCRAPE1, interval_seconds=5.0), ApiserverLatencyParams(), NOW)
    assert result.status is Status.OK, result.errors
    verbs = result.details["verbs"]
    assert "WATCH" not in verbs
    assert "CONNECT" not in verbs
    assert verbs["LIST"]["judged"]
    assert verbs["LIST"]["quantile_seconds"] <= 5.0
    assert result.details["window"] == "5 s"
    assert "p99" in result.summary


def test_thresholds_below_observed_latency_fail_naming_the_verb() -> None:
    params = ApiserverLatencyParams(thresholds_seconds={"LIST": 0.001}, default_threshold_seconds=None)
    result = evaluate(Scrapes(after=SCRAPE2, before=SCRAPE1, interval_seconds=5.0), params, NOW)
    assert result.status is Status.FAILED
    (line,) = result.errors
    assert line.startswith("apiserver verb LIST: observed p99 ")
    assert line.endswith("(want <= 0.001 s)")
    assert "LIST" in result.summary


def test_cumulative_judges_one_scrape_since_start() -> None:
    params = ApiserverLatencyParams(cumulative=True, quantile=0.5)
    result = evaluate(Scrapes(after=SCRAPE1), params, NOW)
    assert result.status is Status.OK, result.errors
    assert result.details["window"] == "cumulative since API server start"
    assert "p50" in result.summary


def test_watch_and_streaming_subresources_are_excluded_even_when_slow() -> None:
    # WATCH and CONNECT (exec/attach/log/portforward/proxy) durations are stream lifetimes: a tiny threshold for
    # them changes nothing.
    params = ApiserverLatencyParams(cumulative=True, thresholds_seconds={"WATCH": 1e-9, "CONNECT": 1e-9},
                                    default_threshold_seconds=None)
    result = evaluate(Scrapes(after=SCRAPE1), params, NOW)
    assert result.status is Status.OK
    assert not {"WATCH", "CONNECT"} & set(result.details["verbs"])


def test_old_bucket_set_and_upgrade_between_scrapes() -> None:
    old = old_bucket_set(SCRAPE1)
    cumulative = evaluate(Scrapes(after=old), ApiserverLatencyParams(cumulative=True), NOW)
    assert cumulative.status is Status.OK, cumulative.errors
    upgraded = evaluate(Scrapes(after=SCRAPE2, before=old, interval_seconds=5.0), ApiserverLatencyParams(), NOW)
    assert upgraded.status is Status.OK, upgraded.errors
    assert upgraded.details["resets"], "the bucket-set change is reported"


def test_missing_inf_in_real_scrape_still_judged_from_count() -> None:
    result = evaluate(Scrapes(after=without_inf(SCRAPE1)), ApiserverLatencyParams(cumulative=True), NOW)
    assert result.status is Status.OK, result.errors
    assert result.details["incomplete"] == []


def test_metric_absent_is_error() -> None:
    result = evaluate(Scrapes(after="# nothing here\nprocess_cpu_seconds_total 1\n"), ApiserverLatencyParams(), NOW)
    assert result.status is Status.ERROR
    assert "apiserver_request_duration_seconds not exposed" in result.summary


def test_no_request_in_window_is_error_not_ok() -> None:
    result = evaluate(Scrapes(after=SCRAPE1, before=SCRAPE1, interval_seconds=5.0), ApiserverLatencyParams(), NOW)
    assert result.status is Status.ERROR
    assert "latency not observed" in result.summary


def test_interval_must_fit_the_deadline() -> None:
    with pytest.raises(ValidationError, match=r"does not fit in cluster\.deadline_seconds 30"):
        ApiserverLatencyParams.model_validate({"interval_seconds": 28}, context={"deadline_seconds": 30})
    ApiserverLatencyParams.model_validate({"interval_seconds": 28, "cumulative": True},
                                          context={"deadline_seconds": 30})
    ApiserverLatencyParams.model_validate({"interval_seconds": 20}, context={"deadline_seconds": 30})


def test_outpost_validate_refuses_an_interval_beyond_the_configured_deadline() -> None:
    raw = {"environment": "e", "cluster": {"name": "c", "auth": {"mode": "kubeconfig"}, "deadline_seconds": 20},
           "checks": {"apiserver-latency": {"params": {"interval_seconds": 18}}}}
    (problem,) = check_problems(raw)
    assert problem.startswith("checks.apiserver-latency.params")
    assert "does not fit in cluster.deadline_seconds 20" in problem
    raw["cluster"].pop("deadline_seconds")  # type: ignore[attr-defined]
    assert check_problems(raw) == []  # the default deadline (45 s) fits 18 + 5 s


def test_thresholds_are_upper_case_and_positive() -> None:
    with pytest.raises(ValidationError, match="upper case"):
        ApiserverLatencyParams(thresholds_seconds={"list": 1.0})
    with pytest.raises(ValidationError, match="must be > 0"):
        ApiserverLatencyParams(thresholds_seconds={"LIST": 0})
