"""`outpost.kube.histograms` against Prometheus's own histogram_quantile tests (prometheus@v0.316.0, v3.16.0):
`promql/quantile_test.go` verbatim (`tests/unit/fixtures/upstream/histograms.json`, read by `kit.upstream_vectors`)
and every classic evaluation of `promql/promqltest/testdata/histograms.test` whose input a /metrics scrape can carry.

EDGE and GO_FLOATS were computed by upstream's own code (BucketQuantile and helpers copied from v0.316.0, Go
1.26's ParseFloat), recorded as static tables. Deliberate differences (docs/contracts.md "Parsing as upstream"):
`quantile()` answers None, never NaN or ±Inf; a series without `+Inf` uses its `_count`; two `le` of one scrape
that parse equal are one series, the first kept, as Prometheus's scrape keeps it.
"""

from __future__ import annotations

import math

import pytest

from kit.upstream_vectors import rows, source
from outpost.kube.histograms import INF, aggregate, bucket_quantile, go_parse_float, parse_histogram, quantile

QUANTILE_TEST = source("histograms")
HISTOGRAMS_TEST = "github.com/prometheus/prometheus@v0.316.0 promql/promqltest/testdata/histograms.test"


def _float(text: str) -> float:
    return float(text.replace("+Inf", "inf").replace("-Inf", "-inf"))


def _text(name: str, series: list[tuple[str, list[tuple[str, float]]]], counts: dict[str, float] | None = None) -> str:
    """Prometheus text for histogram `name`: each (labels, [(le, cumulative count)])."""
    lines = [f"# TYPE {name} histogram"]
    for labels, buckets in series:
        for le, count in buckets:
            joined = ",".join(filter(None, [labels, f'le="{le}"']))
            lines.append(f"{name}_bucket{{{joined}}} {count}")
        if counts and labels in counts:
            lines.append(f"{name}_count{{{labels}}} {counts[labels]}" if labels else f"{name}_count {counts[labels]}")
    return "\n".join(lines) + "\n"


def _quantiles(q: float, text: str, name: str) -> dict[str, float | None]:
    """histogram_quantile(q, name_bucket) per series, through the real parser: {labels joined: value}."""
    parsed = parse_histogram(text, name, "test")
    out: dict[str, float | None] = {}
    for labels, series in parsed.items():
        complete = series.with_inf()
        key = ",".join(f'{k}="{v}"' for k, v in labels)
        out[key] = None if complete is None else quantile(q, sorted(complete.buckets.items()))
    return out


# -- quantile_test.go TestBucketQuantile_ForcedMonotonicity, verbatim -------------------------------------------------

FORCED_MONOTONICITY = {name: case for name, *case in rows("histograms", "forced_monotonicity")}
"""Every case but "empty buckets" (below): name -> (buckets as written, [upper bound, cumulative count], forced
monotonic, fixed precision, {q: expected value})."""


@pytest.mark.parametrize("name", sorted(FORCED_MONOTONICITY))
def test_bucket_quantile_forced_monotonicity(name: str) -> None:
    written, forced, fixed, expected = FORCED_MONOTONICITY[name]
    buckets = [(_float(le), _float(count)) for le, count in written]
    for q_text, value in expected.items():
        q = float(q_text)
        result = bucket_quantile(q, list(buckets))
        assert result.forced_monotonic is forced, f"{QUANTILE_TEST} {name}"
        assert result.fixed_precision is fixed, f"{QUANTILE_TEST} {name}"
        assert result.value == pytest.approx(value, rel=1e-12, abs=0), f"{QUANTILE_TEST} {name} q={q_text}"
        assert quantile(q, list(buckets)) == pytest.approx(value, rel=1e-12, abs=0)


