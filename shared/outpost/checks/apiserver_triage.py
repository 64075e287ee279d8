"""apiserver-triage: when the API server is unwell, which rung of the ladder breaks?

Each step timed, each only when the one before held: (1) TCP connect, (2) TLS handshake with the cluster's trust
and client credential (`Cluster.tls_probe`, no request), (3) `GET /readyz?verbose` (exempt from Priority and
Fairness), (4) a real `LIST` with `limit=1` as the probe, which APF does judge, (5) only if the LIST failed,
`/readyz` again: "overloaded" means the LIST fails WHILE `/readyz` is 200, and a lost etcd fails the LIST first.

Classes (`details.class`; timings in `details.steps`): `network`, `tls`, `not-ready` (`/readyz` not 200 or
silent, failing lines named, or a 5xx LIST while it is 200), `overloaded` (the LIST gets 429 or times out while
`/readyz` is 200: what the tutorials' TCP and readyz checks miss), `healthy`. All but healthy are `failed`; a LIST
slower than `slow_list_ms` is `degraded`. 401/403, a redirect, a 429 on `/readyz` (it is exempt, so that is not
the API server's verdict), a 200 LIST that is no list, or a spent deadline are `error`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import Field

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster, TlsProbe
from outpost.errors import ClusterTimeout, ClusterUnreachable, MalformedResponse
from outpost.kube import access
from outpost.kube.health import failing, parse_health_body
from outpost.result import Result
from outpost.runbook import Runbook

NAME = "apiserver-triage"

HEALTH_CHECKS_PAGE = "https://kubernetes.io/docs/reference/using-api/health-checks/"
# One failure class per triage class, named alike; `{address}` is the API server's host:port as the probe dials it.
RUNBOOK_OF_CLASS: dict[str, Runbook] = {
    "network": Runbook(
        "network",
        "The API server's address cannot be reached",
        "kube-apiserver is down (crashed, OOM-killed, its static pod or unit stopped), its address moved (DNS, a "
        "load balancer or endpoint IP changed), or a firewall or security group drops the probe's traffic",
        "kubectl config view --minify -o jsonpath='apiserver {{.clusters[0].cluster.server}}'",
        "https://kubernetes.io/docs/tasks/debug/debug-cluster/",
    ),
    "tls": Runbook(
        "tls",
        "The TLS handshake with the API server fails",
        "the serving certificate expired or was re-issued by another CA than the kubeconfig trusts, or it does not "
        "name the address dialled (a SAN missing after an address change)",
        "openssl s_client -connect {address} </dev/null 2>/dev/null | openssl x509 -noout -subject -issuer -dates",
        "https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/kubeadm-certs/",
    ),
    "not-ready": Runbook(
        "not-ready",
        "The API server answers but is not ready",
        "etcd is down, out of quorum or too slow (`etcd` and `etcd-readiness` fail), or the API server is starting "
        "or shutting down (`informer-sync`, `poststarthook/*`, `shutdown`)",
        "kubectl get --raw /metrics/slis",
        HEALTH_CHECKS_PAGE,
    ),
    "overloaded": Runbook(
        "overloaded",
        "The API server rejects or stalls real requests while /readyz is 200",
        "API Priority and Fairness puts the probe identity in a priority level whose seats are taken (a client "
        "flooding the API server, a FlowSchema that routes the probe to a small or `Reject` level), or the API "
        "server or etcd is saturated",
        "kubectl get flowschemas -o wide && "
        "kubectl get --raw /metrics | awk '/^apiserver_flowcontrol_rejected_requests_total/'",
        "https://kubernetes.io/docs/concepts/cluster-administration/flow-control/",
    ),
}
NOT_OBSERVED = Runbook(
    "not-observed",
    "The API server's answer says nothing about its readiness",
    "a proxy or load balancer in front of the API server redirects or rate-limits /readyz, or the LIST path "
    "(list_path) is not served by this cluster",
    "kubectl get --raw '/readyz?verbose'",
    "docs/reliability.md",
)
RUNBOOKS = (*RUNBOOK_OF_CLASS.values(), NOT_OBSERVED)

TriageClass = Literal["network", "tls", "not-ready", "overloaded", "healthy"]
# The classes named are the ones the check gives a failure, so the catalogue cannot name another.
FAILS_WHEN = "a rung of the TCP/TLS/readyz/LIST ladder breaks, classified " + ", ".join(
    name for name in get_args(TriageClass) if name != "healthy"
)

Outcome = Literal["ok", "failed", "timeout", "unreachable", "skipped"]
STEPS = ("tcp", "tls", "readyz", "list", "readyz-after")
"""`readyz-after` is asked only when the LIST failed (see `fetch`)."""


class ApiserverTriageParams(Params):
    list_path: str = Field(
        "/api/v1/namespaces",
        pattern=r"^/(api|apis)/",
        description="Collection LISTed with limit=1 as the probe identity.",
    )
    readyz_timeout_seconds: float = Field(5.0, gt=0, le=60, description="Read timeout of /readyz.")
    list_timeout_seconds: float = Field(
        5.0,
        gt=0,
        le=60,
        description="Read timeout of the LIST; a LIST that times out while /readyz is 200 is `overloaded`.",
    )
    slow_list_ms: float = Field(1000.0, gt=0, description="A healthy LIST slower than this is `degraded`.")


@dataclass(frozen=True)
class Step:
    """One rung: what it was, how it went, how long it took."""

    name: str
    outcome: Outcome
    ms: float | None = None
    status_code: int | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.name,
            "outcome": self.outcome,
            "ms": self.ms,
            "status_code": self.status_code,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class TriageData:
    address: str
    list_path: str
    steps: list[Step] = field(default_factory=list)
    readyz_body: str = ""

    def step(self, name: str) -> Step:
        for step in self.steps:
            if step.name == name:
                return step
        return Step(name, "skipped")


def _tls_steps(probe: TlsProbe) -> list[Step]:
    if not probe.connected:
        outcome: Outcome = "timeout" if "timed out" in (probe.tcp_error or "") else "unreachable"
        return [Step("tcp", outcome, probe.tcp_ms, detail=probe.tcp_error or "")]
    steps = [Step("tcp", "ok", probe.tcp_ms)]
    if probe.tls_error is not None:
        outcome = "timeout" if "timed out" in probe.tls_error else "failed"
        return [*steps, Step("tls", outcome, probe.tls_ms, detail=probe.tls_error)]
    return [*steps, Step("tls", "ok", probe.tls_ms, detail=probe.tls_version or "")]


def fetch(cluster: Cluster, params: ApiserverTriageParams) -> TriageData:
    probe = cluster.tls_probe()
    data = TriageData(probe.address, params.list_path, _tls_steps(probe))
    if data.steps[-1].outcome != "ok":
        return data
    readyz, body = _request(cluster, "readyz", "/readyz", {"verbose": ""}, "text/plain", params.readyz_timeout_seconds)
    data = TriageData(data.address, data.list_path, [*data.steps, readyz], body)
    if readyz.outcome != "ok" or readyz.status_code != 200:
        return data
    listed, body = _request(
        cluster, "list", params.list_path, {"limit": 1}, "application/json", params.list_timeout_seconds
    )
    if listed.status_code == 200:
        listed = _check_list(listed, body, cluster.name)
        return TriageData(data.address, data.list_path, [*data.steps, listed], data.readyz_body)
    # The LIST failed. "Overloaded" means it failed WHILE /readyz is 200: ask again, because a
    # dependency that just went away (etcd) fails the LIST before /readyz notices.
    again, again_body = _request(
        cluster, "readyz-after", "/readyz", {"verbose": ""}, "text/plain", params.readyz_timeout_seconds
    )
    return TriageData(
        data.address,
        data.list_path,
        [*data.steps, listed, again],
        again_body if again.status_code not in (None, 200) else data.readyz_body,
    )


def declared_access(params: ApiserverTriageParams) -> list[access.Access]:
    """/readyz (public) and the LIST of `list_path` (TCP and TLS ask nothing of RBAC)."""
    return [access.non_resource("/readyz"), access.of_path(params.list_path, "list")]


def _request(
    cluster: Cluster, name: str, path: str, query: dict[str, str | int], accept: str, timeout: float
) -> tuple[Step, str]:
    """One timed GET as a ladder step; 401/403 and an exhausted deadline propagate (`error`)."""
    started = time.monotonic()
    try:
        response = cluster.get(path, params=query, accept=accept, timeout=timeout)
    except ClusterTimeout as error:
        if cluster.deadline.expired:
            raise
        return Step(name, "timeout", _spent(started), detail=str(error)), ""
    except ClusterUnreachable as error:
        return Step(name, "unreachable", _spent(started), detail=str(error)), ""
    outcome: Outcome = "ok" if response.status_code == 200 else "failed"
    return Step(name, outcome, float(response.elapsed_ms), response.status_code), response.text


def _check_list(step: Step, body: str, cluster: str) -> Step:
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser: not a list either
        decoded = None
    if not isinstance(decoded, dict) or not isinstance(decoded.get("items"), list):
        raise MalformedResponse(f"LIST on cluster {cluster}: HTTP 200 without a list of items")
    return Step(step.name, step.outcome, step.ms, step.status_code, f"{len(decoded['items'])} item(s)")


def _spent(started: float) -> float:
    return round((time.monotonic() - started) * 1000.0, 2)


def classify(data: TriageData) -> tuple[TriageClass | None, str]:
    """(class, why) from the steps; class None means "not observed" (the why says what)."""
    tcp, tls, readyz, listed = (data.step(name) for name in ("tcp", "tls", "readyz", "list"))
    where = f"apiserver {data.address}"
    if tcp.outcome != "ok":
        return "network", f"{where}: {tcp.detail or 'TCP connect failed'}"
    if tls.outcome != "ok":
        return "tls", f"{where}: {tls.detail or 'TLS handshake failed'}"
    if readyz.outcome in ("unreachable",):
        return "network", f"{where}: /readyz: {readyz.detail}"
    if readyz.outcome == "timeout":
        return "not-ready", f"{where}: /readyz did not answer within its timeout ({readyz.detail})"
    code = readyz.status_code or 0
    if 300 <= code < 400 or code == 429:
        kind = "redirect (not followed)" if code < 400 else "rate limited (health endpoints are exempt)"
        return None, f"{where}: /readyz HTTP {code} {kind}, readiness not observed"
    if code != 200:
        lines = failing(parse_health_body(data.readyz_body))
        named = "; ".join(line.detail for line in lines) or "no failing check named"
        return "not-ready", f"{where}: /readyz HTTP {code}: {named} (want 200)"
    listed_what = f"LIST {data.list_path}?limit=1"
    again = data.step("readyz-after")
    if again.outcome not in ("ok", "skipped") or (again.status_code or 200) != 200:
        lines = failing(parse_health_body(data.readyz_body))
        named = "; ".join(line.detail for line in lines) or again.detail or f"HTTP {again.status_code}"
        return "not-ready", (f"{where}: {listed_what} {_listed(listed)}, then /readyz not ready: {named} (want 200)")
    if listed.outcome == "unreachable":
        return "network", f"{where}: {listed_what}: {listed.detail}"
    if listed.outcome == "timeout":
        return "overloaded", f"{where}: {listed_what} timed out while /readyz is 200 ({listed.detail})"
    code = listed.status_code or 0
    if code == 429:
        return "overloaded", (
            f"{where}: {listed_what} answered 429 Too Many Requests while /readyz is 200 "
            "(API Priority and Fairness rejects the probe identity)"
        )
    if code >= 500:
        return "not-ready", f"{where}: {listed_what} answered HTTP {code} while /readyz is 200 (want 200)"
    if code != 200:
        return None, f"{where}: {listed_what} answered HTTP {code}, not observed (want 200)"
    return "healthy", f"{where}: TCP, TLS, /readyz and {listed_what} all answered"


def _listed(step: Step) -> str:
    return f"answered HTTP {step.status_code}" if step.status_code is not None else f"did not answer ({step.outcome})"


def evaluate(data: TriageData, params: ApiserverTriageParams, now: datetime) -> Result:
    triage_class, why = classify(data)
    details: dict[str, Any] = {
        "class": triage_class,
        "address": data.address,
        "list_path": data.list_path,
        "steps": [data.step(name).as_dict() for name in STEPS],
    }
    readyz_lines = parse_health_body(data.readyz_body)
    if readyz_lines:
        details["readyz_failing"] = [line.name for line in failing(readyz_lines)]
    if triage_class is None:
        return Result.unobserved(NAME, why, [NOT_OBSERVED.at(why, address=data.address)], details)
    if triage_class != "healthy":
        finding = RUNBOOK_OF_CLASS[triage_class].at(why, address=data.address)
        return Result.failed(NAME, f"apiserver {triage_class}: {why}", [finding], details)
    list_ms = data.step("list").ms or 0.0
    timings = ", ".join(
        f"{s.name} {s.ms:.0f} ms" for s in (data.step(n) for n in ("tcp", "tls", "readyz", "list")) if s.ms is not None
    )
    if list_ms > params.slow_list_ms:
        summary = (
            f"apiserver healthy but slow: LIST took {list_ms:.0f} ms (want <= {params.slow_list_ms:.0f} ms); {timings}"
        )
        return Result.degraded(NAME, summary, [], details)
    return Result.ok(NAME, f"apiserver healthy ({timings})", details)


CHECK = CheckSpec(
    name=NAME,
    system="kwok / any",
    layer="control plane",
    severity="critical",
    schedule_minutes=1,
    fails_when=FAILS_WHEN,
    params=ApiserverTriageParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
