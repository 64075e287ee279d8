"""Node classification and scheduling facts, for coverage checks ("which nodes should run this DaemonSet?").

A node is `fake` (KWOK annotation `kwok.x-k8s.io/node=fake`), `virtual` (`type=virtual-kubelet`) or `real`;
`tolerates` follows Kubernetes toleration semantics exactly. `NodeSelection` is the one definition of which
nodes a node check judges. Fake nodes are opt-in because nothing there proves an agent runs: kwok makes every
bound pod Ready (kwok@v0.8.0 `stage/pod/fast/pod-ready.yaml`) and koord-manager creates a NodeMetric no koordlet
ever fills (koordinator@v1.6.0 `pkg/slo-controller/nodemetric`). Nodes are reduced to `NodeFacts` on read; an
empty selection is the check's `error`, and a usage that is absent or not a quantity is None, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from outpost.errors import MalformedResponse
from outpost.kube.conditions import READY
from outpost.kube.golang import go_duration_seconds
from outpost.kube.objects import (
    KubeObject,
    Node,
    NodeMetric,
    NodeMetricOutline,
    NodeOutline,
    Taint,
    Toleration,
    View,
    parse,
)
from outpost.kube.quantity import cpu_millis, memory_bytes
from outpost.kube.selectors import MetadataSelector, parse_label_selector

if TYPE_CHECKING:  # msgspec is imported by the first LIST that decodes into a mirror, never by this module
    from outpost.kube.fast_outlines import FastKubeObject, FastNodeMetricOutline, FastNodeOutline

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_FAKE_VALUE = "fake"
VIRTUAL_KUBELET_LABEL = "type"
VIRTUAL_KUBELET_VALUE = "virtual-kubelet"
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


class NodeClass(StrEnum):
    REAL = "real"
    FAKE = "fake"
    VIRTUAL = "virtual"


def classify(node: KubeObject | FastKubeObject) -> NodeClass:
    if node.metadata.annotations.get(KWOK_NODE_ANNOTATION) == KWOK_FAKE_VALUE:
        return NodeClass.FAKE
    if node.metadata.labels.get(VIRTUAL_KUBELET_LABEL) == VIRTUAL_KUBELET_VALUE:
        return NodeClass.VIRTUAL
    return NodeClass.REAL


def is_schedulable(node: Node) -> bool:
    """Not cordoned (`spec.unschedulable`). Taints are a separate question: see `blocking_taints`."""
    return not node.spec.unschedulable


def blocking_taints(node: Node) -> list[Taint]:
    """Taints that keep pods off the node unless tolerated (NoSchedule, NoExecute; not PreferNoSchedule)."""
    return [taint for taint in node.spec.taints if taint.effect in BLOCKING_EFFECTS]


def toleration_matches(toleration: Toleration, taint: Taint) -> bool:
    """Does one toleration tolerate one taint? (k8s.io/api/core/v1 Toleration.ToleratesTaint)"""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    if toleration.operator in ("Equal", ""):
        return toleration.key == taint.key and toleration.value == taint.value
    return False  # an unknown operator tolerates nothing


def untolerated(tolerations: Iterable[Toleration], taints: Iterable[Taint]) -> list[Taint]:
    """The taints none of `tolerations` tolerates."""
    held = list(tolerations)
    return [taint for taint in taints if not any(toleration_matches(t, taint) for t in held)]


def tolerates(tolerations: Iterable[Toleration], taints: Iterable[Taint]) -> bool:
    """Every taint is tolerated by some toleration."""
    return not untolerated(tolerations, taints)


# -- what node checks keep of a node, and which nodes they judge --------------------------------------


@dataclass(frozen=True)
class NodeFacts:
    """The few facts node checks judge, kept per node instead of the whole Node object."""

    name: str
    node_class: NodeClass
    unschedulable: bool = False
    ready: str = ""  # the Ready condition's status: "True", "False", "Unknown"; "" when not reported
    ready_reason: str = ""
    allocatable_cpu_millis: int | None = None  # None when not reported (or not a quantity)
    allocatable: Mapping[str, int] = field(default_factory=dict)  # `resource_value` per resource that is a quantity
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_ready(self) -> bool:
        return self.ready == "True"

    @property
    def ready_text(self) -> str:
        """`Ready=Unknown (NodeStatusUnknown)`, or `no Ready condition`."""
        if not self.ready:
            return "no Ready condition"
        return f"Ready={self.ready}" + (f" ({self.ready_reason})" if self.ready_reason else "")


def node_facts(node: Node | NodeOutline | FastNodeOutline) -> NodeFacts:
    """The facts of a Node, read whole, as its outline or as the outline's msgspec mirror (equal facts)."""
    # `find_condition`, spelled out: a mirror's conditions are not `Condition`s
    condition = next((c for c in node.status.conditions if c.type == READY), None)
    allocatable = resource_values(node.status.allocatable)
    return NodeFacts(
        name=node.name,
        node_class=classify(node),
        unschedulable=node.spec.unschedulable,
        ready=condition.status if condition else "",
        ready_reason=condition.reason if condition else "",
        allocatable_cpu_millis=allocatable.get("cpu"),
        allocatable=allocatable,
        labels=dict(node.metadata.labels),
        annotations=dict(node.metadata.annotations),
    )