@pytest.mark.parametrize(
    ("q", "expected"), [(0, math.nan), (0.5, math.nan), (1, math.nan), (math.nan, math.nan), (-1, -INF), (2, INF)]
)
def test_bucket_quantile_of_empty_buckets(q: float, expected: float) -> None:
    """TestBucketQuantile_ForcedMonotonicity "empty buckets"; quantile() answers None (or raises for q outside
    [0, 1]: a deliberate difference, PromQL's ±Inf would be misjudged by a threshold comparison)."""
    result = bucket_quantile(q, [])
    assert (math.isnan(result.value) and math.isnan(expected)) or result.value == expected, QUANTILE_TEST
    assert not result.forced_monotonic
    assert not result.fixed_precision
    if 0 <= q <= 1:
        assert quantile(q, []) is None
    else:
        with pytest.raises(ValueError, match="outside"):
            quantile(q, [])


# -- histograms.test: classic histogram_quantile evaluations ---------------------------------------------------------

TESTHISTOGRAM = _text(
    "testhistogram",
    [
        ('start="positive"', [("0.1", 50), (".2", 70), ("1e0", 110), ("+Inf", 120)]),
        ('start="negative"', [("-.2", 10), ("-0.1", 20), ("0.3", 20), ("+Inf", 30)]),
    ],
)
TESTHISTOGRAM2 = _text("testhistogram2", [("", [("0", 0), ("2", 1), ("4", 2), ("6", 3), ("+Inf", 3)])])
TESTHISTOGRAM3 = _text(
    "testhistogram3",
    [
        ('start="positive"', [("0", 0), ("0.1", 50), (".2", 70), ("1e0", 110), ("+Inf", 110)]),
        ('start="negative"', [("-.25", 0), ("-.2", 10), ("-0.1", 20), ("0.3", 20), ("+Inf", 20)]),
    ],
    counts={'start="positive"': 110, 'start="negative"': 20},
)
REQUEST_DURATION = _text(
    "request_duration_seconds",
    [
        ('job="job1",instance="ins1"', [("0.1", 10), ("0.2", 30), ("+Inf", 40)]),
        ('job="job1",instance="ins2"', [("0.1", 20), ("0.2", 50), ("+Inf", 60)]),
        ('job="job2",instance="ins1"', [("0.1", 30), ("0.2", 40), ("+Inf", 60)]),
        ('job="job2",instance="ins2"', [("0.1", 40), ("0.2", 70), ("+Inf", 90)]),
    ],
)
NONMONOTONIC = _text(
    "nonmonotonic", [("", [("0.1", 20), ("1", 10), ("10", 50), ("100", 40), ("1000", 90), ("+Inf", 80)])]
)
POS, NEG = 'start="positive"', 'start="negative"'
PROMQL_CASES = [
    # (histogram text, metric, q, {series: expected}); None = NaN (no value)
    (TESTHISTOGRAM3, "testhistogram3", 0, {POS: 0, NEG: -0.25}),
    (TESTHISTOGRAM3, "testhistogram3", 0.25, {POS: 0.055, NEG: -0.225}),
    (TESTHISTOGRAM3, "testhistogram3", 0.5, {POS: 0.125, NEG: -0.2}),
    (TESTHISTOGRAM3, "testhistogram3", 0.75, {POS: 0.45, NEG: -0.15}),
    (TESTHISTOGRAM3, "testhistogram3", 1, {POS: 1, NEG: -0.1}),
    (TESTHISTOGRAM, "testhistogram", 0, {POS: 0, NEG: -0.2}),
    (TESTHISTOGRAM, "testhistogram", 1, {POS: 1, NEG: 0.3}),
    (TESTHISTOGRAM, "testhistogram", 0.2, {POS: 0.048, NEG: -0.2}),
    (TESTHISTOGRAM, "testhistogram", 0.5, {POS: 0.15, NEG: -0.15}),
    (TESTHISTOGRAM, "testhistogram", 0.8, {POS: 0.72, NEG: 0.3}),
    (TESTHISTOGRAM2, "testhistogram2", 1 / 6, {"": 1}),
    (TESTHISTOGRAM2, "testhistogram2", 0.5, {"": 3}),
    (TESTHISTOGRAM2, "testhistogram2", 5 / 6, {"": 5}),
    (NONMONOTONIC, "nonmonotonic", 0.01, {"": 0.0045}),
    (NONMONOTONIC, "nonmonotonic", 0.5, {"": 8.5}),
    (NONMONOTONIC, "nonmonotonic", 0.99, {"": 979.75}),
    (
        REQUEST_DURATION,
        "request_duration_seconds",
        0.3,
        {
            'instance="ins1",job="job1"': 0.11,
            'instance="ins2",job="job1"': 0.09,
            'instance="ins1",job="job2"': 0.06,
            'instance="ins2",job="job2"': 0.0675,
        },
    ),
    (
        REQUEST_DURATION,
        "request_duration_seconds",
        0.5,
        {
            'instance="ins1",job="job1"': 0.15,
            'instance="ins2",job="job1"': 0.13333333333333333,
            'instance="ins1",job="job2"': 0.1,
            'instance="ins2",job="job2"': 0.11666666666666667,
        },
    ),
    # empty_bucket: every count 0 -> NaN
    (
        _text("empty", [('job="job1",instance="ins1"', [("0.1", 0), ("0.2", 0), ("+Inf", 0)])]),
        "empty",
        0.2,
        {'instance="ins1",job="job1"': None},
    ),
    # const_histogram: a rate of 0 in every bucket -> NaN
    (_text("const", [("", [("0.0", 0), ("1.0", 0), ("2.0", 0), ("+Inf", 0)])]), "const", 1.0, {"": None}),
    # "Test histogram functions ignore NaN bucket boundaries and warn"
    (_text("series", [("", [("0.5", 1), ("+Inf", 3), ("NaN", 2)])]), "series", 0.5, {"": 0.5}),
    (_text("series", [("", [("0.5", 1), ("+Inf", 3), ("NaN", 2)])]), "series", 0.25, {"": 0.375}),
    # "A histogram with only an invalid NaN boundary must not produce output"
    (_text("invalid_only", [("", [("NaN", 1)])]), "invalid_only", 0.5, {"": None}),
    # "warns about malformated le": the bucket is ignored, nothing is left
    (_text("series", [("", [("Hello World", 2)])]), "series", 0.8, {"": None}),
]


