"""Health endpoints behind the API server's proxy: GET many, classify each answer the Outpost way.

A proxied answer mixes the target's reply and the API server's word about reaching it; `classify` (pure) tells
them apart once for every check (table: docs/contracts.md "Kubernetes API server"). A timeout counts against the
target only after the API server answers a control `GET /version`, so a dead API server is `error`, never a
wall of unhealthy targets. `probe_all` probes each target once, bounded by `concurrency`, `timeout` and the run's
`Deadline`, joins its threads, and by default raises `ClusterError` if any target went unobserved.
"""

from __future__ import annotations

import concurrent.futures
import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from outpost.cluster.client import REFUSED_STATUSES, Cluster
from outpost.errors import (
    ClusterAuthError,
    ClusterError,
    ClusterTimeout,
    ClusterUnreachable,
)

DEFAULT_CONCURRENCY = 4
"""Requests in flight at once: enough to probe a few replicas together, gentle on the API server."""

CONTROL_PATH = "/version"
"""Asked after a proxied request timed out or failed to connect: does the API server itself answer?
Readable by every authenticated identity (system:public-info-viewer) and never proxied."""

CONTROL_TIMEOUT_SECONDS = 5.0

_PREVIEW = 120
_HEAD = 64 * 1024
"""The part of a body looked at: health answers and Status messages are a few hundred bytes."""


class Verdict(enum.StrEnum):
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    UNOBSERVED = "unobserved"


@dataclass(frozen=True)
class ProbeTarget:
    """One endpoint to probe.

    `ref` names the object in messages (`pod kruise-system/kruise-controller-manager-abc`, from
    `outpost.kube.ref`); `label` says which endpoint of it (`:8000/healthz`); `path` is the proxy path
    (built with `outpost.cluster.pod_proxy` / `service_proxy` / `node_proxy`); `expect_body`, when set,
    must equal the body with surrounding whitespace stripped (controller-runtime answers `ok`).
    """

    ref: str
    label: str
    path: str
    expect_body: str | None = None


@dataclass(frozen=True)
class ProbeOutcome:
    target: ProbeTarget
    verdict: Verdict
    detail: str
    """One line: `HTTP 500 '[-]ping failed: reason withheld' (want 200)`, `no answer within 2 s`."""
    status_code: int | None = None
    body: str = ""
    """The body, shortened to a preview (health bodies are short; a page of HTML is not kept)."""
    elapsed_ms: int = 0

    @property
    def healthy(self) -> bool:
        return self.verdict is Verdict.HEALTHY

    @property
    def message(self) -> str:
        """`pod ns/name :8000/readyz: HTTP 500 '...' (want 200)`: one error line naming the object."""
        return f"{self.target.ref} {self.target.label}: {self.detail}"

    def as_detail(self) -> dict[str, Any]:
        """A JSON-friendly record for a result's `details`."""
        return {
            "target": self.target.ref,
            "endpoint": self.target.label,
            "verdict": self.verdict.value,
            "status_code": self.status_code,
            "detail": self.detail,
            "elapsed_ms": self.elapsed_ms,
        }


def preview(text: str, limit: int = _PREVIEW) -> str:
    """`text` on one line, quoted, shortened to `limit` characters."""
    head = text[: limit * 8]  # never split a whole (possibly huge) body to show `limit` characters of it
    flat = " ".join(head.split())
    more = len(flat) > limit or len(text) > len(head)
    return repr(flat[:limit] + ("…" if more else ""))


def _api_status_message(body: str) -> str | None:
    """The message of a Kubernetes `Status` body (the API server speaking, not the target), if it is one."""
    if not body[:_HEAD].lstrip().startswith("{") or len(body) > _HEAD:
        return None  # a Status is a few hundred bytes; a larger body is read as the target's
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(parsed, dict) and parsed.get("kind") == "Status" and isinstance(parsed.get("message"), str):
        return " ".join(str(parsed["message"]).split())[: _PREVIEW * 2]
    return None


def classify(status_code: int, body: str, expect_body: str | None = None) -> tuple[Verdict, str]:
    """The verdict on one proxied answer, and a one-line detail of what was observed (and wanted)."""
    if 200 <= status_code < 300:
        if expect_body is not None and (len(body) > len(expect_body) + _HEAD or body.strip() != expect_body):
            return Verdict.UNHEALTHY, f"HTTP {status_code} with body {preview(body)} (want {expect_body!r})"
        return Verdict.HEALTHY, f"HTTP {status_code}"
    if status_code in (401, 403):
        return Verdict.UNOBSERVED, f"HTTP {status_code}: our identity was refused, health not observed"
    if status_code == 429:
        return Verdict.UNOBSERVED, "HTTP 429: rate limited by the API server, health not observed"
    if status_code in REFUSED_STATUSES:  # `Cluster` raises ClusterRequestRefused first; this keeps `classify` whole
        return Verdict.UNOBSERVED, (
            f"HTTP {status_code} {REFUSED_STATUSES[status_code]}: our own request was refused, health not observed"
        )
    if 300 <= status_code < 400:
        return Verdict.UNOBSERVED, f"HTTP {status_code}: redirect (not followed), health not observed"
    if 400 <= status_code < 600:
        api_message = _api_status_message(body)
        said = f"({api_message})" if api_message else (preview(body) if body.strip() else "with an empty body")
        return Verdict.UNHEALTHY, f"HTTP {status_code} {said} (want 200)"
    # 1xx or a code outside HTTP's range: not an answer we can read as health.
    return Verdict.UNOBSERVED, f"HTTP {status_code}: not a final answer, health not observed"


