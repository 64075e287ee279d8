"""apiserver-latency: is a quantile (p99 by default) of API request latency, per verb, under its threshold?

It reads `apiserver_request_duration_seconds` from `/metrics` (the probe needs `get` on that URL only) and
computes the quantile as PromQL's `histogram_quantile` (`outpost.kube.histograms`).

The window is the requests served BETWEEN two scrapes. Warm (the usual case on a schedule), they are this run's
and the one the previous run kept (`outpost.cluster.warm`), so the window is about the schedule interval and the
run does not wait. Cold (nothing kept, or kept longer than `max_previous_age_seconds` or less than
`MIN_WINDOW_SECONDS` ago), two scrapes `cold_interval_seconds` (3 s) apart: paid once per instance, so kept short;
its older name `interval_seconds` is still accepted, both together refused. `details.window` and
`details.previous_scrape` say which; `cumulative: true` judges everything since the API server started. The cold
wait must fit `cluster.deadline_seconds` (`outpost validate` refuses it otherwise, a run that cannot fit is
`error`). Streams (`WATCH`, `WATCHLIST`, `CONNECT`, `log`, `exec`, `attach`, `portforward`, `proxy`; both lists
parameters) are excluded: their duration is a lifetime, not latency. Series are summed per verb.

A counter reset or changed bucket set between the scrapes (a restart or upgrade) uses the second scrape's counts,
as `increase()` does, named in `details.resets`; a scrape without the metric is not kept. A series without `+Inf`
uses its `_count`, without either it is named in `details.incomplete`. A verb under `min_requests` is reported,
not judged; no judgeable verb, or no metric, is `error`, never ok. `failed` names each verb over its threshold:
`apiserver verb LIST: observed p99 7.2 s (want <= 5 s)`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster, warm
from outpost.errors import ClusterResponseError, ClusterTimeout, ConfigError
from outpost.kube import access
from outpost.kube.histograms import LabelSet, Series, aggregate, delta, parse_histogram, quantile
from outpost.result import Finding, Result
from outpost.runbook import Runbook

NAME = "apiserver-latency"
FAILS_WHEN = "p99 request latency (from /metrics histogram, WATCH excluded) over threshold"

# The failure classes, over the names a line gives: the scraped `{path}`, the histogram `{metric}` and the `{verb}`.
# Each command reads what the check read, the API server's own metrics, and shows the part the line is about; none
# fails for finding nothing or stops reading early (a person's shell may run it with pipefail).
LATENCY_SLO = "https://github.com/kubernetes/community/blob/master/sig-scalability/slos/api_call_latency.md"
SLOW_VERB = Runbook(
    "slow-verb",
    "Requests of one verb are slower than its threshold",
    "etcd is slow (disk latency, a defragmentation, a large database), the API server is short of CPU or "
    "memory, or clients send expensive requests (LISTs of every pod or node without a limit, a controller "
    "relisting in a loop); for POST/PUT/PATCH/DELETE a slow admission webhook adds to every call",
    "kubectl get --raw '{path}' | awk '/^{metric}_sum/ && /verb=\"{verb}\"/' | sort -g -k2 | tail -n 20",
    LATENCY_SLO,
)
HISTOGRAM_UNUSABLE = Runbook(
    "histogram-unusable",
    "A verb's latency histogram yields no quantile",
    "its series lack the +Inf bucket or carry a NaN or zero total: a proxy or exporter rewrote the metrics, or "
    "metrics_path reaches something other than the API server",
    "kubectl get --raw '{path}' | awk '/^{metric}_(bucket|count)/ && /verb=\"{verb}\"/ && !/le=\"[0-9]/'",
    LATENCY_SLO,
)
METRIC_ABSENT = Runbook(
    "metric-absent",
    "The API server's metrics do not expose the latency histogram",
    "metrics_path reaches another component or a proxy's page, or `metric` names a histogram this API server "
    "does not have",
    "kubectl get --raw '{path}' | sed -n 1,20p",
    LATENCY_SLO,
)
TOO_FEW_REQUESTS = Runbook(
    "too-few-requests",
    "No verb had enough requests in the window to judge",
    "a quiet cluster or a short window: fewer than min_requests requests of any verb between the two scrapes; "
    "lower min_requests, or set cumulative",
    "kubectl get --raw '{path}' | awk '/^{metric}_count/' | sort -g -k2 | tail -n 20",
    "docs/configuration.md",
)

RUNBOOKS = (SLOW_VERB, HISTOGRAM_UNUSABLE, METRIC_ABSENT, TOO_FEW_REQUESTS)

DEADLINE_MARGIN_SECONDS = 5.0
"""Room in the deadline for the two scrapes themselves."""
MIN_WINDOW_SECONDS = 1.0
"""A kept scrape younger than this is not judged against (a window that short says little): the run is cold."""

DEFAULT_THRESHOLDS = {
    # The Kubernetes API call latency SLOs (p99): mutating calls 1 s, single-object reads 1 s; LISTs
    # are 5 s for namespace scope (30 s for cluster scope: raise LIST here for big clusters).
    "GET": 1.0,
    "POST": 1.0,
    "PUT": 1.0,
    "PATCH": 1.0,
    "DELETE": 1.0,
    "LIST": 5.0,
    "DELETECOLLECTION": 5.0,
}


class ApiserverLatencyParams(Params):
    quantile: float = Field(0.99, gt=0, lt=1, description="Which quantile to judge (0.99 = p99).")
    cold_interval_seconds: float = Field(
        3.0, gt=0, le=600, description="Seconds between the two scrapes of a run with no usable kept scrape."
    )
    interval_seconds: float | None = Field(
        None, gt=0, le=600, description="Older name of cold_interval_seconds: when set, it is the cold wait."
    )
    max_previous_age_seconds: float = Field(
        900.0,
        ge=0,
        le=3600,
        description="A scrape kept by an earlier run of this instance is judged against "
        "only if at most this old; 0: never (every run waits).",
    )
    cumulative: bool = Field(False, description="Judge one scrape's totals since the API server started instead.")
    thresholds_seconds: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_THRESHOLDS),
        description="Per verb (upper case): the largest quantile allowed.",
    )
    default_threshold_seconds: float | None = Field(
        1.0, gt=0, description="Threshold of verbs not in thresholds_seconds; null: report them, never fail."
    )
    excluded_verbs: list[str] = Field(
        default_factory=lambda: ["WATCH", "WATCHLIST", "CONNECT"],
        description="Verbs not judged: their duration is a stream's lifetime, not latency.",
    )
    excluded_subresources: list[str] = Field(
        default_factory=lambda: ["log", "exec", "attach", "portforward", "proxy"],
        description="Streaming subresources not judged, for the same reason.",
    )
    min_requests: int = Field(1, ge=1, description="Verbs with fewer requests in the window are not judged.")
    metrics_path: str = Field("/metrics", pattern=r"^/", description="The API server's Prometheus metrics path.")
    metric: str = Field(
        "apiserver_request_duration_seconds",
        pattern=r"^[a-zA-Z_:][a-zA-Z0-9_:]*$",
        description="The request-duration histogram judged.",
    )

    @field_validator("thresholds_seconds")
    @classmethod
    def _positive_upper(cls, value: dict[str, float]) -> dict[str, float]:
        for verb, seconds in value.items():
            if verb != verb.upper() or not verb:
                raise ValueError(f"verb {verb!r} must be upper case, as the metric labels it")
            if not seconds > 0:
                raise ValueError(f"threshold of {verb} must be > 0")
        return value

    @property
    def cold_wait(self) -> tuple[str, float]:
        """The parameter that sets a cold run's wait, and the wait (module doc: why two names)."""
        if self.interval_seconds is not None:
            return "interval_seconds", self.interval_seconds
        return "cold_interval_seconds", self.cold_interval_seconds

    @model_validator(mode="after")
    def _fits_deadline(self, info: ValidationInfo) -> ApiserverLatencyParams:
        if self.interval_seconds is not None and "cold_interval_seconds" in self.model_fields_set:
            raise ValueError("interval_seconds is the older name of cold_interval_seconds: set only one")
        name, wait = self.cold_wait
        deadline = info.context.get("deadline_seconds") if isinstance(info.context, dict) else None
        fits = not isinstance(deadline, int | float) or wait + DEADLINE_MARGIN_SECONDS <= deadline
        if not self.cumulative and not fits:
            raise ValueError(
                f"{name} {wait:g} + {DEADLINE_MARGIN_SECONDS:g} s for the scrapes does not fit in "
                f"cluster.deadline_seconds {deadline:g}"
            )
        return self