@pytest.mark.parametrize(
    ("text", "name", "q", "expected"),
    PROMQL_CASES,
    ids=[f"{n}-q{q:.3g}-{i}" for i, (_, n, q, _) in enumerate(PROMQL_CASES)],
)
def test_histogram_quantile_as_promql(text: str, name: str, q: float, expected: dict[str, float | None]) -> None:
    got = _quantiles(q, text, name)
    assert set(got) == set(expected), HISTOGRAMS_TEST
    for series, value in expected.items():
        if value is None:
            assert got[series] is None, f"{HISTOGRAMS_TEST} {name} {series}"
        else:
            assert got[series] == pytest.approx(value, rel=1e-9), f"{HISTOGRAMS_TEST} {name} {series} q={q}"


@pytest.mark.parametrize(
    ("q", "by", "expected"),
    [
        (0.3, None, {"": 0.075}),
        (0.5, None, {"": 0.1277777777777778}),
        (0.3, "instance", {"ins1": 0.075, "ins2": 0.075}),
        (0.5, "instance", {"ins1": 0.1333333333, "ins2": 0.125}),
        (0.3, "job", {"job1": 0.1, "job2": 0.0642857142857143}),
        (0.5, "job", {"job1": 0.14, "job2": 0.1125}),
    ],
)
def test_sum_by_le_as_promql(q: float, by: str | None, expected: dict[str, float]) -> None:
    """histograms.test `histogram_quantile(q, sum(rate(request_duration_seconds_bucket[10m])) by (le, BY))`:
    `aggregate` sums series bucket by bucket as `sum by (le)` does."""
    parsed = parse_histogram(REQUEST_DURATION, "request_duration_seconds", "test")
    for group, value in expected.items():
        members = [s for s in parsed.values() if by is None or s.label(by) == group]
        assert quantile(q, aggregate(members).buckets) == pytest.approx(value, rel=1e-9), HISTOGRAMS_TEST