def facts_of(raw: Any, where: str = "node") -> NodeFacts:
    """A Node as decoded JSON (one LIST item) reduced to its facts; a wrong type is MalformedResponse."""
    return outline_facts(parse(NodeOutline, raw, where), where)


def outline_facts(node: NodeOutline | FastNodeOutline, where: str = "node") -> NodeFacts:
    """A Node read as its outline (`Cluster.iter_list_as`) reduced to its facts; no name is MalformedResponse."""
    if not node.name:
        raise MalformedResponse(f"{where}: a node without metadata.name")
    return node_facts(node)


EXCLUDED_CLASS = "class {cls} not selected"
EXCLUDED_CORDONED = "cordoned (spec.unschedulable)"
EXCLUDED_LABELS = "labels do not match {selector}"
EXCLUDED_METADATA = "{selector} does not match"


def node_classes_parameter(what: str, real_only_because: str, add_fake_where: str) -> Any:
    """A `tuple[NodeClass, ...]` parameter of at least one class, real nodes only by default: `what` it picks, why
    fake nodes are left out by default and where adding them makes sense, in one wording for every such field."""
    return Field(
        (NodeClass.REAL,),
        min_length=1,
        description=f"{what} Default real only: {real_only_because}. Add fake only where {add_fake_where}.",
    )


