"""ls-latency: do the latency-sensitive (LS) workloads answer, as expected and in time?

Each endpoint is one timed GET through the service or pod proxy (`proxy_path`) or to a plain `url` sent with no
credential (`outpost.cluster.plain`). Another status than `expected_status` (200), or slower than `failed_ms`, is
`failed`; slower than `degraded_ms` is `degraded`; codes and times go in `details`. As for every health endpoint
(docs/contracts.md), 401/403, 429, an unexpected redirect, or a proxied timeout while the API server itself is
silent are `error`; a proxied 502/503 is the workload not answering, `failed`. Endpoints are probed in turn, each
timing out at its `failed_ms`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Self

from pydantic import Field, field_validator, model_validator

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster, Response, get_url
from outpost.cluster.plain import check_url, safe_url
from outpost.cluster.probes import CONTROL_PATH, api_server_answers
from outpost.errors import ClusterAuthError, ClusterError, ClusterTimeout, ClusterUnreachable
from outpost.kube import access
from outpost.result import Finding, Result, Status
from outpost.runbook import Runbook

NAME = "ls-latency"

# Proxied endpoints name a Service or a pod: `{kind}` is `service` or `pod`, `{name}` its name (no scheme or port).
LOOK = "kubectl -n {namespace} describe {kind} {name}"
LOGS = "kubectl -n {namespace} logs {kind}/{name} --tail=200"
# A plain URL names no cluster object: its answer (status line and headers, or curl's error) is what to look at.
ASK_URL = "curl -sS -i --max-time 10 '{url}' | head -n 20"
ENDPOINT_DOWN = Runbook(
    "endpoint-down",
    "An LS endpoint does not answer, or answers with another status or body than expected",
    "no answer or a proxied 502/503: the Service has no ready endpoints (its pods not Ready, crashing, or its "
    "selector matches none) or the pod is not running; another status or body: the workload itself errors",
    LOOK,
    LOGS,
)
ENDPOINT_TOO_SLOW = Runbook(
    "endpoint-too-slow",
    "An LS endpoint answers later than its failure threshold",
    "the LS pods are starved of CPU (throttled at their limits, or best-effort pods on the same nodes not "
    "suppressed by koordlet) or overloaded; nodes above LoadAwareScheduling's threshold (node-utilization) point "
    "at the nodes",
    LOOK,
    LOGS,
)
ENDPOINT_SLOW = Runbook(
    "endpoint-slow",
    "An LS endpoint answers slower than its degraded threshold",
    "as endpoint-too-slow, less far along: CPU contention with best-effort pods on the same nodes, or load",
    LOOK,
    LOGS,
)
ENDPOINT_NOT_OBSERVED = Runbook(
    "endpoint-not-observed",
    "An LS endpoint could not be observed",
    "the probe's identity lacks services/proxy or pods/proxy (401/403), the API server rate limits (429) or does "
    "not answer itself, the endpoint redirects, or the run's deadline was spent on the endpoints before it",
    LOOK,
    "docs/rbac.md",
)
URL_FAILING = Runbook(
    "url-failing",
    "An LS URL does not answer, answers with another status or body, or answers too late",
    "the ingress or load balancer in front of the workload has no healthy backend, the workload errors, or it is "
    "starved of CPU or overloaded",
    ASK_URL,
    "the ingress or load balancer's logs for that host",
)
URL_SLOW = Runbook(
    "url-slow",
    "An LS URL answers slower than its degraded threshold",
    "CPU contention with best-effort pods on the workload's nodes, or load, or the path through the load balancer",
    ASK_URL,
    "the ingress or load balancer's logs for that host",
)
URL_NOT_OBSERVED = Runbook(
    "url-not-observed",
    "An LS URL could not be observed",
    "it is rate limited (429) or redirects (redirects are not followed: point the endpoint at the final URL), or "
    "the run's deadline was spent before it",
    ASK_URL,
    "docs/checks.md#ls-latency",
)

RUNBOOKS = (
    ENDPOINT_DOWN,
    ENDPOINT_TOO_SLOW,
    ENDPOINT_SLOW,
    ENDPOINT_NOT_OBSERVED,
    URL_FAILING,
    URL_SLOW,
    URL_NOT_OBSERVED,
)

_PROXY_PATH = re.compile(
    r"^/api/v1/namespaces/(?P<ns>[a-z0-9]([-a-z0-9]*[a-z0-9])?)/(?P<kind>services|pods)/"
    r"(?P<target>[A-Za-z0-9][A-Za-z0-9._:-]*)/proxy(?P<rest>/.*)?$"
)
_PREVIEW = 120


class LsEndpoint(Params):
    """One LS endpoint: a `proxy_path` through the API server, or a plain `url` (exactly one)."""

    name: str = Field(min_length=1, max_length=100, description="How messages name this endpoint.")
    proxy_path: str | None = Field(
        None, description="/api/v1/namespaces/NS/services/[https:]NAME[:PORT]/proxy/PATH (or pods/...)."
    )
    url: str | None = Field(None, description="http(s)://... reached directly, without any cluster credential.")
    expected_status: int = Field(200, ge=100, le=599)
    degraded_ms: int = Field(500, ge=1, le=60_000, description="Slower than this is degraded.")
    failed_ms: int = Field(2000, ge=1, le=60_000, description="Slower than this, or no answer by then, fails.")
    expect_body: str | None = Field(None, description="A substring the body must contain (optional).")

    @field_validator("proxy_path")
    @classmethod
    def _proxy(cls, value: str | None) -> str | None:
        if value is not None and not _PROXY_PATH.match(value):
            raise ValueError(
                "must be a service or pod proxy path: /api/v1/namespaces/NS/services|pods/NAME[:PORT]/proxy[/PATH]"
            )
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return check_url(value) if value is not None else None

    @model_validator(mode="after")
    def _one_target_and_ordered_thresholds(self) -> Self:
        if (self.proxy_path is None) == (self.url is None):
            raise ValueError("give exactly one of proxy_path and url")
        if self.degraded_ms > self.failed_ms:
            raise ValueError(f"degraded_ms ({self.degraded_ms}) must not exceed failed_ms ({self.failed_ms})")
        return self

    @property
    def where(self) -> str:
        """`service default/ls-web:80 /` or `https://shop.example/health`: what was asked, for messages."""
        if self.url is not None:
            return safe_url(self.url)
        match = _PROXY_PATH.match(self.proxy_path or "")
        assert match is not None  # validated above
        kind = "service" if match["kind"] == "services" else "pod"
        return f"{kind} {match['ns']}/{match['target']} {match['rest'] or '/'}"

    @property
    def ref(self) -> str:
        return f"ls endpoint {self.name} ({self.where})"


FAILS_WHEN = (
    "an LS workload endpoint slower than its threshold, or answering another status "
    f"(default {LsEndpoint.model_fields['expected_status'].default}) or body than expected"
)


class LsLatencyParams(Params):
    endpoints: list[LsEndpoint] = Field(min_length=1, description="The LS endpoints to time.")

    @field_validator("endpoints")
    @classmethod
    def _unique_names(cls, value: list[LsEndpoint]) -> list[LsEndpoint]:
        names = [e.name for e in value]
        if len(set(names)) != len(names):
            raise ValueError("endpoint names must be unique (messages name endpoints by them)")
        return value


@dataclass(frozen=True)
class Observation:
    """One endpoint's answer (status, time, a preview of the body), or why there was none."""

    endpoint: LsEndpoint
    status_code: int | None = None
    elapsed_ms: int | None = None
    body: str = ""
    no_answer: str | None = None
    """Set when the endpoint did not answer: 'no answer within 2000 ms', 'connection failed (...)'."""
    unobserved: str | None = None
    """Set when we could not tell (our identity refused, the API server itself silent, deadline spent)."""