@dataclass(frozen=True)
class _Raw:
    """What one request produced before the control request settles timeouts."""

    target: ProbeTarget
    outcome: ProbeOutcome | None = None
    transport_failure: str | None = None  # "no answer within 2 s", "connection failed (...)"


def _probe_one(cluster: Cluster, target: ProbeTarget, timeout: float, accept: str) -> _Raw:
    try:
        response = cluster.get(target.path, accept=accept, timeout=timeout)
    except ClusterAuthError as error:
        return _Raw(target, ProbeOutcome(target, Verdict.UNOBSERVED, str(error)))
    except ClusterTimeout as error:
        if cluster.deadline.expired:
            return _Raw(target, ProbeOutcome(target, Verdict.UNOBSERVED, str(error)))
        return _Raw(target, transport_failure=f"no answer within {timeout:g} s")
    except ClusterUnreachable as error:
        return _Raw(target, transport_failure=f"connection failed ({error})")
    except ClusterError as error:  # too large, or anything else the client could not read
        return _Raw(target, ProbeOutcome(target, Verdict.UNOBSERVED, str(error)))
    verdict, detail = classify(response.status_code, response.text, target.expect_body)
    return _Raw(
        target,
        ProbeOutcome(
            target,
            verdict,
            detail,
            response.status_code,
            " ".join(response.text[:_HEAD].split())[:_PREVIEW],
            response.elapsed_ms,
        ),
    )


def api_server_answers(cluster: Cluster, timeout: float = CONTROL_TIMEOUT_SECONDS) -> str | None:
    """None when the API server itself answers `GET /version` in time; otherwise why not (one line)."""
    try:
        cluster.get(CONTROL_PATH, timeout=timeout)
    except ClusterAuthError:
        return None  # it answered (and refused us): it is alive, which is all this asks
    except ClusterError as error:
        return str(error)
    return None


def probe_all(
    cluster: Cluster,
    targets: Sequence[ProbeTarget],
    *,
    timeout: float,
    concurrency: int = DEFAULT_CONCURRENCY,
    accept: str = "*/*",
    raise_unobserved: bool = True,
) -> list[ProbeOutcome]:
    """GET every target's proxy path and classify each answer (see the module docstring).

    `timeout` is per target (a target slower than that is unhealthy); the run's deadline bounds all.
    """
    if not targets:
        return []
    workers = max(1, min(concurrency, len(targets)))
    if workers == 1:
        raws = [_probe_one(cluster, t, timeout, accept) for t in targets]
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="outpost-probe") as pool:
            raws = list(pool.map(lambda t: _probe_one(cluster, t, timeout, accept), targets))
    outcomes: list[ProbeOutcome] = []
    silent = [raw for raw in raws if raw.outcome is None]
    why_not = api_server_answers(cluster) if silent else None
    for raw in raws:
        if raw.outcome is not None:
            outcomes.append(raw.outcome)
        elif why_not is None:
            outcomes.append(
                ProbeOutcome(raw.target, Verdict.UNHEALTHY, f"{raw.transport_failure} through the API server proxy")
            )
        else:
            outcomes.append(
                ProbeOutcome(
                    raw.target,
                    Verdict.UNOBSERVED,
                    f"{raw.transport_failure}, and the API server itself does not answer: {why_not}",
                )
            )
    if raise_unobserved:
        raise_if_unobserved(outcomes)
    return outcomes


def raise_if_unobserved(outcomes: Sequence[ProbeOutcome]) -> None:
    """Raise `ClusterError` naming the first outcome that could not be observed (and how many more)."""
    unobserved = [o for o in outcomes if o.verdict is Verdict.UNOBSERVED]
    if unobserved:
        more = f" (and {len(unobserved) - 1} more endpoint(s) not observed)" if len(unobserved) > 1 else ""
        raise ClusterError(f"{unobserved[0].message}{more}")


__all__ = [
    "CONTROL_PATH",
    "DEFAULT_CONCURRENCY",
    "ProbeOutcome",
    "ProbeTarget",
    "Verdict",
    "api_server_answers",
    "classify",
    "preview",
    "probe_all",
    "raise_if_unobserved",
]
