"""node-utilization: no selected node above LoadAwareScheduling's CPU threshold, and the mean CPU
utilisation of the selected nodes within its bounds.

Utilisation = CPU in use / allocatable, from NodeMetrics (default) or `metrics.k8s.io`; nodes are the
`NodeSelection`, real by default. Per node, 65 % is LoadAwareScheduling's default `usageThresholds`
(koordinator@v1.6.0 `pkg/scheduler/apis/config/v1beta3/defaults.go`, as the chart and config/ set it): its Filter
rejects a node above it (`loadaware/load_aware.go` filterNodeUsage), so each such node is named, `degraded`.
That is a per-node filter, not a target for the mean, and upstream has no lower bound: the mean fails only above
`upper_percent` (default the node threshold) or below `lower_percent` (default none; the tutorial's 60 % is
opt-in). A report older than `max_sample_age_seconds` (180 s, the NodeMetric expiry) is left out and counted; no
usable report, no API or no node selected is `error`.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.cluster.nodes import read_metrics_k8s, read_nodes, read_nodes_and_nodemetrics
from outpost.kube import access
from outpost.kube.messages import FIRST_NAMED
from outpost.kube.nodes import NODEMETRIC_EXPIRY_SECONDS, NodesAndUsage, NodeSelection, nothing_selected, select_nodes
from outpost.kube.paths import NODE_METRICS, NODE_METRICS_K8S, NODES
from outpost.result import Finding, Result
from outpost.runbook import Runbook

NAME = "node-utilization"
Source = Literal["nodemetric", "metrics.k8s.io"]
LOAD_AWARE_CPU_THRESHOLD = 65.0


FAILS_WHEN = (
    "mean node CPU utilisation above the upper bound (default LoadAware's "
    f"{LOAD_AWARE_CPU_THRESHOLD:g} %) or below an opt-in lower bound (default none); a node above "
    f"{LOAD_AWARE_CPU_THRESHOLD:g} % is named (degraded)"
)

# Each node's reported CPU usage beside its allocatable: what the check judged, for every node at once.
USAGE_TABLE = (
    "kubectl get nodemetrics.slo.koordinator.sh -o custom-columns=NODE:.metadata.name,"
    "CPU_USED:.status.nodeMetric.nodeUsage.resources.cpu,UPDATED:.status.updateTime"
)
NODE_ABOVE_THRESHOLD = Runbook(
    "node-above-threshold",
    "A node's CPU utilisation is above LoadAwareScheduling's threshold",
    "pods on the node use far more CPU than they request (a hot LS service, BE pods without batch limits), so "
    "koord-scheduler's LoadAwareScheduling filters the node out and new pods land elsewhere; LowNodeLoad in "
    "koord-descheduler, when enabled, moves pods off it",
    "kubectl describe node {node}",
    "kubectl get nodemetrics.slo.koordinator.sh {node} -o yaml (status.podsMetric: usage per pod)",
)
MANY_ABOVE_THRESHOLD = Runbook(
    "many-above-threshold",
    "More nodes than the ones named are above LoadAwareScheduling's threshold",
    "the cluster as a whole runs short of CPU: more nodes, or fewer or smaller pods, are needed",
    USAGE_TABLE,
    "kubectl get nodes -o custom-columns=NODE:.metadata.name,CPU:.status.allocatable.cpu",
)
MEAN_ABOVE_BOUND = Runbook(
    "mean-above-bound",
    "The nodes' mean CPU utilisation is above the upper bound",
    "the cluster runs short of CPU: most nodes are filtered out by LoadAwareScheduling and new pods stay Pending "
    "or crowd the rest; add nodes or reduce the load",
    USAGE_TABLE,
    "kubectl get pods -A --field-selector status.phase=Pending",
)
MEAN_BELOW_BOUND = Runbook(
    "mean-below-bound",
    "The nodes' mean CPU utilisation is below the co-location target",
    "batch (BE) workloads are not running or not scheduled: koord-manager does not compute batch resources "
    "(colocation disabled in slo-controller-config) or the batch jobs stopped",
    USAGE_TABLE,
    "kubectl -n koordinator-system get configmap slo-controller-config -o yaml",
)
NO_USABLE_REPORT = Runbook(
    "no-usable-report",
    "No selected node has a usable CPU usage report",
    "koordlet reports on no node (not running, or NodeMetrics older than max_sample_age_seconds), or with source "
    "metrics.k8s.io, metrics-server is not running",
    USAGE_TABLE + " && kubectl -n koordinator-system get pods -l koord-app=koordlet -o wide",
    "docs/checks.md#node-utilization",
)
NOTHING_SELECTED = Runbook(
    "nothing-selected",
    "No node is of the classes and labels the check judges",
    "every node is a KWOK fake or virtual node, which are left out by default (no koordlet reports their usage), "
    "or the parameters' nodes.label_selector matches no node, or every node is cordoned",
    "kubectl get nodes -o wide --show-labels",
    "docs/checks.md#node-utilization",
)

RUNBOOKS = (
    NODE_ABOVE_THRESHOLD,
    MANY_ABOVE_THRESHOLD,
    MEAN_ABOVE_BOUND,
    MEAN_BELOW_BOUND,
    NO_USABLE_REPORT,
    NOTHING_SELECTED,
)


class NodeUtilizationParams(Params):
    source: Source = Field(
        "nodemetric", description="nodemetric (Koordinator NodeMetric status) or metrics.k8s.io (metrics-server)."
    )
    node_threshold_percent: float = Field(
        LOAD_AWARE_CPU_THRESHOLD,
        gt=0,
        le=1000,
        description="A node above this CPU utilisation is named and the result degraded: LoadAwareScheduling's "
        "usageThresholds.cpu (upstream default 65), above which its Filter rejects the node.",
    )
    upper_percent: float | None = Field(
        None, gt=0, le=1000, description="Mean CPU utilisation above this fails; None: node_threshold_percent."
    )
    lower_percent: float | None = Field(
        None,
        ge=0,
        le=100,
        description="Mean CPU utilisation below this fails; None (default): no lower bound, "
        "as upstream has none. A co-location target (the tutorial's 60) is opt-in.",
    )
    max_sample_age_seconds: float = Field(
        NODEMETRIC_EXPIRY_SECONDS,
        gt=0,
        description="Reports older than this are left out (Koordinator's NodeMetric expiry, 180 s).",
    )
    nodes: NodeSelection = Field(
        default_factory=NodeSelection, description="Which nodes are judged (classes, label selector, cordoned)."
    )
    page_size: int = Field(100, ge=1, le=5000, description="LIST page size for NodeMetrics.")

    @property
    def upper(self) -> float:
        return self.node_threshold_percent if self.upper_percent is None else self.upper_percent

    @model_validator(mode="after")
    def _bounds(self) -> NodeUtilizationParams:
        if self.lower_percent is not None and self.lower_percent > self.upper:
            raise ValueError(f"lower_percent {self.lower_percent:g} is above the upper bound {self.upper:g}")
        return self

    def want(self) -> str:
        """`<= 65 %` or `60 to 65 %`."""
        if self.lower_percent is None:
            return f"<= {self.upper:g} %"
        return f"{self.lower_percent:g} to {self.upper:g} %"


NodeUtilizationData = NodesAndUsage
"""The selected nodes' facts and their usage samples, from NodeMetrics or metrics.k8s.io (`params.source`)."""