@dataclass(frozen=True)
class LsLatencyData:
    observations: list[Observation]


def _preview(text: str) -> str:
    """A Kubernetes Status message (the API server speaking) or the body, on one short line."""
    flat = " ".join(text.split())
    if flat.startswith("{"):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser: shown as text
            parsed = None
        if isinstance(parsed, dict) and parsed.get("kind") == "Status" and isinstance(parsed.get("message"), str):
            flat = " ".join(parsed["message"].split())
    return flat[:_PREVIEW] + ("…" if len(flat) > _PREVIEW else "")


def _observe(cluster: Cluster, endpoint: LsEndpoint) -> Observation:
    timeout = endpoint.failed_ms / 1000
    try:
        response: Response
        if endpoint.url is not None:
            response = get_url(
                endpoint.url, deadline=cluster.deadline, timeout=timeout, max_response_bytes=cluster.max_response_bytes
            )
        else:
            response = cluster.get(endpoint.proxy_path or "", accept="*/*", timeout=timeout)
    except ClusterAuthError as error:
        return Observation(endpoint, unobserved=str(error))
    except (ClusterTimeout, ClusterUnreachable) as error:
        if cluster.deadline.expired:
            return Observation(endpoint, unobserved=str(error))
        failure = (
            f"no answer within {endpoint.failed_ms} ms"
            if isinstance(error, ClusterTimeout)
            else f"connection failed ({error})"
        )
        if endpoint.proxy_path is not None:
            # Is it the workload, or the API server? (`GET /version`, the shared control request.)
            silent = api_server_answers(cluster)
            if silent is not None:
                return Observation(
                    endpoint, unobserved=f"{failure}, and the API server itself does not answer: {silent}"
                )
        return Observation(endpoint, no_answer=failure)
    except ClusterError as error:  # too large, or anything else we could not read
        return Observation(endpoint, unobserved=str(error))
    return Observation(endpoint, response.status_code, response.elapsed_ms, response.text[:4096])


