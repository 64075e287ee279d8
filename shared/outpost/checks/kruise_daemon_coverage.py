"""kruise-daemon-coverage: every node that should run kruise-daemon has a ready one; optionally,
each answers `/healthz` on 10221.

Judged by comparing nodes with pods (`outpost.checks.daemon_coverage`), not by the DaemonSet's
counters. Upstream: DaemonSet `kruise-system/kruise-daemon`, pods labelled `control-plane=daemon`,
hostNetwork, `/healthz` on `:10221` answering 200 `ok` (`github.com/openkruise/kruise@v1.8.0,
cmd/daemon/main.go` `--addr`, `pkg/daemon/util/healthz.go`); the Helm chart keeps it off nodes
labelled `type=virtual-kubelet` (`openkruise/charts versions/kruise/1.8.0/values.yaml`
`daemon.affinity`), and virtual nodes are not judged by default. Nodes judged: real nodes by
default (`outpost.kube.nodes.NodeSelection`); a KWOK fake node is opt-in, because kwok makes the
kruise-daemon pod bound to it Ready whether or not anything runs. When OpenKruise runs with the
feature gate `KruiseDaemon=false` the DaemonSet does not exist: that is reported as such and is
`failed`, never "healthy" (image pre-download, container restart and in-place update then do not
work).

Per-node `/healthz` (opt-in, `probe_healthz`): through the API server's node proxy
(`/api/v1/nodes/NODE:10221/proxy/healthz`), only for nodes whose kruise-daemon pod is ready and whose
class is in `healthz_classes` (default real only), at most `healthz_concurrency` at once; `details`
count probed and unprobed nodes per class. A fake node is never asked by default: the node proxy
dials the node's address, and kwok gives a fake node the kwok controller's own (its pod IP in-cluster:
`sigs.k8s.io/kwok@v0.8.0, kustomize/kwok/deployment.yaml` `--node-ip=$(POD_IP)`, written by
`kustomize/stage/node/fast/node-initialize.yaml` `NodeIP`) or, under `kwokctl scale node`, a
TEST-NET-1 address from 192.0.2.1 up (`kustomize/kwokctl/resource/node.yaml` `nodeIPs`), where no
kruise-daemon listens: every fake node would fail. `probe_healthz` with no selected node of those
classes is `error` (nothing could be asked). Opt-in because it needs `get nodes/proxy`, which also
reaches every kubelet's API: `outpost rbac` generates the separate ClusterRole
`outpost-probe-node-proxy`, with a warning, only for an environment that turns `probe_healthz` on.
Answers are classified by `outpost.cluster.probes`: a non-2xx answer, a reset or a hang (while the
API server itself answers) is the node's daemon failing; 401/403 (the role not bound), 429 or a dead
API server is `error`.
"""

from __future__ import annotations

from collections.abc import Mapping
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
from outpost.kube.nodes import NodeClass, select_nodes
from outpost.result import Result, Status

NAME = "kruise-daemon-coverage"
ABSENT_HINT = "is OpenKruise running with feature gate KruiseDaemon=false?"


class KruiseDaemonCoverageParams(DaemonCoverageParams):
    namespace: str = Field("kruise-system", description="Namespace of the kruise-daemon DaemonSet.")
    daemonset: str = Field("kruise-daemon", description="Name of the kruise-daemon DaemonSet.")
    pod_selector: str = Field("control-plane=daemon", description="Label selector of kruise-daemon pods.")
    probe_healthz: bool = Field(
        False,
        description="Also GET each covered node's kruise-daemon /healthz through the node proxy. Needs "
        "`get nodes/proxy` (ClusterRole outpost-probe-node-proxy, powerful: reaches kubelets).",
    )
    healthz_classes: tuple[NodeClass, ...] = Field(
        (NodeClass.REAL,),
        min_length=1,
        description="Node classes whose /healthz is asked (among the selected, covered nodes). Default real only: "
        "a KWOK fake node's address is the kwok controller's (or an unroutable 192.0.2.x under "
        "kwokctl), where no kruise-daemon listens, so asking it fails every fake node. Add fake only "
        "where something answers for fake nodes (the sandbox's stand-in).",
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
    eligible = sum(1 for node in selected if node.node_class in params.healthz_classes)
    return HealthzPlan(tuple(targets), class_of, eligible, not_probed)


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
    verdict = judge_coverage(data.coverage, params, "kruise-daemon", ABSENT_HINT)
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
        return Result(check=NAME, status=Status.ERROR, summary=cause, errors=[cause], details=details)
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
    errors = list(verdict.errors)
    errors += [f"{ds_ref}: {outcome.message}" for outcome in failing[:FIRST_NAMED]]
    if len(failing) > FIRST_NAMED:
        errors.append(f"{ds_ref}: {len(failing) - FIRST_NAMED} more nodes failing {label} ({len(failing)} in all)")
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
    return Result(
        check=NAME, status=Status.FAILED if errors else Status.OK, summary=summary, errors=errors, details=details
    )


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
    fails_when="a node (real by default; KWOK fake opt-in) without a ready kruise-daemon; optional per-node "
    "/healthz:{healthz_port} (real nodes by default)",
    params=KruiseDaemonCoverageParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
)