def fetch(cluster: Cluster, params: NodeUtilizationParams) -> NodeUtilizationData:
    if params.source == "nodemetric":
        return read_nodes_and_nodemetrics(cluster, params.nodes.label_query(), params.page_size)
    return NodeUtilizationData(tuple(read_nodes(cluster, params.nodes.label_query())), tuple(read_metrics_k8s(cluster)))


def declared_access(params: NodeUtilizationParams) -> list[access.Access]:
    # metrics.k8s.io is served by metrics-server, which cannot be watched: listed every run.
    followed = [access.watch(NODE_METRICS)] if params.source == "nodemetric" else []
    return [
        access.list_(NODES),
        access.watch(NODES),
        access.list_(NODE_METRICS if params.source == "nodemetric" else NODE_METRICS_K8S),
        *followed,
    ]


def filtered_by_load_aware(percent: float, threshold: float) -> bool:
    """LoadAwareScheduling's test: the usage percentage rounded half away from zero (Go `math.Round`) above
    the threshold (`filterNodeUsage`: `usage <= value` passes)."""
    return math.floor(percent + 0.5) > threshold


def evaluate(data: NodeUtilizationData, params: NodeUtilizationParams, now: datetime) -> Result:
    selected = select_nodes(data.nodes, params.nodes)
    details: dict[str, Any] = {
        "source": params.source,
        "selection": params.nodes.describe(),
        "bounds_percent": {"lower": params.lower_percent, "upper": params.upper},
        "node_threshold_percent": params.node_threshold_percent,
        **selected.details(),
    }
    if not selected.nodes:
        return Result.error(NAME, nothing_selected(params.nodes, selected), NOTHING_SELECTED.step(), **details)
    by_node = {sample.node: sample for sample in data.samples}
    unusable: dict[str, list[str]] = {"no report": [], "stale report": [], "no cpu usage": [], "no allocatable cpu": []}
    per_node: dict[str, float] = {}
    for node in selected.nodes:
        sample = by_node.get(node.name)
        age = sample.age_seconds(now) if sample else None
        if sample is None or age is None:  # no NodeMetric, or koord-manager's spec-only one: koordlet never reported
            unusable["no report"].append(node.name)
        elif age > params.max_sample_age_seconds:
            unusable["stale report"].append(node.name)
        elif sample.cpu_millis is None:
            unusable["no cpu usage"].append(node.name)
        elif not node.allocatable_cpu_millis:
            unusable["no allocatable cpu"].append(node.name)
        else:
            per_node[node.name] = 100.0 * sample.cpu_millis / node.allocatable_cpu_millis
    details["left_out"] = {
        why: {"count": len(names), "first": names[:FIRST_NAMED]} for why, names in unusable.items() if names
    }
    details["sampled"] = len(per_node)
    source = "NodeMetric" if params.source == "nodemetric" else "metrics.k8s.io"
    if not per_node:
        return Result.error(
            NAME,
            f"no usable {source} CPU report for any of {len(selected.nodes)} selected nodes "
            f"({', '.join(f'{len(v)} {k}' for k, v in unusable.items() if v)})",
            NO_USABLE_REPORT.step(),
            **details,
        )
    mean = sum(per_node.values()) / len(per_node)
    lowest = sorted(per_node, key=lambda n: (per_node[n], n))
    highest = sorted(per_node, key=lambda n: (-per_node[n], n))
    threshold = params.node_threshold_percent
    above = [n for n in highest if filtered_by_load_aware(per_node[n], threshold)]
    details.update(
        {
            "mean_percent": round(mean, 2),
            "min_percent": round(min(per_node.values()), 2),
            "max_percent": round(max(per_node.values()), 2),
            "lowest": {n: round(per_node[n], 1) for n in lowest[:FIRST_NAMED]},
            "highest": {n: round(per_node[n], 1) for n in highest[:FIRST_NAMED]},
            "above_threshold_count": len(above),
            "above_threshold": {n: round(per_node[n], 1) for n in above[:FIRST_NAMED]},
        }
    )
    node_lines: list[Finding] = [
        NODE_ABOVE_THRESHOLD.at(
            f"node {n}: observed CPU utilisation {per_node[n]:.1f} % ({source}) (want <= {threshold:g} %: "
            "LoadAwareScheduling filters the node out above it)",
            node=n,
        )
        for n in above[:FIRST_NAMED]
    ]
    if len(above) > FIRST_NAMED:
        node_lines.append(
            MANY_ABOVE_THRESHOLD.at(
                f"nodes: {len(above) - FIRST_NAMED} more above {threshold:g} % CPU ({len(above)} in all)"
            )
        )
    what = f"mean CPU utilisation of {len(per_node)} nodes ({source})"
    low = params.lower_percent is not None and mean < params.lower_percent
    if low or mean > params.upper:
        side, extreme = ("below the lower bound", lowest) if low else ("above the upper bound", highest)
        named = ", ".join(f"{n} {per_node[n]:.0f} %" for n in extreme[:3])
        line = f"nodes: observed {what} {mean:.1f} % (want {params.want()}); {side}, e.g. {named}"
        mean_line = (MEAN_BELOW_BOUND if low else MEAN_ABOVE_BOUND).at(line)
        return Result.failed(NAME, line, [mean_line, *node_lines], details)
    if above:
        named = ", ".join(f"{n} {per_node[n]:.0f} %" for n in above[:3])
        more = f" (+{len(above) - 3} more)" if len(above) > 3 else ""
        summary = (
            f"{len(above)} of {len(per_node)} nodes above the {threshold:g} % CPU threshold "
            f"(LoadAwareScheduling filters them out): {named}{more}; {what} {mean:.1f} %"
        )
        return Result.degraded(NAME, summary, node_lines, details)
    return Result.ok(NAME, f"{what} {mean:.1f} %, within {params.want()}; no node above {threshold:g} %", details)


CHECK = CheckSpec(
    name=NAME,
    system="koordinator",
    layer="node",
    severity="warning",
    schedule_minutes=5,
    fails_when=FAILS_WHEN,
    params=NodeUtilizationParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