def test_mixed_le_representations_as_promql() -> None:
    """histograms.test "Buckets with different representations of the same upper bound" (mixed_bucket, loaded as
    distinct series): BucketQuantile adds the buckets of one bound. 0.5 -> 0.15, 0.75 -> 0.2, 1 -> 0.2; the
    all-zero instance is NaN."""
    ins1 = [(0.1, 1.0), (0.2, 1.0), (0.2, 1.0), (0.2, 1.0), (INF, 4.0)]  # le 0.1, 0.2, 2e-1, 2.0e-1, +Inf
    assert bucket_quantile(0.5, ins1).value == pytest.approx(0.15), HISTOGRAMS_TEST
    assert bucket_quantile(0.75, ins1).value == pytest.approx(0.2), HISTOGRAMS_TEST
    assert bucket_quantile(1, ins1).value == pytest.approx(0.2), HISTOGRAMS_TEST
    assert math.isnan(bucket_quantile(0.5, [(INF, 0.0), (INF, 0.0)]).value)  # le "+inf" and "+Inf"
    assert quantile(0.5, [(INF, 0.0), (INF, 0.0)]) is None


def test_mixed_le_in_one_scrape_is_one_series_first_kept() -> None:
    """In a SCRAPE, Prometheus normalises `le` (model/textparse/openmetricsparse.go normalizeFloatsInLabelValues:
    "0.2", "2e-1" and "2.0e-1" are all "0.2") and keeps the first sample of a series it already saw
    (scrape/scrape.go: ErrDuplicateSampleForTimestamp), so a /metrics text holding them has one 0.2 bucket."""
    text = _text("mixed", [("", [("0.1", 1), ("0.2", 2), ("2e-1", 9), ("2.0e-1", 9), ("+Inf", 4), ("+inf", 7)])])
    (series,) = parse_histogram(text, "mixed", "test").values()
    assert dict(series.buckets) == {0.1: 1.0, 0.2: 2.0, INF: 4.0}
    assert quantile(0.5, sorted(series.buckets.items())) == pytest.approx(0.2)


def test_nan_and_malformed_le_are_ignored_and_named() -> None:
    """promql/engine.go resetHistograms: an `le` strconv.ParseFloat refuses, or NaN, is skipped (a warning);
    outpost names it in Series.ignored. Whitespace around a number is not a number to Go."""
    text = _text("h", [("", [("0.5", 1), (" 1", 2), ("NaN", 2), ("1e400", 2), ("+Inf", 3)])])
    (series,) = parse_histogram(text, "h", "test").values()
    assert dict(series.buckets) == {0.5: 1.0, INF: 3.0}
    assert series.ignored == (" 1", "NaN", "1e400")


def test_missing_inf_uses_count_deliberately() -> None:
    """PromQL answers NaN for a series without `+Inf`; outpost takes `_count` as `+Inf` (module doc)."""
    text = _text("h", [("", [("1", 5), ("2", 10)])], counts={"": 10})
    assert bucket_quantile(0.5, [(1, 5), (2, 10)]).value != bucket_quantile(0.5, [(1, 5), (2, 10)]).value  # NaN
    assert _quantiles(0.5, text, "h") == {"": 1.0}
    assert _quantiles(0.5, _text("h", [("", [("1", 5), ("2", 10)])]), "h") == {"": None}