Histogram = Mapping[LabelSet, Series]
"""The series of the judged metric in one scrape (`parse_histogram`)."""


@dataclass(frozen=True)
class Scrapes:
    after: Histogram
    before: Histogram | None = None
    """The earlier scrape (None when cumulative): this run's first (cold) or the one an earlier run kept (warm)."""
    interval_seconds: float = 0.0
    """The window: measured between the two scrapes' answers (0 when cumulative)."""
    path: str = "/metrics"
    warm: bool = False
    """`before` was kept by an earlier run of this instance (no wait in this run)."""


@dataclass(frozen=True)
class _Kept:
    series: Histogram
    taken_at: float
    """`time.monotonic()` when its answer arrived."""


def _scrape(cluster: Cluster, params: ApiserverLatencyParams) -> tuple[Histogram, float]:
    path = params.metrics_path
    response = cluster.get(path, accept="text/plain;version=0.0.4")
    if response.status_code != 200:
        raise ClusterResponseError(
            f"GET {path} on cluster {cluster.name}: HTTP {response.status_code} (want 200)", response.status_code
        )
    taken_at = time.monotonic()
    return parse_histogram(response.text, params.metric, f"apiserver {path}"), taken_at


def _key(params: ApiserverLatencyParams) -> tuple[str, ...]:
    return (NAME, "scrape", params.metrics_path, params.metric)


