"""What koordlet-coverage and kruise-daemon-coverage share: "does every node that should run this
agent have a ready pod of it?", judged node by node (not a check of its own).

Nodes are the `NodeSelection` whatever the DaemonSet targets now, since a node it stopped targeting still lacks
the agent (`outpost.kube.daemons`). No node selected is `error`, counting exclusions and saying how to opt fake
nodes in; an absent DaemonSet is `failed` with the check's hint, never "0 of 0 ready", and one desiring nothing
while nodes are selected is its own failure. Uncovered nodes are named (first ten, then a count). A node that is
itself not Ready, its agent pod NotReady with it, is named and `degraded`, not `failed`: the node's outage, not the
agent's (a KWOK outage or a zone partition would otherwise page once per agent).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import Field

from outpost.check import Params
from outpost.cluster import Cluster, read_collections
from outpost.cluster.nodes import daemon_pod_collection, node_collection
from outpost.kube import access
from outpost.kube.daemons import DaemonPod, coverage
from outpost.kube.messages import FIRST_NAMED, first_named, ref
from outpost.kube.nodes import NodeFacts, NodeSelection, nothing_selected, select_nodes
from outpost.kube.objects import DaemonSet, parse
from outpost.kube.paths import DAEMON_SETS, NODES, PODS, object_path
from outpost.result import Finding, Result
from outpost.runbook import Runbook

# The failure classes of every coverage check, declared once: `{namespace}`, `{daemonset}` and `{selector}` are the
# check's DaemonSet and pod selector, `{node}` and `{pod}` the node and agent pod a line names.
# Neither agent's DaemonSet has a readinessProbe, on either install (koordlet: none at all,
# koordinator-sh/charts@a1963c5d2091853f71012c6790f9d1b1364b7734 versions/v1.6.0/templates/koordlet.yaml and
# koordinator@v1.6.0 config/manager/koordlet.yaml; kruise-daemon: a livenessProbe on /healthz:10221 only,
# openkruise/charts@38153b0939bc8a240a5c841761095159a0f29ed3 versions/kruise/1.8.0/templates/manager.yaml and
# kruise@v1.8.0 config/manager/manager.yaml), so the kubelet reports a container ready once it runs
# (k8s.io/kubernetes@v1.37.2 pkg/kubelet/prober/prober_manager.go UpdatePodStatus: no readiness worker -> ready).
# The DaemonSet's row (desired, ready, node selector), by field selector: it exits 0, empty, when the DaemonSet is gone.
DAEMONSET_ROW = "kubectl -n {namespace} get daemonsets --field-selector metadata.name={daemonset} -o wide"
DAEMONSET_ABSENT = Runbook(
    "daemonset-absent",
    "The agent's DaemonSet does not exist",
    "the agent is not installed: OpenKruise runs with feature gate KruiseDaemon=false (no kruise-daemon), the "
    "Koordinator chart was installed without koordlet, or the DaemonSet was deleted; or the parameters name another "
    "namespace or DaemonSet than the chart's",
    "kubectl -n {namespace} get daemonsets,pods -o wide",
    "kubectl -n {namespace} get events --sort-by=.lastTimestamp",
)
NOTHING_DESIRED = Runbook(
    "nothing-desired",
    "The agent's DaemonSet targets none of the judged nodes",
    "its nodeSelector or node affinity was edited to match no node, or a taint it does not tolerate is on every "
    "node; the DaemonSet's own counters then read 0 of 0 ready",
    "kubectl -n {namespace} describe daemonset {daemonset}",
    "kubectl get nodes --show-labels",
)
NODE_WITHOUT_POD = Runbook(
    "node-without-pod",
    "A node has no pod of the agent",
    "the DaemonSet no longer targets the node (its nodeSelector or affinity stopped matching the node's labels, or "
    "the node has a taint it does not tolerate), or the pod was deleted and not recreated (the DaemonSet "
    "controller in kube-controller-manager is not running)",
    f"{DAEMONSET_ROW} && kubectl describe node {{node}}",
    "kubectl -n {namespace} describe daemonset {daemonset}",
)
POD_NOT_READY = Runbook(
    "pod-not-ready",
    "The agent's pod on a node is not ready",
    "the agent's container is not running: crash-looping (the node's runtime or cgroup paths, its API access), its "
    "image not pulled, or restarted by its liveness probe (kruise-daemon's /healthz); neither agent has a readiness "
    "probe, so Ready means only that the container runs; or the pod is being deleted and not yet replaced",
    "kubectl -n {namespace} describe pod {pod}",
    "kubectl -n {namespace} logs {pod} --all-containers --tail=200",
)
MANY_NODES_UNCOVERED = Runbook(
    "many-nodes-uncovered",
    "More nodes than the ones named have no ready pod of the agent",
    "the same cause as the nodes named before this line, on many nodes at once: the DaemonSet's template, "
    "selector or image was changed, or a taint was put on a whole node pool",
    f"{DAEMONSET_ROW} && kubectl -n {{namespace}} get pods -l {{selector}} -o wide",
    "kubectl -n {namespace} describe daemonset {daemonset}",
)
NODE_NOT_READY = Runbook(
    "node-not-ready",
    "A node is not Ready, so its agent pod's readiness says nothing of the agent",
    "the node's kubelet stopped posting its status (the machine is down, cut off from the API server, or the kubelet "
    "crashed), or, for a KWOK fake node, kwok stopped keeping it (kwok-node-consistency names it): the node lifecycle "
    "controller then marks every pod of the node NotReady, the agent's included",
    "kubectl describe node {node}",
    "kubectl -n {namespace} get pods -l {selector} --field-selector spec.nodeName={node} -o wide",
)
MANY_NODES_NOT_READY = Runbook(
    "many-nodes-not-ready",
    "More nodes than the ones named are not Ready",
    "the same cause as the nodes named before this line, on many nodes at once: a zone or network partition, the "
    "API server unreachable from the nodes, or kwok stopped (every fake node at once)",
    "kubectl get nodes --field-selector spec.unschedulable=false -o wide",
    "kubectl get events -A --field-selector reason=NodeNotReady --sort-by=.lastTimestamp",
)
NOTHING_SELECTED = Runbook(
    "nothing-selected",
    "No node is of the classes and labels the check judges",
    "every node is a KWOK fake or virtual node, which are left out by default, or the parameters' nodes.label_selector "
    "matches no node, or every node is cordoned",
    "kubectl get nodes -o wide --show-labels",
    "docs/checks.md#{check}",
)
COVERAGE_RUNBOOKS = (
    DAEMONSET_ABSENT,
    NOTHING_DESIRED,
    NODE_WITHOUT_POD,
    POD_NOT_READY,
    MANY_NODES_UNCOVERED,
    NODE_NOT_READY,
    MANY_NODES_NOT_READY,
    NOTHING_SELECTED,
)


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

    errors: list[Finding]
    details: dict[str, Any]
    summary: str
    unobservable: Finding | None = None  # set: the result is `error` with this cause
    covered: tuple[str, ...] = ()
    warnings: list[Finding] = field(default_factory=list)
    """Nodes that are not Ready, whose agent pod is NotReady with them: `degraded` when nothing else fails."""


def runbook_names(params: DaemonCoverageParams, check: str, **more: str) -> dict[str, str]:
    """The names a coverage runbook is filled in with: the check's DaemonSet, pod selector and `more`."""
    return {
        "check": check,
        "namespace": params.namespace,
        "daemonset": params.daemonset,
        "selector": params.pod_selector,
        **more,
    }


