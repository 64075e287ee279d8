"""node-utilization: each selected node judged as koord-scheduler's LoadAwareScheduling Filter judges it; the mean
CPU utilisation bounded only where the operator opts in.

Per node, as `Filter` does (github.com/koordinator-sh/koordinator@v1.6.0 pkg/scheduler/plugins/loadaware/
load_aware.go, helper.go, estimator/default_estimator.go): the thresholds are the node's annotation
`scheduling.koordinator.sh/usage-thresholds` (apis/extension/load_aware.go `CustomUsageThresholds`) where it sets
`usageThresholds`, which then replace the scheduler's whole map, else the scheduler's `usageThresholds` (cpu 65 %,
memory 95 %: pkg/scheduler/apis/config/v1beta3/defaults.go, as koordinator-sh/charts versions/v1.6.0
koord-scheduler-config.yaml sets them); an annotation Go's JSON decoder refuses is ignored by the scheduler
(`generateUsageThresholdsFilterProfile`), named here, `degraded`. Usage is the NodeMetric's `nodeUsage`, or its
aggregated usage (`aggregatedNodeUsages`, percentile) where the scheduler's `aggregated` args or the annotation ask
for it; allocatable is `status.allocatable` with the raw allocatable annotation `node.koordinator.sh/raw-allocatable`
laid over it (`EstimateNode`). A resource whose usage, in percent rounded half away from zero, is above its
threshold rejects the node (`filterNodeUsage`, 0 = no threshold): every such node is named with its resources and
thresholds, `degraded`; when every judged node is rejected, LoadAware leaves no judged node to any new pod:
`failed`. The Filter adds estimates (the incoming pod's, and pods bound in the last report interval), never less
than the reported usage, so a named node rejects every pod but DaemonSet pods (and prod pods where
`prodUsageThresholds`, off by default, are set: those judge them instead, and are not judged here). The
scheduler's args cannot be read from outside: they are Params with upstream's defaults. The mean has no bound
unless `upper_percent` or `lower_percent` is set. A report older than `max_sample_age_seconds` is left out and
counted (the chart's scheduler, `filterExpiredNodeMetrics: false`, still judges it); no usable report, no API or
no node selected is `error`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.cluster.nodes import read_metrics_k8s, read_nodes, read_nodes_and_nodemetrics
from outpost.kube import access
from outpost.kube.golang import go_duration_seconds
from outpost.kube.messages import FIRST_NAMED
from outpost.kube.nodes import (
    NODEMETRIC_EXPIRY_SECONDS,
    NodeFacts,
    NodesAndUsage,
    NodeSelection,
    UsageSample,
    nothing_selected,
    resource_value,
    select_nodes,
)
from outpost.kube.paths import NODE_METRICS, NODE_METRICS_K8S, NODES
from outpost.result import Finding, Result
from outpost.runbook import Runbook

NAME = "node-utilization"
Source = Literal["nodemetric", "metrics.k8s.io"]
AggregationType = Literal["avg", "p50", "p90", "p95", "p99"]  # apis/extension/constants.go AggregationType

# github.com/koordinator-sh/koordinator@v1.6.0 pkg/scheduler/apis/config/v1beta3/defaults.go
# defaultUsageThresholds; koordinator-sh/charts@a1963c5d2091853f71012c6790f9d1b1364b7734
# versions/v1.6.0/templates/koord-scheduler-config.yaml (LoadAwareSchedulingArgs.usageThresholds) sets the same.
DEFAULT_USAGE_THRESHOLDS = {"cpu": 65, "memory": 95}
# github.com/koordinator-sh/koordinator@v1.6.0 apis/extension/load_aware.go AnnotationCustomUsageThresholds
USAGE_THRESHOLDS_ANNOTATION = "scheduling.koordinator.sh/usage-thresholds"
# github.com/koordinator-sh/koordinator@v1.6.0 apis/extension/node_resource_amplification.go
# AnnotationNodeRawAllocatable
RAW_ALLOCATABLE_ANNOTATION = "node.koordinator.sh/raw-allocatable"

FAILS_WHEN = (
    "every judged node above LoadAwareScheduling's usage thresholds (default cpu 65 %, memory 95 %, or the node's "
    f"{USAGE_THRESHOLDS_ANNOTATION} annotation), or the mean CPU utilisation outside opt-in bounds (default none); "
    "a node above them, or an annotation the scheduler ignores, is named (degraded)"
)

# Each node's reported usage beside its allocatable: what the check judged, for every node at once.
USAGE_TABLE = (
    "kubectl get nodemetrics.slo.koordinator.sh -o custom-columns=NODE:.metadata.name,"
    "CPU_USED:.status.nodeMetric.nodeUsage.resources.cpu,MEMORY_USED:.status.nodeMetric.nodeUsage.resources.memory,"
    "UPDATED:.status.updateTime"
)
NODE_ABOVE_THRESHOLD = Runbook(
    "node-above-threshold",
    "A node's usage is above LoadAwareScheduling's threshold for it",
    "pods on the node use far more CPU or memory than they request (a hot LS service, BE pods without batch "
    "limits), so koord-scheduler's LoadAwareScheduling Filter rejects the node and new pods land elsewhere; "
    "LowNodeLoad in koord-descheduler, when enabled, moves pods off it. The node's thresholds are its "
    f"{USAGE_THRESHOLDS_ANNOTATION} annotation where it sets usageThresholds, else the scheduler's",
    "kubectl describe node {node}",
    "kubectl get nodemetrics.slo.koordinator.sh {node} -o yaml (status.podsMetric: usage per pod)",
)
MANY_ABOVE_THRESHOLD = Runbook(
    "many-above-threshold",
    "More nodes than the ones named are above LoadAwareScheduling's thresholds",
    "the cluster as a whole runs short of CPU or memory: more nodes, or fewer or smaller pods, are needed",
    USAGE_TABLE,
    "kubectl get nodes -o custom-columns=NODE:.metadata.name,CPU:.status.allocatable.cpu,"
    "MEMORY:.status.allocatable.memory",
)
EVERY_NODE_ABOVE = Runbook(
    "every-node-above-threshold",
    "Every judged node is above LoadAwareScheduling's thresholds",
    "koord-scheduler's LoadAwareScheduling Filter rejects every node judged, so its new pods (but DaemonSet pods) "
    "stay Pending unless a node without a NodeMetric takes them: add nodes or reduce the load",
    "kubectl get pods -A --field-selector status.phase=Pending",
    USAGE_TABLE,
)
ANNOTATION_IGNORED = Runbook(
    "usage-thresholds-annotation-ignored",
    f"A node's {USAGE_THRESHOLDS_ANNOTATION} annotation is not what koord-scheduler can read",
    'the annotation is not JSON of CustomUsageThresholds ({{"usageThresholds": {{"cpu": 80}}}}: integer '
    "percents); koord-scheduler ignores all of it and judges the node with its own thresholds",
    "kubectl get node {node} -o jsonpath='{{.metadata.annotations.scheduling\\.koordinator\\.sh/usage-thresholds}}'",
    "docs/checks.md#node-utilization",
)
MEAN_ABOVE_BOUND = Runbook(
    "mean-above-bound",
    "The nodes' mean CPU utilisation is above the opt-in upper bound",
    "the cluster runs hotter than the bound this environment set: add nodes or reduce the load, or raise the "
    "bound if a co-located cluster is meant to run this hot",
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
    EVERY_NODE_ABOVE,
    ANNOTATION_IGNORED,
    MEAN_ABOVE_BOUND,
    MEAN_BELOW_BOUND,
    NO_USABLE_REPORT,
    NOTHING_SELECTED,
)

Thresholds = dict[str, int]


class AggregatedArgs(BaseModel):
    """LoadAwareSchedulingArgs.aggregated, as far as the Filter reads it (pkg/scheduler/apis/config/v1beta3/types.go
    LoadAwareSchedulingAggregatedArgs; the Filter uses it only with usage_thresholds and a type, helper.go
    `filterWithAggregation`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    usage_thresholds: Thresholds = Field(description="usageThresholds: percent per resource, against the percentile.")
    usage_aggregation_type: AggregationType = Field(description="usageAggregationType: avg, p50, p90, p95 or p99.")
    usage_aggregated_duration_seconds: float | None = Field(
        None,
        ge=0,
        description="usageAggregatedDuration in seconds; None or 0: the longest period the NodeMetric reports.",
    )


class NodeUtilizationParams(Params):
    source: Source = Field(
        "nodemetric", description="nodemetric (Koordinator NodeMetric status) or metrics.k8s.io (metrics-server)."
    )
    usage_thresholds: Thresholds = Field(
        default_factory=lambda: dict(DEFAULT_USAGE_THRESHOLDS),
        description="koord-scheduler's LoadAwareSchedulingArgs.usageThresholds, percent per resource (0: none), "
        "which the check cannot read: upstream's default and the Helm chart's are cpu 65, memory 95. A node above "
        f"its thresholds (these, or its {USAGE_THRESHOLDS_ANNOTATION} annotation's) is named, degraded.",
    )
    aggregated: AggregatedArgs | None = Field(
        None,
        description="koord-scheduler's LoadAwareSchedulingArgs.aggregated, if set there: judge the NodeMetric's "
        "percentile usage instead. None (upstream's default; the chart leaves it commented out): nodeUsage.",
    )
    upper_percent: float | None = Field(
        None,
        gt=0,
        le=1000,
        description="Mean CPU utilisation above this fails; None (default): no upper bound, as upstream has no "
        "cluster-mean limit (a co-located cluster may run hot on purpose).",
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
        description="Reports older than this are left out and counted (Koordinator's code default NodeMetric "
        "expiry, 180 s; nodemetric-freshness judges staleness).",
    )
    nodes: NodeSelection = Field(
        default_factory=NodeSelection, description="Which nodes are judged (classes, label selector, cordoned)."
    )
    page_size: int = Field(100, ge=1, le=5000, description="LIST page size for NodeMetrics.")

    @model_validator(mode="after")
    def _bounds(self) -> NodeUtilizationParams:
        for where, thresholds in (("usage_thresholds", self.usage_thresholds), ("aggregated", self._aggregated())):
            # pkg/scheduler/apis/config/validation/validation_pluginargs.go validateResourceThresholds
            bad = {k: v for k, v in thresholds.items() if not 0 <= v <= 100}
            if bad:
                raise ValueError(f"{where}: thresholds {bad} outside 0 to 100 (koord-scheduler refuses them)")
        if self.aggregated and self.source != "nodemetric":
            raise ValueError("aggregated: percentile usage is in NodeMetrics only (source nodemetric)")
        if (
            self.lower_percent is not None
            and self.upper_percent is not None
            and self.lower_percent > self.upper_percent
        ):
            raise ValueError(f"lower_percent {self.lower_percent:g} is above upper_percent {self.upper_percent:g}")
        return self

    def _aggregated(self) -> Thresholds:
        return self.aggregated.usage_thresholds if self.aggregated else {}

    def want(self) -> str:
        """`<= 80 %`, `>= 60 %` or `60 to 80 %`; '' without bounds."""
        low, high = self.lower_percent, self.upper_percent
        if low is None:
            return "" if high is None else f"<= {high:g} %"
        return f">= {low:g} %" if high is None else f"{low:g} to {high:g} %"


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


# -- LoadAwareScheduling's Filter, as koord-scheduler v1.6.0 runs it ------------------------------------------


def go_round_percent(used: int, total: int) -> int:
    """`int64(math.Round(float64(used) / float64(total) * 100))` (`filterNodeUsage`): half away from zero."""
    return int(Decimal(float(used) / float(total) * 100).to_integral_value(rounding=ROUND_HALF_UP))


def filtered_by_load_aware(used: int, total: int, threshold: int) -> bool:
    """One resource's test in `filterNodeUsage`: 0 is no threshold, no allocatable is no test, and the rounded
    percentage must be at most the threshold."""
    return threshold != 0 and total != 0 and go_round_percent(used, total) > threshold


@dataclass(frozen=True)
class AggregatedProfile:
    thresholds: Thresholds
    kind: str
    duration_seconds: float | None


@dataclass(frozen=True)
class FilterProfile:
    """The thresholds the Filter applies to one node (`generateUsageThresholdsFilterProfile`), where they came
    from, and why the node's annotation was ignored ('' when it was not)."""

    thresholds: Thresholds
    origin: str
    aggregated: AggregatedProfile | None
    aggregated_origin: str = ""
    ignored: str = ""

    @property
    def applied(self) -> tuple[Thresholds, str]:
        """The thresholds the Filter compares a non-prod pod's node usage with, and where they came from."""
        if self.aggregated:
            return self.aggregated.thresholds, self.aggregated_origin
        return self.thresholds, self.origin


class _Refused(ValueError):
    """What Go's encoding/json would refuse in the annotation (any error makes the scheduler ignore it all)."""


def _go_field(obj: dict[str, Any], name: str) -> Any:
    """encoding/json's field match: the exact key, else a case-insensitive one; absent is None (as JSON null)."""
    if name in obj:
        return obj[name]
    return next((v for k, v in obj.items() if k.lower() == name.lower()), None)


def _go_int64_map(value: Any, where: str) -> Thresholds:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Refused(f"{where} is not an object")
    out: Thresholds = {}
    for key, item in value.items():
        if item is None:
            item = 0
        if isinstance(item, bool) or not isinstance(item, int) or not -(2**63) <= item < 2**63:
            raise _Refused(f"{where}.{key} is not an integer percent")
        out[key] = item
    return out


def _no_floats(text: str) -> float:
    raise _Refused(f"{text} is not an integer")  # Go refuses 65.0 or 1e2 into an int64


def parse_usage_thresholds_annotation(text: str) -> tuple[Thresholds, AggregatedProfile | None]:
    """The annotation as `GetCustomUsageThresholds` decodes it (apis/extension/load_aware.go): its usageThresholds
    and its aggregatedUsage, kept only with thresholds and a type (helper.go); `_Refused` where Go's json errs."""
    try:
        raw = json.loads(text, parse_float=_no_floats, parse_constant=_no_floats)
    except json.JSONDecodeError as e:
        raise _Refused(f"not JSON ({e.msg} at character {e.pos})") from e
    if raw is None:
        return {}, None
    if not isinstance(raw, dict):
        raise _Refused("not a JSON object")
    thresholds = _go_int64_map(_go_field(raw, "usageThresholds"), "usageThresholds")
    _go_int64_map(_go_field(raw, "prodUsageThresholds"), "prodUsageThresholds")
    aggregated = _go_field(raw, "aggregatedUsage")
    if aggregated is None:
        return thresholds, None
    if not isinstance(aggregated, dict):
        raise _Refused("aggregatedUsage is not an object")
    agg_thresholds = _go_int64_map(_go_field(aggregated, "usageThresholds"), "aggregatedUsage.usageThresholds")
    kind = _go_field(aggregated, "usageAggregationType")
    if kind is not None and not isinstance(kind, str):
        raise _Refused("aggregatedUsage.usageAggregationType is not a string")
    duration = _go_field(aggregated, "usageAggregatedDuration")
    seconds = None
    if duration is not None:
        seconds = go_duration_seconds(duration) if isinstance(duration, str) else None
        if seconds is None:
            raise _Refused("aggregatedUsage.usageAggregatedDuration is not a Go duration")
    if not agg_thresholds or not kind:
        return thresholds, None
    return thresholds, AggregatedProfile(agg_thresholds, kind, seconds)


def _thresholds_text(thresholds: Thresholds) -> str:
    return ", ".join(f"{k} {v} %" for k, v in sorted(thresholds.items())) or "none"


def filter_profile(node: NodeFacts, params: NodeUtilizationParams) -> FilterProfile:
    """`generateUsageThresholdsFilterProfile`: the annotation's usageThresholds replace the scheduler's map whole
    when set; its aggregatedUsage replaces the scheduler's `aggregated` when complete; a refused annotation is
    ignored entirely."""
    args = params.aggregated
    default_aggregated = (
        AggregatedProfile(
            dict(args.usage_thresholds), args.usage_aggregation_type, args.usage_aggregated_duration_seconds
        )
        if args and args.usage_thresholds
        else None
    )
    scheduler = (dict(params.usage_thresholds), "scheduler's usageThresholds")
    by_args = "scheduler's aggregated usageThresholds"
    text = node.annotations.get(USAGE_THRESHOLDS_ANNOTATION)
    if text is None:
        return FilterProfile(*scheduler, default_aggregated, by_args)
    try:
        thresholds, aggregated = parse_usage_thresholds_annotation(text)
    except _Refused as e:
        return FilterProfile(*scheduler, default_aggregated, by_args, ignored=str(e))
    chosen = (thresholds, "node annotation") if thresholds else scheduler
    if aggregated:
        return FilterProfile(*chosen, aggregated, "node annotation's aggregatedUsage")
    return FilterProfile(*chosen, default_aggregated, by_args)


def node_allocatable(node: NodeFacts) -> dict[str, int]:
    """`EstimateNode` (estimator/default_estimator.go): `status.allocatable` with the raw allocatable annotation's
    resources laid over it; an annotation that is no ResourceList is ignored."""
    allocatable = dict(node.allocatable)
    text = node.annotations.get(RAW_ALLOCATABLE_ANNOTATION)
    if not text:
        return allocatable
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        return allocatable
    if not isinstance(raw, dict):
        return allocatable
    # a JSON null is a zero Quantity; one that does not parse fails the whole annotation
    values = {str(k): 0 if v is None else resource_value(str(k), v) for k, v in raw.items()}
    if any(v is None for v in values.values()):
        return allocatable
    allocatable.update({k: v for k, v in values.items() if v is not None})
    return allocatable


def judged_usage(sample: UsageSample, aggregated: AggregatedProfile | None) -> dict[str, int] | None:
    """The node usage the Filter compares: nodeUsage, or with aggregation `getTargetAggregatedUsage` (helper.go):
    the given period's percentile, or without a period the longest period that has it, falling back to nodeUsage;
    None when the period asked for is not reported (the Filter then sees only pod estimates)."""
    if aggregated is None:
        return dict(sample.usage)
    if not sample.aggregated:
        return None
    wanted = aggregated.duration_seconds
    if not wanted:
        periods = [e for e in sample.aggregated if e.usage.get(aggregated.kind) and (e.duration_seconds or 0) > 0]
        if not periods:
            return dict(sample.usage) if sample.usage else None
        longest = max(periods, key=lambda e: e.duration_seconds or 0)  # the first of equals, as the scan kept it
        return dict(longest.usage[aggregated.kind])
    for entry in sample.aggregated:
        if entry.duration_seconds == wanted and entry.usage.get(aggregated.kind):
            return dict(entry.usage[aggregated.kind])
    return None


@dataclass(frozen=True)
class Over:
    resource: str
    percent: float
    rounded: int
    threshold: int


@dataclass(frozen=True)
class NodeJudgement:
    name: str
    cpu_percent: float
    profile: FilterProfile
    over: tuple[Over, ...]
    without_usage: bool  # the aggregated period asked for is not reported: only pod estimates are compared

    def line(self, source: str) -> str:
        usage = "aggregated " + self.profile.aggregated.kind if self.profile.aggregated else "usage"
        parts = ", ".join(
            f"{o.resource} {o.percent:.1f} % (rounded {o.rounded}, want <= {o.threshold} %)" for o in self.over
        )
        thresholds, origin = self.profile.applied
        return (
            f"node {self.name}: observed {usage} of allocatable {parts} ({source}; thresholds "
            f"{_thresholds_text(thresholds)} from the {origin}): LoadAwareScheduling's Filter rejects the node for "
            "every pod but DaemonSet pods"
        )


def judge(
    node: NodeFacts, sample: UsageSample, allocatable: dict[str, int], params: NodeUtilizationParams
) -> NodeJudgement:
    """One node through `Filter`'s usage test (a non-prod pod, the node's own usage)."""
    profile = filter_profile(node, params)
    usage = judged_usage(sample, profile.aggregated)
    over: list[Over] = []
    for resource, threshold in sorted(profile.applied[0].items()):
        used, total = (usage or {}).get(resource, 0), allocatable.get(resource, 0)
        if filtered_by_load_aware(used, total, threshold):
            over.append(Over(resource, 100.0 * used / total, go_round_percent(used, total), threshold))
    cpu = sample.cpu_millis or 0
    return NodeJudgement(node.name, 100.0 * cpu / allocatable["cpu"], profile, tuple(over), usage is None)


def evaluate(data: NodeUtilizationData, params: NodeUtilizationParams, now: datetime) -> Result:
    selected = select_nodes(data.nodes, params.nodes)
    details: dict[str, Any] = {
        "source": params.source,
        "selection": params.nodes.describe(),
        "bounds_percent": {"lower": params.lower_percent, "upper": params.upper_percent},
        "usage_thresholds": dict(params.usage_thresholds),
        "aggregated": params.aggregated.model_dump() if params.aggregated else None,
        **selected.details(),
    }
    if not selected.nodes:
        return Result.error(NAME, nothing_selected(params.nodes, selected), NOTHING_SELECTED.step(), **details)
    by_node = {sample.node: sample for sample in data.samples}
    unusable: dict[str, list[str]] = {"no report": [], "stale report": [], "no cpu usage": [], "no allocatable cpu": []}
    judged: dict[str, NodeJudgement] = {}
    for node in selected.nodes:
        sample = by_node.get(node.name)
        age = sample.age_seconds(now) if sample else None
        allocatable = node_allocatable(node)
        if sample is None or age is None:  # no NodeMetric, or koord-manager's spec-only one: koordlet never reported
            unusable["no report"].append(node.name)
        elif age > params.max_sample_age_seconds:
            unusable["stale report"].append(node.name)
        elif sample.cpu_millis is None:
            unusable["no cpu usage"].append(node.name)
        elif not allocatable.get("cpu"):
            unusable["no allocatable cpu"].append(node.name)
        else:
            judged[node.name] = judge(node, sample, allocatable, params)
    details["left_out"] = {
        why: {"count": len(names), "first": names[:FIRST_NAMED]} for why, names in unusable.items() if names
    }
    details["sampled"] = len(judged)
    source = "NodeMetric" if params.source == "nodemetric" else "metrics.k8s.io"
    if not judged:
        return Result.error(
            NAME,
            f"no usable {source} CPU report for any of {len(selected.nodes)} selected nodes "
            f"({', '.join(f'{len(v)} {k}' for k, v in unusable.items() if v)})",
            NO_USABLE_REPORT.step(),
            **details,
        )
    cpu = {n: j.cpu_percent for n, j in judged.items()}
    mean = sum(cpu.values()) / len(cpu)
    lowest = sorted(cpu, key=lambda n: (cpu[n], n))
    highest = sorted(cpu, key=lambda n: (-cpu[n], n))
    above = sorted((n for n, j in judged.items() if j.over), key=lambda n: (-max(o.percent for o in judged[n].over), n))
    ignored = sorted(n for n, j in judged.items() if j.profile.ignored)
    overridden = sorted(n for n, j in judged.items() if "node annotation" in j.profile.applied[1])
    details.update(
        {
            "mean_percent": round(mean, 2),
            "min_percent": round(min(cpu.values()), 2),
            "max_percent": round(max(cpu.values()), 2),
            "lowest": {n: round(cpu[n], 1) for n in lowest[:FIRST_NAMED]},
            "highest": {n: round(cpu[n], 1) for n in highest[:FIRST_NAMED]},
            "above_threshold_count": len(above),
            "above_threshold": {
                n: {o.resource: round(o.percent, 1) for o in judged[n].over} for n in above[:FIRST_NAMED]
            },
            "annotation_thresholds": {n: judged[n].profile.applied[0] for n in overridden[:FIRST_NAMED]},
            "annotation_ignored": {n: judged[n].profile.ignored for n in ignored[:FIRST_NAMED]},
            "aggregated_usage_missing": sorted(n for n, j in judged.items() if j.without_usage)[:FIRST_NAMED],
        }
    )
    findings: list[Finding] = [NODE_ABOVE_THRESHOLD.at(judged[n].line(source), node=n) for n in above[:FIRST_NAMED]]
    if len(above) > FIRST_NAMED:
        findings.append(
            MANY_ABOVE_THRESHOLD.at(
                f"nodes: {len(above) - FIRST_NAMED} more above LoadAwareScheduling's thresholds ({len(above)} in all)"
            )
        )
    findings += [
        ANNOTATION_IGNORED.at(
            f"node {n}: annotation {USAGE_THRESHOLDS_ANNOTATION} refused ({judged[n].profile.ignored}): "
            "koord-scheduler ignores it and judges the node with its own usageThresholds "
            f"({_thresholds_text(params.usage_thresholds)})",
            node=n,
        )
        for n in ignored[:FIRST_NAMED]
    ]
    what = f"mean CPU utilisation of {len(judged)} nodes ({source})"
    named = ", ".join(
        f"{n} " + ", ".join(f"{o.resource} {o.percent:.0f} % > {o.threshold} %" for o in judged[n].over)
        for n in above[:3]
    )
    more = f" (+{len(above) - 3} more)" if len(above) > 3 else ""
    low = params.lower_percent is not None and mean < params.lower_percent
    high = params.upper_percent is not None and mean > params.upper_percent
    if low or high:
        side, extreme = ("below the lower bound", lowest) if low else ("above the upper bound", highest)
        examples = ", ".join(f"{n} {cpu[n]:.0f} %" for n in extreme[:3])
        line = f"nodes: observed {what} {mean:.1f} % (want {params.want()}); {side}, e.g. {examples}"
        return Result.failed(NAME, line, [(MEAN_BELOW_BOUND if low else MEAN_ABOVE_BOUND).at(line), *findings], details)
    if above and len(above) == len(judged):
        line = (
            f"nodes: all {len(judged)} judged nodes above LoadAwareScheduling's usage thresholds ({source}), so its "
            f"Filter admits no new pod but DaemonSet pods to any of them: {named}{more}"
        )
        return Result.failed(NAME, line, [EVERY_NODE_ABOVE.at(line), *findings], details)
    bounds = f", within {params.want()}" if params.want() else ""
    if above or ignored:
        parts = []
        if above:
            parts.append(
                f"{len(above)} of {len(judged)} nodes above LoadAwareScheduling's usage thresholds (its Filter "
                f"rejects them): {named}{more}"
            )
        if ignored:
            parts.append(f"{len(ignored)} nodes' {USAGE_THRESHOLDS_ANNOTATION} annotation ignored by koord-scheduler")
        return Result.degraded(NAME, "; ".join(parts) + f"; {what} {mean:.1f} %{bounds}", findings, details)
    return Result.ok(
        NAME,
        f"no node above LoadAwareScheduling's usage thresholds ({_thresholds_text(params.usage_thresholds)}"
        + (f"; {len(overridden)} by node annotation" if overridden else "")
        + f"); {what} {mean:.1f} %{bounds}",
        details,
    )


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