def _kept(cluster: Cluster, params: ApiserverLatencyParams) -> _Kept | None:
    """The scrape an earlier run kept, if a window from it is at least `MIN_WINDOW_SECONDS` and at most
    `max_previous_age_seconds` long."""
    kept = warm.recall(cluster.identity, _key(params), params.max_previous_age_seconds)
    if not isinstance(kept, _Kept):
        return None
    age = time.monotonic() - kept.taken_at
    return kept if MIN_WINDOW_SECONDS <= age <= params.max_previous_age_seconds else None


def _keep(cluster: Cluster, params: ApiserverLatencyParams, series: Histogram, taken_at: float) -> None:
    if series:
        warm.keep(cluster.identity, _key(params), _Kept(series, taken_at))
    else:  # the metric is absent: nothing to judge a later scrape against (module doc)
        warm.drop(cluster.identity, _key(params))


def fetch(cluster: Cluster, params: ApiserverLatencyParams) -> Scrapes:
    path = params.metrics_path
    if params.cumulative:
        after, taken_at = _scrape(cluster, params)
        _keep(cluster, params, after, taken_at)
        return Scrapes(after=after, path=path)
    kept = _kept(cluster, params)
    if kept is not None:
        after, taken_at = _scrape(cluster, params)
        _keep(cluster, params, after, taken_at)
        return Scrapes(
            after=after, before=kept.series, interval_seconds=round(taken_at - kept.taken_at, 3), path=path, warm=True
        )
    name, wait = params.cold_wait
    left = cluster.deadline.remaining()
    if wait + DEADLINE_MARGIN_SECONDS > left:
        raise ConfigError(
            f"{NAME}: {name} {wait:g} + {DEADLINE_MARGIN_SECONDS:g} s "
            f"does not fit in what is left of the run's deadline ({left:.1f} s)"
        )
    before, started = _scrape(cluster, params)
    time.sleep(wait)
    if cluster.deadline.expired:
        raise ClusterTimeout(f"{NAME}: the check's deadline ran out between the two scrapes")
    after, taken_at = _scrape(cluster, params)
    _keep(cluster, params, after, taken_at)
    return Scrapes(after=after, before=before, interval_seconds=round(taken_at - started, 3), path=path)


def declared_access(params: ApiserverLatencyParams) -> list[access.Access]:
    return [access.non_resource(params.metrics_path)]


def _labels(labels: tuple[tuple[str, str], ...]) -> str:
    keep = ("verb", "group", "resource", "subresource", "scope")
    return ",".join(f"{k}={v}" for k, v in labels if k in keep and v)


def _threshold(params: ApiserverLatencyParams, verb: str) -> float | None:
    return params.thresholds_seconds.get(verb, params.default_threshold_seconds)


def _previous_scrape(data: Scrapes) -> str:
    if data.before is None:
        return "none (cumulative)"
    seconds = f"{round(data.interval_seconds, 1):g}"
    return f"warm (kept {seconds} s ago)" if data.warm else f"cold (waited {seconds} s)"


