"""kruise-daemon-coverage: every node that should run kruise-daemon has a ready one; optionally,
each answers `/healthz` on 10221.

Judged by comparing nodes with pods (`outpost.checks.daemon_coverage`), not by the DaemonSet's
counters. Upstream: DaemonSet `kruise-system/kruise-daemon`, pods labelled `control-plane=daemon`,
hostNetwork, avoiding nodes labelled `type=virtual-kubelet` (so virtual nodes are not judged: the
default `NodeSelection` leaves them out). When OpenKruise runs with the feature gate
`KruiseDaemon=false` the DaemonSet does not exist: that is reported as such and is `failed`, never
"healthy" (image pre-download, container restart and in-place update then do not work).

Per-node `/healthz` (opt-in, `probe_healthz`): through the API server's node proxy
(`/api/v1/nodes/NODE:10221/proxy/healthz`), only for nodes whose kruise-daemon pod is ready, at most
`healthz_concurrency` at once. Opt-in because it needs `get nodes/proxy`, which also reaches every
kubelet's API: `outpost rbac` generates the separate ClusterRole `outpost-probe-node-proxy`, with a
warning, only for an environment that turns `probe_healthz` on. Answers are classified by
`outpost.cluster.probes`: a non-2xx answer, a reset or a hang (while the API server itself answers)
is the node's daemon failing; 401/403 (the role not bound), 429 or a dead API server is `error`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from outpost.checks.base import CheckSpec
from outpost.checks.daemon_coverage import (
    DaemonCoverageData,
    DaemonCoverageParams,
    coverage_result,
    fetch_coverage,
    judge_coverage,
)
from outpost.checks.daemon_coverage import (
    declared_access as coverage_access,
)
from outpost.cluster import Cluster, node_proxy
from outpost.cluster.probes import ProbeOutcome, ProbeTarget, probe_all
from outpost.kube import access
from outpost.kube.daemons import coverage
from outpost.kube.messages import FIRST_NAMED, ref
from outpost.kube.nodes import select_nodes
from outpost.result import Result, Status

NAME = "kruise-daemon-coverage"
ABSENT_HINT = "is OpenKruise running with feature gate KruiseDaemon=false?"


class KruiseDaemonCoverageParams(DaemonCoverageParams):
    namespace: str = Field("kruise-system", description="Namespace of the kruise-daemon DaemonSet.")
    daemonset: str = Field("kruise-daemon", description="Name of the kruise-daemon DaemonSet.")
    pod_selector: str = Field("control-plane=daemon", description="Label selector of kruise-daemon pods.")
    probe_healthz: bool = Field(
        False, description="Also GET each covered node's kruise-daemon /healthz through the node proxy. Needs "
                           "`get nodes/proxy` (ClusterRole outpost-probe-node-proxy, powerful: reaches kubelets).")
    healthz_port: int = Field(10221, ge=1, le=65535)
    healthz_path: str = Field("/healthz")
    healthz_scheme: Literal["http", "https"] = Field("http")
    healthz_expect_body: str | None = Field(None, description="Body that must match (stripped); None: any 2xx.")
    healthz_timeout_seconds: float = Field(5.0, gt=0, le=60, description="Per node; a slower answer is a failure.")
    healthz_concurrency: int = Field(8, ge=1, le=64, description="Node proxy requests in flight at once.")


@dataclass(frozen=True)
class KruiseDaemonData:
    coverage: DaemonCoverageData
    healthz: tuple[ProbeOutcome, ...] = ()  # one per probed node, when probe_healthz


def healthz_label(params: KruiseDaemonCoverageParams) -> str:
    return f":{params.healthz_port}{params.healthz_path}"


def healthz_targets(data: DaemonCoverageData, params: KruiseDaemonCoverageParams) -> list[ProbeTarget]:
    """The nodes whose kruise-daemon is ready (the others already fail coverage), as proxy targets."""
    covered = coverage(select_nodes(data.nodes, params.nodes).nodes, data.pods).covered
    return [ProbeTarget(ref("Node", node), healthz_label(params),
                        node_proxy(node, params.healthz_port, params.healthz_path,
                                   scheme="https" if params.healthz_scheme == "https" else None),
                        params.healthz_expect_body)
            for node in covered]


def fetch(cluster: Cluster, params: KruiseDaemonCoverageParams) -> KruiseDaemonData:
    data = fetch_coverage(cluster, params)
    if not params.probe_healthz:
        return KruiseDaemonData(data)
    outcomes = probe_all(cluster, healthz_targets(data, params), timeout=params.healthz_timeout_seconds,
                         concurrency=params.healthz_concurrency)
    return KruiseDaemonData(data, tuple(outcomes))


def evaluate(data: KruiseDaemonData, params: KruiseDaemonCoverageParams, now: datetime) -> Result:
    verdict = judge_coverage(data.coverage, params, "kruise-daemon", ABSENT_HINT)
    if verdict.unobservable or not params.probe_healthz:
        return coverage_result(NAME, verdict)
    failing = [outcome for outcome in data.healthz if not outcome.healthy]
    details: dict[str, Any] = dict(verdict.details)
    details["healthz"] = {"probed": len(data.healthz), "healthy": len(data.healthz) - len(failing),
                          "failing": [o.as_detail() for o in failing[:FIRST_NAMED]]}
    errors = list(verdict.errors)
    ds_ref = ref("DaemonSet", params.daemonset, params.namespace)
    errors += [f"{ds_ref}: {outcome.message}" for outcome in failing[:FIRST_NAMED]]
    if len(failing) > FIRST_NAMED:
        errors.append(f"{ds_ref}: {len(failing) - FIRST_NAMED} more nodes failing {healthz_label(params)} "
                      f"({len(failing)} in all)")
    summary = verdict.summary
    if failing and not verdict.errors:
        summary = (f"kruise-daemon {healthz_label(params)} failing on {len(failing)} of {len(data.healthz)} nodes: "
                   f"{failing[0].message}")
    elif not errors:
        summary += f"; {healthz_label(params)} healthy on all {len(data.healthz)}"
    return Result(check=NAME, status=Status.FAILED if errors else Status.OK, summary=summary, errors=errors,
                  details=details)


def declared_access(params: KruiseDaemonCoverageParams) -> list[access.Access]:
    """Coverage's reads; with `probe_healthz`, also the node proxy (reaches the kubelet API: powerful)."""
    needed = coverage_access(params)
    if params.probe_healthz:
        needed.append(access.node_proxy())
    return needed


CHECK = CheckSpec(
    name=NAME,
    system="openkruise",
    layer="node",
    severity="critical",
    schedule_minutes=5,
    fails_when="a node without a ready kruise-daemon; optional per-node /healthz:10221",
    params=KruiseDaemonCoverageParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
)