EDGE = [
    # (q, [(le, count)], upstream BucketQuantile value, forced monotonic, fixed precision, what it shows)
    (0.5, [("1", "5"), ("2", "10")], "NaN", False, False, "no +Inf bucket"),
    (0.5, [("+Inf", "10")], "NaN", False, False, "only +Inf"),
    (0.5, [("1", "0"), ("+Inf", "0")], "NaN", False, False, "no observations"),
    (0.5, [("1", "NaN"), ("+Inf", "10")], "1", False, False, "NaN count in a finite bucket"),
    (0.5, [("1", "5"), ("+Inf", "NaN")], "1", False, False, "NaN +Inf count"),
    (0.99, [("1", "5"), ("2", "NaN"), ("+Inf", "10")], "2", False, False, "NaN count in the middle"),
    (0.5, [("1", "-5"), ("+Inf", "10")], "1", False, False, "negative count"),
    (0.5, [("1", "-5"), ("+Inf", "-2")], "1", False, False, "negative total"),
    (0.5, [("1", "5"), ("1", "3"), ("+Inf", "10")], "0.625", False, False, "duplicate bound: coalesced by adding"),
    (0.5, [("1", "5"), ("+Inf", "10"), ("+Inf", "4")], "1", False, False, "duplicate +Inf: coalesced by adding"),
    (0.5, [("-Inf", "0"), ("+Inf", "10")], "-Inf", False, False, "-Inf bound"),
    (0.5, [("-Inf", "5"), ("1", "10"), ("+Inf", "10")], "-Inf", False, False, "-Inf bound, rank after it"),
    (0.5, [("1", "8"), ("2", "4"), ("+Inf", "10")], "0.625", True, False, "non-monotonic"),
    (
        0.99,
        [("0.005", "100"), ("1", "100"), ("60", "100"), ("+Inf", "200")],
        "60",
        False,
        False,
        "rank in +Inf: highest finite bound",
    ),
    (0.5, [("-1", "5"), ("0", "6"), ("+Inf", "10")], "-1", False, False, "negative first bound"),
    (0, [("1", "0"), ("2", "5"), ("+Inf", "5")], "NaN", False, False, "q=0"),
    (1, [("1", "0"), ("2", "5"), ("+Inf", "5")], "2", False, False, "q=1"),
    (0.5, [("2", "10"), ("1", "5"), ("+Inf", "10")], "1", False, False, "unsorted input"),
    (0.5, [("1", "1e300"), ("+Inf", "1.7976931348623157e308")], "1", False, False, "huge counts"),
    (0.5, [("1", "5"), ("1.0000000000001", "5.000000000001"), ("+Inf", "10")], "1", False, True, "tiny delta fixed"),
    (0.5, [("1", "Inf"), ("+Inf", "Inf")], "NaN", False, False, "infinite counts"),
]
GO_FLOATS = [
    # (le text, what strconv.ParseFloat returned: the value, or None for an error)
    ("0.005", "0.005"),
    ("60", "60"),
    ("+Inf", "+Inf"),
    ("-Inf", "-Inf"),
    ("Inf", "+Inf"),
    ("inf", "+Inf"),
    ("infinity", "+Inf"),
    ("NaN", "NaN"),
    ("nan", "NaN"),
    ("+nan", None),
    (" 1", None),
    ("1 ", None),
    ("1\t", None),
    ("", None),
    ("Hello World", None),
    ("1e0", "1"),
    (".2", "0.2"),
    ("-.2", "-0.2"),
    ("2e-1", "0.2"),
    ("2.0e-1", "0.2"),
    ("1_0", "10"),
    ("_1", None),
    ("0x1p-2", "0.25"),
    ("0x10", None),
    ("1e400", None),
    ("1e-400", "0"),
    ("1,5", None),
    ("+1", "1"),
    ("\u0661", None),  # ARABIC-INDIC DIGIT ONE
    ("0.1 ", None),
]


@pytest.mark.parametrize(("q", "buckets", "value", "forced", "fixed", "what"), EDGE, ids=[e[-1] for e in EDGE])
def test_bucket_quantile_edges_as_upstream(
    q: float, buckets: list[tuple[str, str]], value: str, forced: bool, fixed: bool, what: str
) -> None:
    pairs = [(_float(le), _float(count)) for le, count in buckets]
    result = bucket_quantile(q, pairs)
    expected = _float(value)
    assert (math.isnan(result.value) and math.isnan(expected)) or result.value == expected, what
    assert (result.forced_monotonic, result.fixed_precision) == (forced, fixed), what
    judged = quantile(q, pairs)
    assert judged is None or math.isfinite(judged), "quantile() never answers NaN or ±Inf"
    if judged is not None:
        assert judged == expected
    total = result.observations
    if math.isnan(expected) or math.isinf(expected) or not (total > 0 and math.isfinite(total)):
        assert judged is None, f"{what}: no value, never a number a threshold could pass"


@pytest.mark.parametrize(("text", "value"), GO_FLOATS, ids=[repr(t) for t, _ in GO_FLOATS])
def test_le_is_read_as_go_parse_float(text: str, value: str | None) -> None:
    got = go_parse_float(text)
    if value is None:
        assert got is None
    elif value == "NaN":
        assert got is not None
        assert math.isnan(got)
    else:
        assert got == _float(value)
