"""apiserver-latency and outpost.kube.histograms over real /metrics text captured from the sandbox's kube-apiserver.

`scrape1`/`scrape2` are two real v1.37 scrapes ~5 s apart, trimmed to the request families; the other variants
are text edits of them named by what they simulate (the older 40-boundary bucket set, no `+Inf`, no `+Inf` nor
`_count`, a counter reset). `fetch` runs over the kit's fake API server with the warm store seeded as an earlier
run would leave it; real timing is tests/functional/test_apiserver_latency_warm.py.
"""

from __future__ import annotations

import gzip
import math
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kit import NOW, FakeApiServer, fake_cluster
from outpost.checks import apiserver_latency
from outpost.checks.apiserver_latency import ApiserverLatencyParams, Scrapes, evaluate
from outpost.cluster import warm
from outpost.errors import MalformedResponse
from outpost.kube.histograms import INF, Series, aggregate, delta, parse_histogram, quantile
from outpost.result import Status
from outpost.settings import check_problems

FIXTURES = Path(__file__).parent / "fixtures" / "apiserver_latency"
METRIC = "apiserver_request_duration_seconds"
SCRAPE1 = gzip.decompress((FIXTURES / "scrape1.txt.gz").read_bytes()).decode()
SCRAPE2 = gzip.decompress((FIXTURES / "scrape2.txt.gz").read_bytes()).decode()
NEW_BOUNDS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60]
OLD_BOUNDS = [
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1,
    1.25,
    1.5,
    1.75,
    2,
    2.5,
    3,
    3.5,
    4,
    4.5,
    5,
    6,
    7,
    8,
    9,
    10,
    15,
    20,
    25,
    30,
    40,
    50,
    60,
]
_BUCKET = re.compile(r"^(?P<head>" + METRIC + r'_bucket\{(?P<labels>.*),le="(?P<le>[^"]+)"\}) (?P<value>\S+)$')


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


def parsed(text: str) -> dict[tuple[tuple[str, str], ...], Series]:
    return parse_histogram(text, METRIC, "apiserver /metrics")


def scrapes(after: str, before: str | None = None, interval_seconds: float = 0.0, *, warm: bool = False) -> Scrapes:
    """What `fetch` hands `evaluate`: the scrapes parsed (`before`: this run's first, or the kept one when warm)."""
    return Scrapes(
        after=parsed(after),
        before=None if before is None else parsed(before),
        interval_seconds=interval_seconds,
        warm=warm,
    )