class NodeSelection(BaseModel):
    """Which nodes a node check judges (a `Params` field of every node check)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    classes: tuple[NodeClass, ...] = node_classes_parameter(
        "Node classes judged: real, fake (KWOK annotation kwok.x-k8s.io/node=fake), virtual "
        "(label type=virtual-kubelet).",
        "no koordlet or kruise-daemon runs on a KWOK fake node (kwok marks every pod bound to one Running and Ready, "
        "so its 'ready agent' proves nothing, and its NodeMetric never gets a status)",
        "something reports for fake nodes (the sandbox's stand-ins)",
    )
    label_selector: str = Field(
        "",
        description="Only nodes whose labels match (Kubernetes selector syntax, sent to the API server); "
        "'' = every node of the selected classes.",
    )
    include_cordoned: bool = Field(
        False, description="Also judge cordoned nodes (spec.unschedulable); by default they are left out."
    )

    @field_validator("label_selector")
    @classmethod
    def _readable(cls, value: str) -> str:
        parse_label_selector(value)  # ValueError quoting the text: refused at configuration time
        return value

    def label_query(self) -> str | None:
        """The server-side `labelSelector`, or None for no filter."""
        return parse_label_selector(self.label_selector).to_query() or None

    def exclusion(self, node: NodeFacts) -> str | None:
        """Why `node` is not judged, or None when it is."""
        if node.node_class not in self.classes:
            return EXCLUDED_CLASS.format(cls=node.node_class.value)
        selector = parse_label_selector(self.label_selector)
        if not selector.matches(node.labels):
            return EXCLUDED_LABELS.format(selector=selector)
        if node.unschedulable and not self.include_cordoned:
            return EXCLUDED_CORDONED
        return None

    def describe(self) -> str:
        """`real nodes`, `real and fake nodes`, `fake nodes with labels zone=a, cordoned included`."""
        text = " and ".join(c.value for c in self.classes) + " nodes"
        if self.label_selector:
            text += f" with labels {self.label_selector}"
        return text + (", cordoned included" if self.include_cordoned else "")


FAKE_OPT_IN = (
    "KWOK fake nodes are left out by default (no agent runs on them); to judge them, set nodes.classes to [real, fake]"
)


@dataclass(frozen=True)
class SelectedNodes:
    """The nodes a check judges, and an account of every node it does not."""

    nodes: tuple[NodeFacts, ...]
    by_class: Mapping[str, int]  # selected nodes per class (every selectable class present, 0 included)
    excluded: Mapping[str, int]  # nodes left out, per reason
    total: int  # nodes read

    @property
    def names(self) -> list[str]:
        return [node.name for node in self.nodes]

    def details(self) -> dict[str, Any]:
        return {
            "selected": len(self.nodes),
            "by_class": dict(self.by_class),
            "excluded": dict(self.excluded),
            "nodes_read": self.total,
        }


def nothing_selected(selection: NodeSelection, selected: SelectedNodes) -> str:
    """Why no node was selected, in one line: what was asked, what was read and left out, and (when fake
    nodes are not selected) how to opt them in."""
    excluded = ", ".join(f"{count} {reason}" for reason, count in selected.excluded.items()) or "none"
    text = f"no node selected ({selection.describe()}; {selected.total} nodes read, excluded: {excluded})"
    return text if NodeClass.FAKE in selection.classes else f"{text}; {FAKE_OPT_IN}"


def select_nodes(nodes: Iterable[NodeFacts], selection: NodeSelection | MetadataSelector) -> SelectedNodes:
    """The nodes `selection` judges, sorted by name, with counts per class and per exclusion reason."""
    chosen: list[NodeFacts] = []
    excluded: dict[str, int] = {}
    total = 0
    for node in nodes:
        total += 1
        if isinstance(selection, MetadataSelector):
            reason = (
                None
                if selection.matches(node.labels, node.annotations)
                else EXCLUDED_METADATA.format(selector=selection)
            )
        else:
            reason = selection.exclusion(node)
        if reason is None:
            chosen.append(node)
        else:
            excluded[reason] = excluded.get(reason, 0) + 1
    classes = selection.classes if isinstance(selection, NodeSelection) else ()
    by_class = {cls.value: 0 for cls in classes}
    for node in chosen:
        by_class[node.node_class.value] = by_class.get(node.node_class.value, 0) + 1
    chosen.sort(key=lambda node: node.name)
    return SelectedNodes(tuple(chosen), by_class, dict(sorted(excluded.items())), total)


# -- CPU usage reports ------------------------------------------------------------------------------

NODEMETRIC_EXPIRY_SECONDS = 180.0
"""Koordinator's code default for `nodeMetricExpirationSeconds`: a NodeMetric older than this is expired for
LoadAwareScheduling and LowNodeLoad (`github.com/koordinator-sh/koordinator@v1.6.0,
pkg/scheduler/apis/config/v1beta3/defaults.go`, `pkg/descheduler/apis/config/v1alpha2/defaults.go`);
three of koordlet's 60 s reports."""


def resource_value(resource: str, value: object) -> int | None:
    """A quantity as koord-scheduler's LoadAware counts it (`getResourceValue`: CPU in millicores, `MilliValue()`;
    every other resource `Value()`, both rounded up; github.com/koordinator-sh/koordinator@v1.6.0
    pkg/scheduler/plugins/loadaware/helper.go); None when absent or not a quantity."""
    if value in (None, "") or not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        return cpu_millis(value) if resource == "cpu" else memory_bytes(value)
    except ValueError:
        return None


