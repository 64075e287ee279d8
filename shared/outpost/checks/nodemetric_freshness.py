"""nodemetric-freshness: each selected node's NodeMetric was updated within the expiry.

Only koordlet writes a NodeMetric's `status`, every `reportIntervalSeconds` (60 s; koordinator@v1.6.0
`pkg/koordlet/statesinformer/impl/states_nodemetric.go`), while koord-manager creates a spec-only NodeMetric for
every Node (`pkg/slo-controller/nodemetric`): one without status is a node whose koordlet never reported.

Expiry 180 s: the code default of every consumer's `nodeMetricExpirationSeconds` (LoadAwareScheduling,
LowNodeLoad: `pkg/scheduler/apis/config/v1beta3/defaults.go`, `pkg/descheduler/apis/config/v1alpha2/defaults.go`),
three missed reports. The shipped scheduler configs set 300 s with `filterExpiredNodeMetrics: false`; the stricter
bound names a stopped koordlet a run earlier, and one extra missed report fails at most one run, which the
heartbeat's tolerated misses absorb. `expiry_seconds: 300` alarms only where the shipped scheduler does.

Nodes judged: `NodeSelection`, real nodes by default (a fake node's NodeMetric never gets a status). A NodeMetric
expired, without `status.updateTime` or missing is named (first ten, and the count); an updateTime more than
`max_future_skew_seconds` ahead is stale, named with how far. No node selected, or the API not served, is `error`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.cluster.nodes import read_nodes_and_nodemetrics
from outpost.kube import access
from outpost.kube.messages import FIRST_NAMED, first_named
from outpost.kube.nodes import NODEMETRIC_EXPIRY_SECONDS, NodesAndUsage, NodeSelection, nothing_selected, select_nodes
from outpost.kube.paths import NODE_METRICS, NODES
from outpost.kube.timestamps import future_skew_parameter
from outpost.result import Finding, Result
from outpost.runbook import Runbook

NAME = "nodemetric-freshness"
FAILS_WHEN = (
    "NodeMetric status.updateTime older than {expiry_seconds:g} s, or absent, for a node "
    "(real by default; KWOK fake opt-in)"
)

# koordlet's and koord-manager's upstream namespace and pod labels (koordinator-sh/charts v1.6.0): the line names a
# node, the agent that should report for it is found by these.
KOORDLET = "-n koordinator-system get pods -l koord-app=koordlet -o wide"
NODEMETRIC_STALE = Runbook(
    "nodemetric-stale",
    "A node's NodeMetric is not updated by koordlet",
    "koordlet on the node is not running, crashlooping or cannot reach the API server (it writes status every "
    "60 s), or was never scheduled there (see koordlet-coverage); no status.updateTime at all is a koordlet that "
    "never reported",
    f"kubectl get nodemetrics.slo.koordinator.sh {{node}} -o wide && kubectl {KOORDLET} --field-selector "
    "spec.nodeName={node}",
    "kubectl -n koordinator-system logs --tail=200 $(kubectl -n koordinator-system get pods -l koord-app=koordlet "
    "--field-selector spec.nodeName={node} -o name)",
)
NODEMETRIC_AHEAD = Runbook(
    "nodemetric-ahead",
    "A node's NodeMetric updateTime is ahead of the probe's clock",
    "the node's clock runs ahead (NTP not synchronised on it) or the probe's clock runs behind; a koordlet that "
    "stopped would look fresh until that time",
    "kubectl get nodemetrics.slo.koordinator.sh {node} -o yaml",
    "kubectl describe node {node}",
)
NODEMETRIC_ABSENT = Runbook(
    "nodemetric-absent",
    "A node has no NodeMetric",
    "koord-manager creates one per Node: its slo-controller is not running or not leading (see "
    "koord-manager-health and leader-leases), or the node joined moments ago",
    "kubectl get node {node} -o wide && kubectl -n koordinator-system get pods -l koord-app=koord-manager -o wide",
    "kubectl -n koordinator-system logs deployment/koord-manager --tail=200",
)
MANY_STALE = Runbook(
    "many-stale",
    "More NodeMetrics than the ones named are stale",
    "koordlet stopped reporting on many nodes at once: the DaemonSet was changed or removed, or the API server "
    "rejects or throttles koordlet's updates",
    "kubectl get nodemetrics.slo.koordinator.sh -o wide && kubectl " + KOORDLET,
    "kubectl -n koordinator-system describe daemonset koordlet",
)
MANY_ABSENT = Runbook(
    "many-absent",
    "More nodes than the ones named have no NodeMetric",
    "koord-manager's slo-controller is not running or not leading, so no node gets a NodeMetric",
    "kubectl get nodemetrics.slo.koordinator.sh -o wide && "
    "kubectl -n koordinator-system get pods -l koord-app=koord-manager -o wide",
    "kubectl -n koordinator-system logs deployment/koord-manager --tail=200",
)
NOTHING_SELECTED = Runbook(
    "nothing-selected",
    "No node is of the classes and labels the check judges",
    "every node is a KWOK fake or virtual node, which are left out by default (no koordlet reports for them), or "
    "the parameters' nodes.label_selector matches no node, or every node is cordoned",
    "kubectl get nodes -o wide --show-labels",
    "docs/checks.md#nodemetric-freshness",
)

RUNBOOKS = (NODEMETRIC_STALE, NODEMETRIC_AHEAD, NODEMETRIC_ABSENT, MANY_STALE, MANY_ABSENT, NOTHING_SELECTED)


class NodeMetricFreshnessParams(Params):
    expiry_seconds: float = Field(
        NODEMETRIC_EXPIRY_SECONDS,
        gt=0,
        description="A NodeMetric whose status.updateTime is older than this is stale. Default 180 s, Koordinator's "
        "code default for nodeMetricExpirationSeconds (3 koordlet reports of 60 s); the shipped "
        "koord-scheduler configs use 300 s. Raise it with koordlet's reportIntervalSeconds.",
    )
    max_future_skew_seconds: float = future_skew_parameter("updateTime", 30.0)
    nodes: NodeSelection = Field(
        default_factory=NodeSelection, description="Which nodes are judged (classes, label selector, cordoned)."
    )
    page_size: int = Field(
        100,
        ge=1,
        le=5000,
        description="LIST page size for NodeMetrics (each carries every pod's usage of its node, so pages stay small).",
    )


NodeMetricFreshnessData = NodesAndUsage
"""The selected nodes' facts and their NodeMetrics' reports."""


def fetch(cluster: Cluster, params: NodeMetricFreshnessParams) -> NodeMetricFreshnessData:
    return read_nodes_and_nodemetrics(cluster, params.nodes.label_query(), params.page_size)


def declared_access(params: NodeMetricFreshnessParams) -> list[access.Access]:
    return [access.list_(NODES), access.watch(NODES), access.list_(NODE_METRICS), access.watch(NODE_METRICS)]


def evaluate(data: NodeMetricFreshnessData, params: NodeMetricFreshnessParams, now: datetime) -> Result:
    selected = select_nodes(data.nodes, params.nodes)
    details: dict[str, Any] = {
        "selection": params.nodes.describe(),
        "expiry_seconds": params.expiry_seconds,
        **selected.details(),
    }
    if not selected.nodes:
        return Result.error(NAME, nothing_selected(params.nodes, selected), NOTHING_SELECTED.step(), **details)
    by_node = {metric.node: metric for metric in data.samples}
    missing: list[str] = []
    stale: list[tuple[str, str, Runbook]] = []
    skewed: list[str] = []
    oldest = 0.0
    for node in selected.names:
        metric = by_node.get(node)
        if metric is None:
            missing.append(node)
            continue
        age = metric.age_seconds(now)
        if age is None:
            stale.append((node, "observed no status.updateTime, koordlet has not reported", NODEMETRIC_STALE))
        elif age > params.expiry_seconds:
            stale.append((node, f"observed updateTime {age:.1f} s ago", NODEMETRIC_STALE))
        elif age < -params.max_future_skew_seconds:
            stale.append(
                (
                    node,
                    f"observed updateTime {-age:.1f} s in the future (at most "
                    f"{params.max_future_skew_seconds:g} s ahead of this probe's clock)",
                    NODEMETRIC_AHEAD,
                )
            )
            skewed.append(node)
        else:
            oldest = max(oldest, age)
    details.update(
        {
            "fresh": len(selected.nodes) - len(missing) - len(stale),
            "stale_count": len(stale),
            "missing_count": len(missing),
            "stale": [n for n, _, _ in stale[:FIRST_NAMED]],
            "missing": missing[:FIRST_NAMED],
            "oldest_fresh_age_seconds": round(oldest, 1),
            "future_update_time": skewed[:FIRST_NAMED],
        }
    )
    want = f"want within {params.expiry_seconds:g} s"
    errors: list[Finding] = [
        runbook.at(f"nodemetric {node}: {why} ({want})", node=node) for node, why, runbook in stale[:FIRST_NAMED]
    ]
    if len(stale) > FIRST_NAMED:
        errors.append(MANY_STALE.at(f"nodemetrics: {len(stale) - FIRST_NAMED} more stale ({len(stale)} in all)"))
    errors += [
        NODEMETRIC_ABSENT.at(f"nodemetric {node}: absent for node {node} (want one per selected node)", node=node)
        for node in missing[:FIRST_NAMED]
    ]
    if len(missing) > FIRST_NAMED:
        errors.append(MANY_ABSENT.at(f"nodemetrics: {len(missing) - FIRST_NAMED} more absent ({len(missing)} in all)"))
    n = len(selected.nodes)
    if errors:
        parts = [
            f"{len(stale)} stale: {first_named([s for s, _, _ in stale])}" if stale else "",
            f"{len(missing)} missing: {first_named(missing)}" if missing else "",
        ]
        named = "; ".join(part for part in parts if part)
        return Result.failed(NAME, f"NodeMetrics of {n} nodes: {named}", errors, details)
    return Result.ok(
        NAME,
        (f"NodeMetrics of all {n} selected nodes updated within {params.expiry_seconds:g} s (oldest {oldest:.0f} s)"),
        details,
    )


CHECK = CheckSpec(
    name=NAME,
    system="koordinator",
    layer="node",
    severity="warning",
    schedule_minutes=5,
    fails_when=FAILS_WHEN,
    params=NodeMetricFreshnessParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
