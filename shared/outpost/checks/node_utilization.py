"""node-utilization: mean CPU utilisation of the selected nodes inside a band.

Utilisation of a node = CPU in use / allocatable CPU; the check judges the mean over the selected
nodes (same `NodeSelection` as koordlet-coverage) that have a usable report. Source: Koordinator's
NodeMetrics (`status.nodeMetric.nodeUsage.resources.cpu`, default) or the resource metrics API
(`metrics.k8s.io`, metrics-server) by parameter.

Band: lower bound 60 % (the tutorial's co-location target: below it, the cluster's reclaimed
capacity goes unused) and upper bound 65 % (upstream's load-aware scheduling threshold for CPU:
above it, the scheduler starts filtering nodes out). Both are parameters; the sandbox reports 62 %.

A report older than `max_sample_age_seconds` (NodeMetric expiry, 300 s) does not describe the node
now: it is left out of the mean and counted in `details` (nodemetric-freshness names it). No usable
report for any selected node, the metrics API not served, or no node selected is `error`: the probe
observed no utilisation at all, which is never ok.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from outpost.checks.base import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.cluster.nodes import read_metrics_k8s, read_nodemetrics, read_nodes
from outpost.kube import access
from outpost.kube.messages import FIRST_NAMED
from outpost.kube.nodes import NodeFacts, NodeSelection, UsageSample, select_nodes
from outpost.kube.paths import NODE_METRICS, NODE_METRICS_K8S, NODES
from outpost.result import Result, Status

NAME = "node-utilization"
Source = Literal["nodemetric", "metrics.k8s.io"]


class NodeUtilizationParams(Params):
    source: Source = Field("nodemetric", description="nodemetric (Koordinator NodeMetric status) or "
                                                     "metrics.k8s.io (metrics-server).")
    lower_percent: float = Field(60.0, ge=0, le=100, description="Mean CPU utilisation below this fails "
                                                                 "(tutorial's co-location target).")
    upper_percent: float = Field(65.0, ge=0, le=1000, description="Mean CPU utilisation above this fails "
                                                                  "(upstream load-aware scheduling threshold).")
    max_sample_age_seconds: float = Field(300.0, gt=0, description="Reports older than this are left out.")
    nodes: NodeSelection = Field(default_factory=NodeSelection)
    page_size: int = Field(100, ge=1, le=5000, description="LIST page size for NodeMetrics.")

    @model_validator(mode="after")
    def _band(self) -> NodeUtilizationParams:
        if self.lower_percent > self.upper_percent:
            raise ValueError(f"lower_percent {self.lower_percent} is above upper_percent {self.upper_percent}")
        return self


@dataclass(frozen=True)
class NodeUtilizationData:
    nodes: tuple[NodeFacts, ...]
    samples: tuple[UsageSample, ...]


def fetch(cluster: Cluster, params: NodeUtilizationParams) -> NodeUtilizationData:
    nodes = read_nodes(cluster, params.nodes.label_query())
    samples = read_nodemetrics(cluster, params.page_size) if params.source == "nodemetric" \
        else read_metrics_k8s(cluster)
    return NodeUtilizationData(tuple(nodes), tuple(samples))


def declared_access(params: NodeUtilizationParams) -> list[access.Access]:
    return [access.list_(NODES), access.list_(NODE_METRICS if params.source == "nodemetric" else NODE_METRICS_K8S)]


def evaluate(data: NodeUtilizationData, params: NodeUtilizationParams, now: datetime) -> Result:
    selected = select_nodes(data.nodes, params.nodes)
    details: dict[str, Any] = {"source": params.source, "selection": params.nodes.describe(),
                               "band_percent": [params.lower_percent, params.upper_percent], **selected.details()}
    if not selected.nodes:
        excluded = ", ".join(f"{count} {reason}" for reason, count in selected.excluded.items()) or "none"
        return Result.error(NAME, f"no node selected ({params.nodes.describe()}; {selected.total} nodes read, "
                                  f"excluded: {excluded})", **details)
    by_node = {sample.node: sample for sample in data.samples}
    unusable: dict[str, list[str]] = {"no report": [], "stale report": [], "no cpu usage": [],
                                      "no allocatable cpu": []}
    per_node: dict[str, float] = {}
    for node in selected.nodes:
        sample = by_node.get(node.name)
        age = sample.age_seconds(now) if sample else None
        if sample is None:
            unusable["no report"].append(node.name)
        elif age is None or age > params.max_sample_age_seconds:
            unusable["stale report"].append(node.name)
        elif sample.cpu_millis is None:
            unusable["no cpu usage"].append(node.name)
        elif not node.allocatable_cpu_millis:
            unusable["no allocatable cpu"].append(node.name)
        else:
            per_node[node.name] = 100.0 * sample.cpu_millis / node.allocatable_cpu_millis
    details["left_out"] = {why: {"count": len(names), "first": names[:FIRST_NAMED]}
                           for why, names in unusable.items() if names}
    details["sampled"] = len(per_node)
    source = "NodeMetric" if params.source == "nodemetric" else "metrics.k8s.io"
    if not per_node:
        return Result.error(NAME, f"no usable {source} CPU report for any of {len(selected.nodes)} selected nodes "
                                  f"({', '.join(f'{len(v)} {k}' for k, v in unusable.items() if v)})", **details)
    mean = sum(per_node.values()) / len(per_node)
    details["mean_percent"] = round(mean, 2)
    details["min_percent"] = round(min(per_node.values()), 2)
    details["max_percent"] = round(max(per_node.values()), 2)
    lowest = sorted(per_node, key=lambda n: (per_node[n], n))
    highest = sorted(per_node, key=lambda n: (-per_node[n], n))
    details["lowest"] = {n: round(per_node[n], 1) for n in lowest[:FIRST_NAMED]}
    details["highest"] = {n: round(per_node[n], 1) for n in highest[:FIRST_NAMED]}
    band = f"{params.lower_percent:g} to {params.upper_percent:g} %"
    what = f"mean CPU utilisation of {len(per_node)} nodes ({source})"
    if mean < params.lower_percent or mean > params.upper_percent:
        side = "below" if mean < params.lower_percent else "above"
        extreme = (lowest if side == "below" else highest)[:3]
        named = ", ".join(f"{n} {per_node[n]:.0f} %" for n in extreme)
        line = f"nodes: observed {what} {mean:.1f} % (want {band}); {side} the band, e.g. {named}"
        return Result(check=NAME, status=Status.FAILED, summary=line, errors=[line], details=details)
    return Result(check=NAME, status=Status.OK, details=details, summary=f"{what} {mean:.1f} %, inside {band}")


CHECK = CheckSpec(
    name=NAME,
    system="koordinator",
    layer="node",
    severity="warning",
    schedule_minutes=5,
    fails_when="mean node CPU utilisation outside the band (default lower bound 60 %)",
    params=NodeUtilizationParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
)
