"""What koordlet-coverage and kruise-daemon-coverage share: "does every node that should run this
agent have a ready pod of it?", judged node by node (not a check of its own).

Nodes are the `NodeSelection` whatever the DaemonSet targets now, since a node it stopped targeting still lacks
the agent (`outpost.kube.daemons`). No node selected is `error`, counting exclusions and saying how to opt fake
nodes in; an absent DaemonSet is `failed` with the check's hint, never "0 of 0 ready", and one desiring nothing
while nodes are selected is its own failure. Uncovered nodes are named (first ten, then a count).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import Field

from outpost.checks.base import Params
from outpost.cluster import Cluster, read_collections
from outpost.cluster.nodes import daemon_pod_collection, node_collection
from outpost.kube import access
from outpost.kube.daemons import DaemonPod, coverage
from outpost.kube.messages import FIRST_NAMED, first_named, ref
from outpost.kube.nodes import NodeFacts, NodeSelection, nothing_selected, select_nodes
from outpost.kube.objects import DaemonSet, parse
from outpost.kube.paths import DAEMON_SETS, NODES, PODS, object_path
from outpost.result import Result, Status


class DaemonCoverageParams(Params):
    """The DaemonSet, its pods and the nodes it must cover. Subclasses set the upstream defaults."""

    namespace: str = Field(description="Namespace of the agent's DaemonSet.")
    daemonset: str = Field(description="Name of the agent's DaemonSet.")
    pod_selector: str = Field(description="Label selector of the agent's pods (read in `namespace` only).")
    nodes: NodeSelection = Field(
        default_factory=NodeSelection, description="Which nodes are judged (classes, label selector, cordoned)."
    )


@dataclass(frozen=True)
class DaemonCoverageData:
    daemonset: DaemonSet | None
    nodes: tuple[NodeFacts, ...]
    pods: tuple[DaemonPod, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)


def fetch_coverage(cluster: Cluster, params: DaemonCoverageParams) -> DaemonCoverageData:
    path = object_path(DAEMON_SETS, params.daemonset, params.namespace)
    raw = cluster.get_object(path)
    daemonset = parse(DaemonSet, raw, f"GET {path}") if raw is not None else None
    nodes, pods = read_collections(
        cluster,
        node_collection(params.nodes.label_query()),
        daemon_pod_collection(params.namespace, params.pod_selector),
    )
    return DaemonCoverageData(daemonset, tuple(nodes), tuple(pods))


def declared_access(params: DaemonCoverageParams) -> list[access.Access]:
    """The DaemonSet by name, every node (LIST), the agent's pods in its namespace (LIST)."""
    return [
        access.get(DAEMON_SETS, params.daemonset, params.namespace),
        access.list_(NODES),
        access.watch(NODES),
        access.list_(PODS, params.namespace),
        access.watch(PODS, params.namespace),
    ]


@dataclass(frozen=True)
class CoverageVerdict:
    """The coverage judgement before a check adds its own findings (e.g. per-node /healthz)."""

    errors: list[str]
    details: dict[str, Any]
    summary: str
    unobservable: str | None = None  # set: the result is `error` with this cause
    covered: tuple[str, ...] = ()


def judge_coverage(
    data: DaemonCoverageData, params: DaemonCoverageParams, agent: str, absent_hint: str = ""
) -> CoverageVerdict:
    ds_ref = ref("DaemonSet", params.daemonset, params.namespace)
    selected = select_nodes(data.nodes, params.nodes)
    details: dict[str, Any] = {"daemonset": ds_ref, "selection": params.nodes.describe(), **selected.details()}
    if not selected.nodes:
        cause = f"{ds_ref}: {nothing_selected(params.nodes, selected)}"
        return CoverageVerdict([cause], details, cause, unobservable=cause)

    cover = coverage(selected.nodes, data.pods)
    uncovered = cover.uncovered
    class_of = {node.name: node.node_class.value for node in selected.nodes}
    details["coverage_by_class"] = {
        cls: {
            "selected": count,
            "covered": sum(1 for name in cover.covered if class_of[name] == cls),
            "uncovered": sum(1 for name in uncovered if class_of[name] == cls),
        }
        for cls, count in selected.by_class.items()
    }
    details["covered"] = len(cover.covered)
    details["uncovered_count"] = len(uncovered)
    details["uncovered"] = list(uncovered[:FIRST_NAMED])
    details["missing"] = list(cover.missing[:FIRST_NAMED])
    details["not_ready"] = {node: why for node, why in cover.not_ready[:FIRST_NAMED]}

    errors: list[str] = []
    n = len(selected.nodes)
    if data.daemonset is None:
        hint = f" ({absent_hint})" if absent_hint else ""
        errors.append(f"{ds_ref}: absent{hint}; want one ready {agent} pod on each of {n} selected nodes")
        details["daemonset_present"] = False
    else:
        status = data.daemonset.status
        details["daemonset_present"] = True
        details["daemonset_status"] = {
            "desired": status.desired_number_scheduled,
            "ready": status.number_ready,
            "available": status.number_available,
        }
        if status.desired_number_scheduled == 0:
            errors.append(
                f"{ds_ref}: observed desiredNumberScheduled 0 (want {n}: one per selected node); "
                "the DaemonSet targets none of the selected nodes"
            )
    why = dict(cover.not_ready)
    for node in uncovered[:FIRST_NAMED]:
        state = f"no ready pod ({why[node]})" if node in why else "no pod"
        errors.append(f"{ds_ref}: node {node} has {state}")
    if len(uncovered) > FIRST_NAMED:
        errors.append(
            f"{ds_ref}: {len(uncovered) - FIRST_NAMED} more nodes without a ready pod ({len(uncovered)} of {n} in all)"
        )
    if data.daemonset is None:
        summary = f"{ds_ref} absent{' (' + absent_hint + ')' if absent_hint else ''}: no {agent} on {n} nodes"
    elif uncovered:
        summary = f"{agent} not ready on {len(uncovered)} of {n} nodes: {first_named(list(uncovered))}"
    elif errors:
        summary = errors[0]
    else:
        summary = f"{agent} ready on all {n} selected nodes ({_by_class(selected.by_class)})"
    return CoverageVerdict(errors, details, summary, covered=cover.covered)


def _by_class(by_class: Mapping[str, int]) -> str:
    return ", ".join(f"{count} {cls}" for cls, count in by_class.items())


def coverage_result(check: str, verdict: CoverageVerdict) -> Result:
    if verdict.unobservable:
        return Result(
            check=check,
            status=Status.ERROR,
            summary=verdict.unobservable,
            errors=[verdict.unobservable],
            details=verdict.details,
        )
    status = Status.FAILED if verdict.errors else Status.OK
    return Result(check=check, status=status, summary=verdict.summary, errors=verdict.errors, details=verdict.details)


def evaluator(
    check: str, agent: str, absent_hint: str = ""
) -> Callable[[DaemonCoverageData, DaemonCoverageParams, datetime], Result]:
    """A check's `evaluate` for plain coverage (no extra findings)."""

    def evaluate(data: DaemonCoverageData, params: DaemonCoverageParams, now: datetime) -> Result:
        return coverage_result(check, judge_coverage(data, params, agent, absent_hint))

    return evaluate