def fetch(cluster: Cluster, params: LsLatencyParams) -> LsLatencyData:
    return LsLatencyData([_observe(cluster, endpoint) for endpoint in params.endpoints])


def declared_access(params: LsLatencyParams) -> list[access.Access]:
    """Each proxy path as the API server authorizes it (`services/proxy` by Service, `pods/proxy` by pod);
    plain URLs ask nothing of the cluster. `/version` (public) tells a silent workload from a silent API server."""
    needed: list[access.Access] = [access.of_path(e.proxy_path) for e in params.endpoints if e.proxy_path]
    if needed:
        needed.append(access.non_resource(CONTROL_PATH, when="an endpoint does not answer"))
    return needed


def _runbook_names(endpoint: LsEndpoint) -> dict[str, str]:
    """The names an endpoint's runbook is filled in with: its Service or pod, or its URL."""
    if endpoint.url is not None:
        return {"url": safe_url(endpoint.url)}
    match = _PROXY_PATH.match(endpoint.proxy_path or "")
    assert match is not None  # validated by LsEndpoint
    parts = match["target"].split(":")  # [scheme:]name[:port]
    name = parts[1] if len(parts) > 1 and parts[0] in ("http", "https") else parts[0]
    return {"namespace": match["ns"], "kind": "service" if match["kind"] == "services" else "pod", "name": name}


def _finding(obs: Observation, status: Status, line: str, too_slow: bool) -> Finding:
    """`line` with the step of its class: by verdict, and by whether the endpoint is a cluster object or a URL."""
    proxied = obs.endpoint.url is None
    if status is Status.ERROR:
        runbook = ENDPOINT_NOT_OBSERVED if proxied else URL_NOT_OBSERVED
    elif status is Status.DEGRADED:
        runbook = ENDPOINT_SLOW if proxied else URL_SLOW
    elif not proxied:
        runbook = URL_FAILING
    else:
        runbook = ENDPOINT_TOO_SLOW if too_slow else ENDPOINT_DOWN
    return runbook.at(line, **_runbook_names(obs.endpoint))