def judge_coverage(
    data: DaemonCoverageData, params: DaemonCoverageParams, check: str, agent: str, absent_hint: str = ""
) -> CoverageVerdict:
    ds_ref = ref("DaemonSet", params.daemonset, params.namespace)
    names = runbook_names(params, check)
    selected = select_nodes(data.nodes, params.nodes)
    details: dict[str, Any] = {"daemonset": ds_ref, "selection": params.nodes.describe(), **selected.details()}
    if not selected.nodes:
        cause = f"{ds_ref}: {nothing_selected(params.nodes, selected)}"
        finding = NOTHING_SELECTED.at(cause, **names)
        return CoverageVerdict([finding], details, cause, unobservable=finding)

    cover = coverage(selected.nodes, data.pods)
    uncovered = cover.uncovered
    # A pod NotReady on a node that is not Ready is the node's failure, not the agent's: the node lifecycle
    # controller marks every pod of a node whose Ready condition leaves True NotReady (k8s.io/kubernetes@v1.37.2
    # pkg/controller/nodelifecycle/node_lifecycle_controller.go, MarkPodsNotReady). Named, `degraded`: a node outage
    # (or kwok stopped, for fake nodes) would otherwise page once per agent for what no agent did. A node with no
    # pod at all still fails: the DaemonSet's pods tolerate the not-ready and unreachable taints.
    why = dict(cover.not_ready)
    node_of = {node.name: node for node in selected.nodes}
    down = [node for node in uncovered if node in why and not node_of[node].is_ready]
    uncovered = tuple(node for node in uncovered if node not in down)
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
    details["node_not_ready_count"] = len(down)
    details["node_not_ready"] = {node: node_of[node].ready_text for node in down[:FIRST_NAMED]}

    errors: list[Finding] = []
    n = len(selected.nodes)
    if data.daemonset is None:
        hint = f" ({absent_hint})" if absent_hint else ""
        line = f"{ds_ref}: absent{hint}; want one ready {agent} pod on each of {n} selected nodes"
        errors.append(DAEMONSET_ABSENT.at(line, **names))
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
            line = (
                f"{ds_ref}: observed desiredNumberScheduled 0 (want {n}: one per selected node); "
                "the DaemonSet targets none of the selected nodes"
            )
            errors.append(NOTHING_DESIRED.at(line, **names))
    warnings = [
        NODE_NOT_READY.at(
            f"{ds_ref}: node {node} is not Ready ({node_of[node].ready_text}), so its {agent} pod is NotReady with it "
            f"({why[node]})",
            **names,
            node=node,
        )
        for node in down[:FIRST_NAMED]
    ]
    if len(down) > FIRST_NAMED:
        line = f"{ds_ref}: {len(down) - FIRST_NAMED} more nodes not Ready ({len(down)} of {n} in all)"
        warnings.append(MANY_NODES_NOT_READY.at(line, **names))
    # The pod a not-ready line is about: the first by name on its node (the one `why` names first).
    first_pod: dict[str, str] = {}
    for pod in sorted(data.pods, key=lambda p: p.name):
        first_pod.setdefault(pod.node_name, pod.name)
    for node in uncovered[:FIRST_NAMED]:
        if node in why:
            line = f"{ds_ref}: node {node} has no ready pod ({why[node]})"
            errors.append(POD_NOT_READY.at(line, **names, node=node, pod=first_pod[node]))
        else:
            errors.append(NODE_WITHOUT_POD.at(f"{ds_ref}: node {node} has no pod", **names, node=node))
    if len(uncovered) > FIRST_NAMED:
        line = (
            f"{ds_ref}: {len(uncovered) - FIRST_NAMED} more nodes without a ready pod ({len(uncovered)} of {n} in all)"
        )
        errors.append(MANY_NODES_UNCOVERED.at(line, **names))
    if data.daemonset is None:
        summary = f"{ds_ref} absent{' (' + absent_hint + ')' if absent_hint else ''}: no {agent} on {n} nodes"
    elif uncovered:
        summary = f"{agent} not ready on {len(uncovered)} of {n} nodes: {first_named(list(uncovered))}"
    elif errors:
        summary = errors[0].line
    elif down:
        summary = (
            f"{agent} NotReady on {len(down)} of {n} nodes, with the nodes themselves not Ready: {first_named(down)}"
        )
    else:
        summary = f"{agent} ready on all {n} selected nodes ({_by_class(selected.by_class)})"
    return CoverageVerdict(errors, details, summary, covered=cover.covered, warnings=warnings)


def _by_class(by_class: Mapping[str, int]) -> str:
    return ", ".join(f"{count} {cls}" for cls, count in by_class.items())


def unobservable_result(check: str, cause: Finding, details: dict[str, Any]) -> Result:
    """`error`: nothing could be judged; the cause is the one line, with its step."""
    return Result.unobserved(check, cause.line, [cause], details)


def coverage_result(check: str, verdict: CoverageVerdict) -> Result:
    if verdict.unobservable:
        return unobservable_result(check, verdict.unobservable, verdict.details)
    if verdict.errors:
        return Result.failed(check, verdict.summary, verdict.errors + verdict.warnings, verdict.details)
    if verdict.warnings:
        return Result.degraded(check, verdict.summary, verdict.warnings, verdict.details)
    return Result.ok(check, verdict.summary, verdict.details)


def evaluator(
    check: str, agent: str, absent_hint: str = ""
) -> Callable[[DaemonCoverageData, DaemonCoverageParams, datetime], Result]:
    """A check's `evaluate` for plain coverage (no extra findings)."""

    def evaluate(data: DaemonCoverageData, params: DaemonCoverageParams, now: datetime) -> Result:
        return coverage_result(check, judge_coverage(data, params, check, agent, absent_hint))

    return evaluate
