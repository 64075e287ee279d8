"""kruise-daemon-coverage: every node that should run kruise-daemon has a ready one; optionally,
each answers `/healthz` on 10221.

Judged by nodes against pods (`outpost.families.daemon_coverage`), not the DaemonSet's counters. Upstream
(openkruise/kruise@v1.8.0 `cmd/daemon/main.go`, `pkg/daemon/util/healthz.go`): DaemonSet `kruise-system/kruise-daemon`,
pods `control-plane=daemon`, hostNetwork, `/healthz` on `:10221`; the chart (not config/) keeps it off
`type=virtual-kubelet` nodes. Its only probe, on either install, is a livenessProbe on that `/healthz` (60 s initial
delay, 3 failures 10 s apart), so "ready" means its container runs: a failing `/healthz` shows as restarts, and as
not ready only while it restarts; `probe_healthz` asks it directly. Real nodes by default; fake nodes are opt-in,
since kwok makes their pods Ready regardless. With the gate `KruiseDaemon=false` the DaemonSet does not exist:
`failed`, never healthy (pre-download, restarts and in-place updates then do not work).

`probe_healthz` (opt-in) asks each ready pod's node through the node proxy, for nodes in `healthz_classes` (real
only by default: a fake node's address is kwok's own or TEST-NET-1, where no daemon listens;
sigs.k8s.io/kwok@v0.8.0 `kustomize/kwok/deployment.yaml`), at most `healthz_concurrency` at once; none to ask is
`error`. Opt-in because `get nodes/proxy` also reaches every kubelet: `outpost rbac` grants it in a separate,
warned ClusterRole. Answers are classified by `outpost.cluster.probes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from outpost.check import CheckSpec
from outpost.cluster import Cluster, node_proxy
from outpost.cluster.probes import ProbeOutcome, ProbeTarget, probe_all
from outpost.families.daemon_coverage import (
    COVERAGE_RUNBOOKS,
    DAEMONSET_ROW,
    DaemonCoverageData,
    DaemonCoverageParams,
    coverage_result,
    fetch_coverage,
    judge_coverage,
    runbook_names,
    unobservable_result,
)
from outpost.families.daemon_coverage import (
    declared_access as coverage_access,
)
from outpost.kube import access
from outpost.kube.daemons import coverage
from outpost.kube.messages import FIRST_NAMED, ref
from outpost.kube.nodes import NodeClass, node_classes_parameter, select_nodes
from outpost.result import Finding, Result
from outpost.runbook import Runbook

NAME = "kruise-daemon-coverage"
FAILS_WHEN = (
    "a node (real by default; KWOK fake opt-in) without a ready kruise-daemon (a node itself not Ready: degraded); "
    "optional per-node /healthz:{healthz_port} (real nodes by default)"
)
ABSENT_HINT = "is OpenKruise running with feature gate KruiseDaemon=false?"

HEALTHZ_FAILING = Runbook(
    "healthz-failing",
    "A node's kruise-daemon does not answer its health endpoint",
    "kruise-daemon on the node is wedged or restarting (its CRI socket or the node's runtime is unavailable), or "
    "something else holds its port on the host network; an answer with no body match is a changed endpoint",
    "kubectl -n {namespace} get pods -l {selector} -o wide --field-selector spec.nodeName={node} && "
    "kubectl -n {namespace} describe pod {pod}",
    "kubectl -n {namespace} logs {pod} --tail=200",
)
MANY_HEALTHZ_FAILING = Runbook(
    "many-healthz-failing",
    "More nodes than the ones named fail kruise-daemon's health endpoint",
    "the same cause as the nodes named before this line, on many nodes: a kruise-daemon release or configuration "
    "that fails everywhere, or a network policy or firewall between the API server and the nodes' port",
    f"{DAEMONSET_ROW} && kubectl -n {{namespace}} get pods -l {{selector}} -o wide",
    "kubectl -n {namespace} describe daemonset {daemonset}",
)
HEALTHZ_NOTHING_ELIGIBLE = Runbook(
    "healthz-nothing-eligible",
    "probe_healthz is on but no judged node is of a class whose health endpoint is asked",
    "the cluster's nodes are all KWOK fake nodes (no kruise-daemon listens at their addresses) while "
    "healthz_classes is real only: turn probe_healthz off or select real nodes",
    "kubectl get nodes -o wide --show-labels",
    "docs/checks.md#kruise-daemon-coverage",
)

RUNBOOKS = (*COVERAGE_RUNBOOKS, HEALTHZ_FAILING, MANY_HEALTHZ_FAILING, HEALTHZ_NOTHING_ELIGIBLE)


class KruiseDaemonCoverageParams(DaemonCoverageParams):
    namespace: str = Field("kruise-system", description="Namespace of the kruise-daemon DaemonSet.")
    daemonset: str = Field("kruise-daemon", description="Name of the kruise-daemon DaemonSet.")
    pod_selector: str = Field("control-plane=daemon", description="Label selector of kruise-daemon pods.")
    probe_healthz: bool = Field(
        False,
        description="Also GET each covered node's kruise-daemon /healthz through the node proxy. Needs "
        "`get nodes/proxy` (ClusterRole outpost-probe-node-proxy, powerful: reaches kubelets).",
    )
    healthz_classes: tuple[NodeClass, ...] = node_classes_parameter(
        "Node classes whose /healthz is asked (among the selected, covered nodes).",
        "a KWOK fake node's address is the kwok controller's (or an unroutable 192.0.2.x under kwokctl), where no "
        "kruise-daemon listens, so asking it fails every fake node",
        "something answers for fake nodes (the sandbox's stand-in)",
    )
    healthz_port: int = Field(10221, ge=1, le=65535, description="kruise-daemon's health port (its `--addr`).")
    healthz_path: str = Field("/healthz", description="Health path asked through the node proxy.")
    healthz_scheme: Literal["http", "https"] = Field("http", description="Scheme of the health port.")
    healthz_expect_body: str | None = Field(None, description="Body that must match (stripped); None: any 2xx.")
    healthz_timeout_seconds: float = Field(5.0, gt=0, le=60, description="Per node; a slower answer is a failure.")
    healthz_concurrency: int = Field(8, ge=1, le=64, description="Node proxy requests in flight at once.")


@dataclass(frozen=True)
class KruiseDaemonData:
    coverage: DaemonCoverageData
    healthz: tuple[ProbeOutcome, ...] = ()  # one per probed node, when probe_healthz


@dataclass(frozen=True)
class HealthzPlan:
    """Which covered nodes are asked for /healthz, and an account per class of the ones that are not."""

    targets: tuple[ProbeTarget, ...]
    class_of: Mapping[str, str]  # target ref -> node class
    node_of: Mapping[str, str]  # target ref -> node name
    eligible: int  # selected nodes of a probed class, covered or not
    not_probed: Mapping[str, int]  # covered nodes of a class not in healthz_classes, per class


def healthz_label(params: KruiseDaemonCoverageParams) -> str:
    return f":{params.healthz_port}{params.healthz_path}"


def healthz_plan(data: DaemonCoverageData, params: KruiseDaemonCoverageParams) -> HealthzPlan:
    """The covered nodes of `healthz_classes` as proxy targets (uncovered nodes already fail coverage)."""
    selected = select_nodes(data.nodes, params.nodes).nodes
    covered = set(coverage(selected, data.pods).covered)
    targets: list[ProbeTarget] = []
    class_of: dict[str, str] = {}
    node_of: dict[str, str] = {}
    not_probed: dict[str, int] = {}
    for node in selected:
        if node.name not in covered:
            continue
        if node.node_class not in params.healthz_classes:
            not_probed[node.node_class.value] = not_probed.get(node.node_class.value, 0) + 1
            continue
        target = ProbeTarget(
            ref("Node", node.name),
            healthz_label(params),
            node_proxy(
                node.name,
                params.healthz_port,
                params.healthz_path,
                scheme="https" if params.healthz_scheme == "https" else None,
            ),
            params.healthz_expect_body,
        )
        targets.append(target)
        class_of[target.ref] = node.node_class.value
        node_of[target.ref] = node.name
    eligible = sum(1 for node in selected if node.node_class in params.healthz_classes)
    return HealthzPlan(tuple(targets), class_of, node_of, eligible, not_probed)


def healthz_targets(data: DaemonCoverageData, params: KruiseDaemonCoverageParams) -> list[ProbeTarget]:
    return list(healthz_plan(data, params).targets)


def fetch(cluster: Cluster, params: KruiseDaemonCoverageParams) -> KruiseDaemonData:
    data = fetch_coverage(cluster, params)
    if not params.probe_healthz:
        return KruiseDaemonData(data)
    outcomes = probe_all(
        cluster,
        healthz_targets(data, params),
        timeout=params.healthz_timeout_seconds,
        concurrency=params.healthz_concurrency,
    )
    return KruiseDaemonData(data, tuple(outcomes))


def _classes(classes: tuple[NodeClass, ...]) -> str:
    return " and ".join(cls.value for cls in classes)


def evaluate(data: KruiseDaemonData, params: KruiseDaemonCoverageParams, now: datetime) -> Result:
    verdict = judge_coverage(data.coverage, params, NAME, "kruise-daemon", ABSENT_HINT)
    if verdict.unobservable or not params.probe_healthz:
        return coverage_result(NAME, verdict)
    label = healthz_label(params)
    ds_ref = ref("DaemonSet", params.daemonset, params.namespace)
    plan = healthz_plan(data.coverage, params)
    details: dict[str, Any] = dict(verdict.details)
    if not plan.eligible:
        cause = (
            f"{ds_ref}: probe_healthz is on, but no selected node ({params.nodes.describe()}) is of "
            f"healthz_classes ({_classes(params.healthz_classes)}): no {label} to ask; add fake to "
            "healthz_classes only where something answers for fake nodes"
        )
        return unobservable_result(NAME, HEALTHZ_NOTHING_ELIGIBLE.at(cause, **runbook_names(params, NAME)), details)
    failing = [outcome for outcome in data.healthz if not outcome.healthy]
    by_class: dict[str, dict[str, int]] = {cls.value: {"probed": 0, "healthy": 0} for cls in params.healthz_classes}
    for outcome in data.healthz:
        counts = by_class.setdefault(plan.class_of.get(outcome.target.ref, "unknown"), {"probed": 0, "healthy": 0})
        counts["probed"] += 1
        counts["healthy"] += outcome.healthy
    details["healthz"] = {
        "classes": [cls.value for cls in params.healthz_classes],
        "probed": len(data.healthz),
        "healthy": len(data.healthz) - len(failing),
        "by_class": by_class,
        "not_probed": dict(plan.not_probed),
        "failing": [o.as_detail() for o in failing[:FIRST_NAMED]],
    }
    names = runbook_names(params, NAME)
    # The serving pod of each node: the one that should have answered (probed nodes are covered).
    serving: dict[str, str] = {}
    for pod in sorted(data.coverage.pods, key=lambda p: p.name):
        if pod.serving:
            serving.setdefault(pod.node_name, pod.name)
    errors: list[Finding] = list(verdict.errors)
    for outcome in failing[:FIRST_NAMED]:
        node = plan.node_of[outcome.target.ref]
        line = f"{ds_ref}: {outcome.message}"
        errors.append(HEALTHZ_FAILING.at(line, **names, node=node, pod=serving[node]))
    if len(failing) > FIRST_NAMED:
        line = f"{ds_ref}: {len(failing) - FIRST_NAMED} more nodes failing {label} ({len(failing)} in all)"
        errors.append(MANY_HEALTHZ_FAILING.at(line, **names))
    skipped = "".join(f", {count} {cls} not probed" for cls, count in plan.not_probed.items())
    summary = verdict.summary
    if failing and not verdict.errors:
        summary = (
            f"kruise-daemon {label} failing on {len(failing)} of {len(data.healthz)} probed nodes: {failing[0].message}"
        )
    elif not errors:
        summary += (
            f"; {label} healthy on all {len(data.healthz)} {_classes(params.healthz_classes)} nodes probed{skipped}"
        )
    if errors:
        return Result.failed(NAME, summary, errors + verdict.warnings, details)
    if verdict.warnings:
        return Result.degraded(NAME, summary, verdict.warnings, details)
    return Result.ok(NAME, summary, details)


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
    schedule_minutes=1,
    fails_when=FAILS_WHEN,
    params=KruiseDaemonCoverageParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