def restarted(text: str) -> str:
    """`text` as an API server that restarted since would expose it: every count lower (a tenth)."""
    return re.sub(r"\} (\d+)$", lambda m: "} " + str(max(0, int(m[1]) // 10)), text, flags=re.M)


@pytest.fixture(autouse=True)
def _nothing_kept() -> Iterator[None]:
    """Each test starts as a cold instance and leaves nothing for the next (the warm store is process-wide)."""
    warm.forget()
    yield
    warm.forget()


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
    mixed = [
        series_of(SCRAPE1, verb="LIST", resource="namespaces"),
        series_of(old_bucket_set(SCRAPE1), verb="LIST", resource="pods"),
    ]
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
    result = evaluate(scrapes(after=SCRAPE2, before=SCRAPE1, interval_seconds=5.0), ApiserverLatencyParams(), NOW)
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
    result = evaluate(scrapes(after=SCRAPE2, before=SCRAPE1, interval_seconds=5.0), params, NOW)
    assert result.status is Status.FAILED
    (line,) = result.errors
    assert line.startswith("apiserver verb LIST: observed p99 ")
    assert line.endswith("(want <= 0.001 s)")
    assert "LIST" in result.summary
    (step,) = result.next_steps
    assert step.failure == "slow-verb"
    assert step.command == (
        "kubectl get --raw '/metrics' | awk '/^apiserver_request_duration_seconds_sum/ && /verb=\"LIST\"/' | "
        "sort -g -k2 | tail -n 20"
    )


def test_cumulative_judges_one_scrape_since_start() -> None:
    params = ApiserverLatencyParams(cumulative=True, quantile=0.5)
    result = evaluate(scrapes(after=SCRAPE1), params, NOW)
    assert result.status is Status.OK, result.errors
    assert result.details["window"] == "cumulative since API server start"
    assert "p50" in result.summary


def test_watch_and_streaming_subresources_are_excluded_even_when_slow() -> None:
    # WATCH and CONNECT (exec/attach/log/portforward/proxy) durations are stream lifetimes: a tiny threshold for
    # them changes nothing.
    params = ApiserverLatencyParams(
        cumulative=True, thresholds_seconds={"WATCH": 1e-9, "CONNECT": 1e-9}, default_threshold_seconds=None
    )
    result = evaluate(scrapes(after=SCRAPE1), params, NOW)
    assert result.status is Status.OK
    assert not {"WATCH", "CONNECT"} & set(result.details["verbs"])


def test_old_bucket_set_and_upgrade_between_scrapes() -> None:
    old = old_bucket_set(SCRAPE1)
    cumulative = evaluate(scrapes(after=old), ApiserverLatencyParams(cumulative=True), NOW)
    assert cumulative.status is Status.OK, cumulative.errors
    upgraded = evaluate(scrapes(after=SCRAPE2, before=old, interval_seconds=5.0), ApiserverLatencyParams(), NOW)
    assert upgraded.status is Status.OK, upgraded.errors
    assert upgraded.details["resets"], "the bucket-set change is reported"


def test_missing_inf_in_real_scrape_still_judged_from_count() -> None:
    result = evaluate(scrapes(after=without_inf(SCRAPE1)), ApiserverLatencyParams(cumulative=True), NOW)
    assert result.status is Status.OK, result.errors
    assert result.details["incomplete"] == []


def test_metric_absent_is_error() -> None:
    result = evaluate(scrapes(after="# nothing here\nprocess_cpu_seconds_total 1\n"), ApiserverLatencyParams(), NOW)
    assert result.status is Status.ERROR
    assert "apiserver_request_duration_seconds not exposed" in result.summary
    assert [(step.failure, step.command) for step in result.next_steps] == [
        ("metric-absent", "kubectl get --raw '/metrics' | sed -n 1,20p")
    ]


def test_no_request_in_window_is_error_not_ok() -> None:
    result = evaluate(scrapes(after=SCRAPE1, before=SCRAPE1, interval_seconds=5.0), ApiserverLatencyParams(), NOW)
    assert result.status is Status.ERROR
    assert "latency not observed" in result.summary
    assert [step.failure for step in result.next_steps] == ["too-few-requests"]


def test_interval_must_fit_the_deadline() -> None:
    with pytest.raises(ValidationError, match=r"does not fit in cluster\.deadline_seconds 30"):
        ApiserverLatencyParams.model_validate({"interval_seconds": 28}, context={"deadline_seconds": 30})
    ApiserverLatencyParams.model_validate(
        {"interval_seconds": 28, "cumulative": True}, context={"deadline_seconds": 30}
    )
    ApiserverLatencyParams.model_validate({"interval_seconds": 20}, context={"deadline_seconds": 30})


def test_outpost_validate_refuses_an_interval_beyond_the_configured_deadline() -> None:
    raw = {
        "environment": "e",
        "cluster": {"name": "c", "auth": {"mode": "kubeconfig"}, "deadline_seconds": 20},
        "checks": {"apiserver-latency": {"params": {"interval_seconds": 18}}},
    }
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


# -- the cold wait and the kept scrape's age: parameters ---------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "cold_wait"),
    [
        pytest.param({}, ("cold_interval_seconds", 3.0), id="default"),
        pytest.param({"cold_interval_seconds": 1.5}, ("cold_interval_seconds", 1.5), id="cold_interval_seconds"),
        # The older name, set explicitly, is still the wait of a cold run.
        pytest.param({"interval_seconds": 10}, ("interval_seconds", 10.0), id="interval_seconds"),
    ],
)
def test_cold_wait_comes_from_the_parameter_set(raw: dict[str, Any], cold_wait: tuple[str, float]) -> None:
    params = ApiserverLatencyParams.model_validate(raw)
    assert params.cold_wait == cold_wait
    assert params.max_previous_age_seconds == 900


@pytest.mark.parametrize(
    ("raw", "deadline", "problem"),
    [
        pytest.param({"interval_seconds": 5, "cold_interval_seconds": 5}, None, "set only one", id="both-names"),
        pytest.param({"cold_interval_seconds": 0}, None, "greater than 0", id="no-wait"),
        pytest.param({"max_previous_age_seconds": 3601}, None, "less than or equal to 3600", id="age-too-long"),
        pytest.param({"max_previous_age_seconds": -1}, None, "greater than or equal to 0", id="age-negative"),
        pytest.param(
            {"cold_interval_seconds": 26},
            30,
            r"cold_interval_seconds 26 \+ 5 s for the scrapes does not fit in cluster\.deadline_seconds 30",
            id="cold-wait-beyond-deadline",
        ),
    ],
)
def test_wait_and_age_parameters_refused(raw: dict[str, Any], deadline: float | None, problem: str) -> None:
    context = {} if deadline is None else {"deadline_seconds": deadline}
    with pytest.raises(ValidationError, match=problem):
        ApiserverLatencyParams.model_validate(raw, context=context)


def test_default_cold_wait_fits_a_short_deadline() -> None:
    # 3 s + 5 s: a deadline the old 10 s default did not fit.
    ApiserverLatencyParams.model_validate({}, context={"deadline_seconds": 10})
    with pytest.raises(ValidationError, match="interval_seconds 10 "):
        ApiserverLatencyParams.model_validate({"interval_seconds": 10}, context={"deadline_seconds": 10})


# -- evaluate: the window, warm or cold ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "window", "previous"),
    [
        pytest.param(scrapes(SCRAPE2, SCRAPE1, 3.012), "3.012 s", "cold (waited 3 s)", id="cold"),
        pytest.param(scrapes(SCRAPE2, SCRAPE1, 297.456, warm=True), "297.456 s", "warm (kept 297.5 s ago)", id="warm"),
        pytest.param(scrapes(SCRAPE1), "cumulative since API server start", "none (cumulative)", id="cumulative"),
    ],
)
def test_window_and_previous_scrape_are_reported(data: Scrapes, window: str, previous: str) -> None:
    params = ApiserverLatencyParams(cumulative=data.before is None)
    result = evaluate(data, params, NOW)
    assert result.status is Status.OK, result.errors
    assert result.details["window"] == window
    assert result.details["previous_scrape"] == previous


@pytest.mark.parametrize("is_warm", [False, True], ids=["cold", "warm"])
@pytest.mark.parametrize(
    ("before", "after", "params", "status", "said"),
    [
        # A restart between the two scrapes: each series that went down is judged on what it counted since.
        pytest.param(SCRAPE2, restarted(SCRAPE1), {}, Status.OK, "within thresholds", id="counter-reset"),
        pytest.param(SCRAPE1, SCRAPE1, {}, Status.ERROR, "latency not observed", id="no-request-in-window"),
        pytest.param(
            SCRAPE1, SCRAPE2, {"min_requests": 10**9}, Status.ERROR, "latency not observed", id="too-few-requests"
        ),
    ],
)
def test_warm_window_is_judged_as_a_cold_one(
    before: str, after: str, params: dict[str, Any], status: Status, said: str, is_warm: bool
) -> None:
    result = evaluate(scrapes(after, before, 300.0, warm=is_warm), ApiserverLatencyParams(**params), NOW)
    assert result.status is status, result.errors
    assert said in result.summary
    if before is SCRAPE2:
        assert result.details["resets"], "the restarted series are named"
        since_restart = evaluate(scrapes(after), ApiserverLatencyParams(cumulative=True), NOW)
        assert result.details["verbs"] == since_restart.details["verbs"]


# -- fetch: which scrape is the window's start -----------------------------------------------------------------------


OTHER_CLUSTER = "other"
KEY = apiserver_latency._key(ApiserverLatencyParams())
SHORT = {"cold_interval_seconds": 0.05}


def served(text: str = SCRAPE2) -> FakeApiServer:
    return FakeApiServer().respond("/metrics", 200, text, content_type="text/plain; version=0.0.4")


@pytest.mark.parametrize(
    ("kept_by", "kept_age", "params", "warm_run"),
    [
        pytest.param(None, None, SHORT, False, id="nothing-kept"),
        pytest.param("fake", 300.0, SHORT, True, id="kept-300s-ago"),
        pytest.param("fake", 0.2, SHORT, False, id="kept-under-min-window"),
        pytest.param("fake", 1000.0, SHORT, False, id="kept-over-max-age"),
        pytest.param("fake", 300.0, {**SHORT, "max_previous_age_seconds": 200}, False, id="kept-over-configured-age"),
        pytest.param("fake", 300.0, {**SHORT, "max_previous_age_seconds": 0}, False, id="age-0-never-warm"),
        pytest.param(OTHER_CLUSTER, 300.0, SHORT, False, id="kept-by-another-cluster"),
        pytest.param("fake", 300.0, {"interval_seconds": 0.05}, True, id="older-name-set-still-warm"),
    ],
)
def test_fetch_judges_against_a_kept_scrape_only_when_usable(
    kept_by: str | None, kept_age: float | None, params: dict[str, Any], warm_run: bool
) -> None:
    api = served()
    checked = ApiserverLatencyParams.model_validate(params)
    if kept_by is not None and kept_age is not None:
        with fake_cluster(api, name=kept_by) as earlier:  # the kit's identity: the fake's name and the fake
            warm.keep(earlier.identity, KEY, apiserver_latency._Kept(parsed(SCRAPE1), time.monotonic() - kept_age))
    with fake_cluster(api) as cluster:
        data = apiserver_latency.fetch(cluster, checked)
        kept = warm.peek(cluster.identity, KEY)
    assert [r.path for r in api.requests] == ["/metrics"] * (1 if warm_run else 2)
    assert data.warm is warm_run
    if warm_run:
        assert data.interval_seconds == pytest.approx(300.0, abs=1.0)
        result = evaluate(data, checked, NOW)
        assert result.status is Status.OK, result.errors
        assert result.details["previous_scrape"].startswith("warm (kept 30")
    else:
        assert data.before == data.after  # the same text scraped twice, 0.05 s apart
        assert data.interval_seconds >= 0.05
    assert isinstance(kept, apiserver_latency._Kept), "every successful fetch keeps its scrape"
    assert kept.series == data.after
    assert time.monotonic() - kept.taken_at < 5


def test_a_scrape_without_the_metric_is_not_kept() -> None:
    params = ApiserverLatencyParams.model_validate(SHORT)
    api = served()
    with fake_cluster(api) as cluster:
        apiserver_latency.fetch(cluster, params)
        assert warm.peek(cluster.identity, KEY) is not None
    api.respond("/metrics", 200, "# nothing here\nprocess_cpu_seconds_total 1\n")
    with fake_cluster(api) as cluster:
        data = apiserver_latency.fetch(cluster, ApiserverLatencyParams(cumulative=True))
        assert warm.peek(cluster.identity, KEY) is None, "dropped: the next run is cold"
    assert evaluate(data, params, NOW).status is Status.ERROR


def test_cumulative_keeps_its_scrape_for_a_later_windowed_run() -> None:
    api = served()
    with fake_cluster(api) as cluster:
        apiserver_latency.fetch(cluster, ApiserverLatencyParams(cumulative=True))
        kept = warm.peek(cluster.identity, KEY)
    assert isinstance(kept, apiserver_latency._Kept)
    assert kept.series == parsed(SCRAPE2)
    assert [r.path for r in api.requests] == ["/metrics"]