def resource_values(resources: Mapping[str, Any]) -> dict[str, int]:
    """`resource_value` of each entry of a ResourceList; entries that are no quantity are left out."""
    values = {str(name): resource_value(str(name), value) for name, value in resources.items()}
    return {name: value for name, value in values.items() if value is not None}


@dataclass(frozen=True)
class AggregatedUsage:
    """One `status.nodeMetric.aggregatedNodeUsages` entry: the node's usage per aggregation type (`p50`, `p90`,
    `p95`, `p99`, `avg`) over `duration_seconds` (None: absent or not a Go duration)."""

    duration_seconds: float | None
    usage: Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class UsageSample:
    """One node's usage report: when it was taken and the CPU in use (None: not reported); `usage` is every
    resource reported (`resource_value`), `aggregated` koordlet's percentiles (NodeMetrics only)."""

    node: str
    taken_at: datetime | None
    cpu_millis: int | None
    usage: Mapping[str, int] = field(default_factory=dict)
    aggregated: tuple[AggregatedUsage, ...] = ()

    def age_seconds(self, now: datetime) -> float | None:
        """Seconds since the report (negative under clock skew); None if it carries no time."""
        return None if self.taken_at is None else (now - self.taken_at).total_seconds()


@dataclass(frozen=True)
class NodesAndUsage:
    """Nodes as facts beside the usage reported for them (NodeMetrics, or metrics.k8s.io): what the checks that
    judge koordlet's reports evaluate."""

    nodes: tuple[NodeFacts, ...]
    samples: tuple[UsageSample, ...]


def _millis(value: object) -> int | None:
    if value in (None, "") or not isinstance(value, str | int | float):
        return None
    try:
        return cpu_millis(value)
    except ValueError:
        return None


def usage_from_nodemetric(raw: Any, where: str = "nodemetric") -> UsageSample:
    return nodemetric_usage(parse(NodeMetricOutline, raw, where), where)


def nodemetric_usage(
    metric: NodeMetric | NodeMetricOutline | FastNodeMetricOutline, where: str = "nodemetric"
) -> UsageSample:
    """One NodeMetric's usage sample; no name is MalformedResponse."""
    if not metric.name:
        raise MalformedResponse(f"{where}: a NodeMetric without metadata.name")
    usage = metric.node_usage
    return UsageSample(
        metric.name,
        metric.status.update_time,
        _millis(usage.get("cpu")),
        resource_values(usage),
        _aggregated(metric.status.node_metric.get("aggregatedNodeUsages")),
    )


def _aggregated(entries: object) -> tuple[AggregatedUsage, ...]:
    """`aggregatedNodeUsages` as read; an entry of the wrong shape is left out (as its usage is then absent)."""
    if not isinstance(entries, list):
        return ()
    kept: list[AggregatedUsage] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        duration = entry.get("duration")
        by_type = entry.get("usage")
        usage: dict[str, Mapping[str, int]] = {}
        if isinstance(by_type, Mapping):
            for kind, resource_map in by_type.items():
                resources = resource_map.get("resources") if isinstance(resource_map, Mapping) else None
                usage[str(kind)] = resource_values(resources) if isinstance(resources, Mapping) else {}
        kept.append(AggregatedUsage(go_duration_seconds(duration) if isinstance(duration, str) else None, usage))
    return tuple(kept)


class _ResourceMetrics(View):
    """metrics.k8s.io/v1beta1 NodeMetrics: `timestamp`, `window`, `usage`."""

    metadata: dict[str, Any] = Field(default_factory=dict)
    timestamp: datetime | None = None
    usage: dict[str, Any] = Field(default_factory=dict)


def usage_from_metrics_k8s(raw: Any, where: str = "metrics.k8s.io node") -> UsageSample:
    metric = parse(_ResourceMetrics, raw, where)
    name = metric.metadata.get("name")
    if not isinstance(name, str) or not name:
        raise MalformedResponse(f"{where}: node metrics without metadata.name")
    return UsageSample(name, metric.timestamp, _millis(metric.usage.get("cpu")), resource_values(metric.usage))