def evaluate(data: Scrapes, params: ApiserverLatencyParams, now: datetime) -> Result:
    where = f"apiserver {data.path}"
    after = data.after
    if not after:
        line = f"{where}: histogram {params.metric} not exposed (want it, with _bucket series)"
        return _error([METRIC_ABSENT.at(line, path=data.path, metric=params.metric)], {})
    if data.before is None:
        window, resets = after, []
    else:
        changes = delta(data.before, after)
        window, resets = changes.series, changes.resets
    excluded_verbs = {verb.upper() for verb in params.excluded_verbs}
    excluded_subresources = set(params.excluded_subresources)
    by_verb: dict[str, list[Series]] = {}
    for series in window.values():
        verb = series.label("verb").upper()
        if not verb or verb in excluded_verbs or series.label("subresource") in excluded_subresources:
            continue
        by_verb.setdefault(verb, []).append(series)
    label = f"p{params.quantile * 100:g}"
    verbs: dict[str, Any] = {}
    names = {"path": data.path, "metric": params.metric}
    errors: list[Finding] = []
    incomplete: list[str] = []
    unusable: list[Finding] = []
    judged = 0
    for verb in sorted(by_verb):
        combined = aggregate(by_verb[verb])
        incomplete += [_labels(labels) for labels in combined.incomplete]
        value = quantile(params.quantile, combined.buckets) if combined.buckets else None
        threshold = _threshold(params, verb)
        entry: dict[str, Any] = {
            "requests": combined.observations,
            "series": combined.series,
            "quantile_seconds": None if value is None else round(value, 6),
            "threshold_seconds": threshold,
            "coarsened_buckets": combined.coarsened,
        }
        verbs[verb] = entry
        if value is None and not combined.observations < params.min_requests:  # a NaN count lands here too
            # Requests were made but the histogram yields no quantile (no +Inf bucket, a NaN or non-positive
            # total): skipping the verb would let the others say "within thresholds" (fail open).
            entry["judged"] = False
            line = (
                f"apiserver verb {verb}: {label} has no value over {combined.observations:g} requests "
                "(histogram not usable: no +Inf bucket, or a NaN or non-positive total)"
            )
            unusable.append(HISTOGRAM_UNUSABLE.at(line, **names, verb=verb))
            continue
        if value is None or combined.observations < params.min_requests:
            entry["judged"] = False
            continue
        entry["judged"] = threshold is not None
        judged += 1
        if threshold is not None and value > threshold:
            line = (
                f"apiserver verb {verb}: observed {label} {value:.3g} s over {combined.observations:g} "
                f"requests (want <= {threshold:g} s)"
            )
            errors.append(SLOW_VERB.at(line, **names, verb=verb))
    details: dict[str, Any] = {
        "quantile": params.quantile,
        "window": "cumulative since API server start" if data.before is None else f"{data.interval_seconds:g} s",
        "previous_scrape": _previous_scrape(data),
        "verbs": verbs,
        "resets": [_labels(labels) for labels in resets],
        "incomplete": incomplete,
        "excluded_verbs": sorted(excluded_verbs),
        "excluded_subresources": sorted(excluded_subresources),
    }
    if errors:
        slow = ", ".join(finding.line.split(":")[0].removeprefix("apiserver verb ") for finding in errors)
        return Result.failed(NAME, f"apiserver {label} latency over threshold: {slow}", errors, details)
    if unusable:
        return _error(unusable, details)
    if judged == 0:
        line = (
            f"{where}: no verb had >= {params.min_requests} request(s) with a complete histogram in the window; "
            "latency not observed"
        )
        return _error([TOO_FEW_REQUESTS.at(line, **names)], details)
    worst = max(
        (v for v in verbs.values() if v["judged"] and v["quantile_seconds"] is not None),
        key=lambda v: v["quantile_seconds"] / (v["threshold_seconds"] or 1),
        default=None,
    )
    shown = ", ".join(
        f"{verb} {v['quantile_seconds']:.3g} s"
        for verb, v in verbs.items()
        if v["judged"] and v["quantile_seconds"] is not None
    )
    summary = f"apiserver {label} latency within thresholds ({shown})" if worst else "apiserver latency observed"
    return Result.ok(NAME, summary, details)


def _error(findings: list[Finding], details: dict[str, Any]) -> Result:
    """Not observed (`error`): each line with its next step."""
    return Result.unobserved(NAME, findings[0].line, findings, details)


CHECK = CheckSpec(
    name=NAME,
    system="kwok / any",
    layer="control plane",
    severity="warning",
    schedule_minutes=5,
    fails_when=FAILS_WHEN,
    params=ApiserverLatencyParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