def _judge(obs: Observation) -> tuple[Status, Finding | None]:
    """(verdict, one-line message with its step) for one endpoint; the message is None when it is fine."""
    status, line, by_time = _verdict(obs)
    if line is None:
        return status, None
    return status, _finding(obs, status, line, too_slow=by_time and status is Status.FAILED)


def _verdict(obs: Observation) -> tuple[Status, str | None, bool]:
    """(verdict, one-line message, whether only its time is wrong) for one endpoint; no message when it is fine."""
    e = obs.endpoint
    want = f"want HTTP {e.expected_status} within {e.degraded_ms} ms"
    if obs.unobserved is not None:
        return Status.ERROR, f"{e.ref}: not observed: {obs.unobserved}", False
    if obs.no_answer is not None or obs.status_code is None:
        return Status.FAILED, f"{e.ref}: observed {obs.no_answer or 'no answer'} ({want})", False
    code, ms = obs.status_code, obs.elapsed_ms or 0
    if code != e.expected_status:
        if code == 429:
            return Status.ERROR, f"{e.ref}: HTTP 429 rate limited, latency not observed", False
        if 300 <= code < 400:
            return Status.ERROR, f"{e.ref}: HTTP {code} redirect (not followed), latency not observed", False
        said = _preview(obs.body)
        return Status.FAILED, f"{e.ref}: observed HTTP {code} {said!r} in {ms} ms ({want})", False
    if e.expect_body is not None and e.expect_body not in obs.body:
        line = f"{e.ref}: observed HTTP {code} without {e.expect_body!r} in the body ({_preview(obs.body)!r})"
        return Status.FAILED, line, False
    if ms > e.failed_ms:
        return Status.FAILED, f"{e.ref}: observed HTTP {code} in {ms} ms (want within {e.failed_ms} ms)", True
    if ms > e.degraded_ms:
        return Status.DEGRADED, f"{e.ref}: observed HTTP {code} in {ms} ms ({want})", True
    return Status.OK, None, False


def evaluate(data: LsLatencyData, params: LsLatencyParams, now: datetime) -> Result:
    verdicts = [(obs, *_judge(obs)) for obs in data.observations]
    details: dict[str, Any] = {
        "endpoints": [
            {
                "name": obs.endpoint.name,
                "target": obs.endpoint.where,
                "status": verdict.value,
                "status_code": obs.status_code,
                "elapsed_ms": obs.elapsed_ms,
                "expected_status": obs.endpoint.expected_status,
                "degraded_ms": obs.endpoint.degraded_ms,
                "failed_ms": obs.endpoint.failed_ms,
            }
            for obs, verdict, _ in verdicts
        ]
    }
    total = len(verdicts)
    by = {status: [message for _, verdict, message in verdicts if verdict is status and message] for status in Status}
    failed, unobserved, slow = by[Status.FAILED], by[Status.ERROR], by[Status.DEGRADED]
    if failed:
        return Result.failed(
            NAME,
            f"{len(failed)} of {total} LS endpoint(s) failing: {failed[0].line}",
            failed + unobserved + slow,
            details,
        )
    if unobserved:
        summary = f"{len(unobserved)} of {total} LS endpoint(s) not observed: {unobserved[0].line}"
        return Result.unobserved(NAME, summary, unobserved + slow, details)
    if slow:
        return Result.degraded(NAME, f"{len(slow)} of {total} LS endpoint(s) slow: {slow[0].line}", slow, details)
    slowest = max((obs.elapsed_ms or 0) for obs in data.observations)
    return Result.ok(NAME, f"{total} LS endpoint(s) answered as expected (slowest {slowest} ms)", details)


CHECK = CheckSpec(
    name=NAME,
    system="koordinator",
    layer="workload SLO",
    severity="warning",
    schedule_minutes=1,
    fails_when=FAILS_WHEN,
    params=LsLatencyParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
