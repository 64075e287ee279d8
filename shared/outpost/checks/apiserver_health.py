"""apiserver-health: is the Kubernetes API server live and ready?

`/livez?verbose` and `/readyz?verbose` are judged by status code (docs/contracts.md "Kubernetes API server"),
each failing readyz line one error. As for every health endpoint, a 200 that is not the API server's report (a
load balancer's page), one longer than the head read (`outpost.kube.health`), a 3xx or a 429 are `error`: the
API server was not observed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.kube import access
from outpost.kube.health import MAX_HEALTH_BYTES, MAX_HEALTH_LINES, read_health_body
from outpost.result import Finding, Result
from outpost.runbook import Runbook

NAME = "apiserver-health"
FAILS_WHEN = "/livez or /readyz not 200; details list every readyz check line"

CHECK_FAILING = Runbook(
    "check-failing",
    "A named /livez or /readyz check of the API server fails",
    "`etcd`/`etcd-readiness`: etcd is down, out of quorum, its disk full or slow, or its client certificate "
    "expired; `informer-sync`, `poststarthook/*`: the API server is (re)starting or cannot finish a start hook; "
    "`shutdown`: it is being stopped",
    "kubectl get --raw /metrics/slis",
    "https://kubernetes.io/docs/reference/using-api/health-checks/",
)
ENDPOINT_NOT_OK = Runbook(
    "endpoint-not-ok",
    "/livez or /readyz answers an error without naming a failing check",
    "the API server is starting or shutting down, or a load balancer or proxy in front of it answers (503 with "
    "no backend up)",
    "kubectl get --raw /metrics/slis",
    "https://kubernetes.io/docs/reference/using-api/health-checks/",
)
NOT_A_HEALTH_REPORT = Runbook(
    "not-a-health-report",
    "Something other than the API server's health report answered",
    "the cluster's address reaches a load balancer page, a proxy or another server instead of the API server, or "
    "the answer was redirected or rate limited on the way",
    "kubectl get --raw '{path}?verbose'",
    "kubectl cluster-info",
)

RUNBOOKS = (CHECK_FAILING, ENDPOINT_NOT_OK, NOT_A_HEALTH_REPORT)


class ApiserverHealthParams(Params):
    exclude: list[str] = Field(
        default_factory=list,
        description="readyz/livez checks to leave out (passed as ?exclude=), e.g. a known-flaky informer-sync.",
    )
    timeout_seconds: float = Field(10.0, gt=0, le=60, description="Per-endpoint read timeout.")


@dataclass(frozen=True)
class Endpoint:
    path: str
    status_code: int
    body: str


@dataclass(frozen=True)
class ApiserverHealthData:
    livez: Endpoint
    readyz: Endpoint


def fetch(cluster: Cluster, params: ApiserverHealthParams) -> ApiserverHealthData:
    query: list[tuple[str, str]] = [("verbose", "")] + [("exclude", name) for name in params.exclude]

    def probe(path: str) -> Endpoint:
        response = cluster.get(path, params=query, accept="text/plain", timeout=params.timeout_seconds)
        return Endpoint(path, response.status_code, response.text)

    return ApiserverHealthData(livez=probe("/livez"), readyz=probe("/readyz"))


def declared_access(params: ApiserverHealthParams) -> list[access.Access]:
    return [access.non_resource("/livez"), access.non_resource("/readyz")]


def parse_lines(body: str) -> list[dict[str, Any]]:
    """`[+]etcd ok` / `[-]etcd failed: reason withheld` lines of the body's head, in order."""
    return [{"name": line.name, "ok": line.ok, "line": line.line} for line in read_health_body(body).lines]


def _judge(endpoint: Endpoint) -> tuple[dict[str, Any], list[Finding], str | None]:
    """(details, failing lines, why the body is not a health report) for one endpoint."""
    body = read_health_body(endpoint.body)
    checks = [{"name": line.name, "ok": line.ok, "line": line.line} for line in body.lines]
    details: dict[str, Any] = {"status_code": endpoint.status_code, "checks": checks}
    if body.truncated:
        details["truncated"] = True
    errors = [CHECK_FAILING.at(f"apiserver {endpoint.path}: {line.detail}") for line in body.lines if not line.ok]
    if endpoint.status_code != 200 and not errors:
        preview = " ".join(endpoint.body[:1024].split())[:120]
        line = f"apiserver {endpoint.path}: HTTP {endpoint.status_code} {preview!r}"
        errors.append(ENDPOINT_NOT_OK.at(line))
    elif endpoint.status_code == 200 and errors:
        line = f"apiserver {endpoint.path}: HTTP 200 although {len(errors)} check(s) report failure"
        errors.append(CHECK_FAILING.at(line))
    unobservable = None
    if 300 <= endpoint.status_code < 400 or endpoint.status_code == 429:
        # A redirect or a rate limit is not the API server's verdict on its health: we did not observe it.
        kind = "redirect (not followed)" if endpoint.status_code < 400 else "rate limited"
        return details, [], f"apiserver {endpoint.path}: HTTP {endpoint.status_code} {kind}, health not observed"
    if endpoint.status_code == 200 and body.truncated:
        # Fail closed: the lines past the head were not read, and any of them may be failing.
        unobservable = (
            f"apiserver {endpoint.path}: HTTP 200 with an answer of {body.size} characters, longer than "
            f"a health report ({MAX_HEALTH_LINES} lines or {MAX_HEALTH_BYTES} bytes read): not judged"
        )
    elif endpoint.status_code == 200 and not checks:
        unobservable = f"apiserver {endpoint.path}: HTTP 200 without a verbose health report (not the API server?)"
    return details, errors, unobservable


def evaluate(data: ApiserverHealthData, params: ApiserverHealthParams, now: datetime) -> Result:
    details: dict[str, Any] = {"excluded": list(params.exclude)}
    errors: list[Finding] = []
    unobservable: list[Finding] = []
    failing_endpoints: list[str] = []
    for key, endpoint in (("livez", data.livez), ("readyz", data.readyz)):
        details[key], endpoint_errors, not_a_report = _judge(endpoint)
        errors += endpoint_errors
        if not_a_report:
            unobservable.append(NOT_A_HEALTH_REPORT.at(not_a_report, path=endpoint.path))
        if endpoint_errors:
            failing_endpoints.append(f"{endpoint.path} {endpoint.status_code}")
    if unobservable:
        return Result.unobserved(NAME, unobservable[0].line, unobservable, details)
    if errors:
        failing = dict.fromkeys(c["name"] for k in ("livez", "readyz") for c in details[k]["checks"] if not c["ok"])
        names = f"; failing: {', '.join(failing)}" if failing else ""
        return Result.failed(NAME, f"apiserver unhealthy: {', '.join(failing_endpoints)}{names}", errors, details)
    total = len(details["readyz"]["checks"])
    return Result.ok(NAME, f"apiserver live and ready ({total} readyz checks passed)", details)


CHECK = CheckSpec(
    name=NAME,
    system="kwok / any",
    layer="control plane",
    severity="critical",
    schedule_minutes=1,
    fails_when=FAILS_WHEN,
    params=ApiserverHealthParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
