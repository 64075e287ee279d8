"""kwok-node-consistency: every KWOK fake node is Ready and its node Lease is being renewed.

Nodes are selected by kwok's own annotation `kwok.x-k8s.io/node=fake` by default. kwok-controller creates no node
and adds no label; in-cluster it plays the nodes so annotated (sigs.k8s.io/kwok@v0.8.0 `kustomize/kwok/kwok.yaml`
manageNodesWithAnnotationSelector; kwokctl's binary and compose runtimes play every node,
`pkg/kwokctl/components/kwok_controller.go`). The tutorial's label `type=kwok` is set by kwokctl's node template
(`kwokctl scale node`: `kustomize/kwokctl/resource/node.yaml`, with the annotation too), not by kwok; kwok's own
example node is `type=kwok-controller` (`test/kwok/fake-node.yaml`). Zero selected is `error` unless
`allow_no_nodes`.

Liveness is the node Lease, renewed every quarter of its duration (`pkg/kwok/controllers/controller.go`), not
`lastHeartbeatTime`, which kwok refreshes only every 10-20 minutes with Leases on. A Lease is stale past min(its
own `leaseDurationSeconds`, `max_lease_duration_seconds`), or when renewed more than `max_future_skew_seconds`
(10 s) ahead.

Why a bound: the holder writes the duration. The sandbox's node-lease-stale fault takes the Lease for a day, and
kwok then stops renewing it (`node_lease_controller.go` tryAcquireOrRenew) while it looks alive; the node
lifecycle controller does not trust the duration either. So an over-long Lease is named at once. Why 600 s: real
durations are 40 s (kwok's in-cluster config), 200 s (kwokctl's 40 s x `heartbeatFactor` 5) and 40/160/400 s
(the sandbox's tiers); 600 s passes them all with room, is 144 times shorter than the day, and is the longest a
stopped kwok may stay invisible (ten one-minute runs). A stopped kwok shows only once Leases age past their
duration: its /healthz always answers ok, and nothing else says it is gone.

Each NotReady node and stale, missing or over-long Lease is named (first ten per kind, with the count); `details`
count the selected nodes, Ready ones and fresh Leases.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster, Collection, keep_view, read_collections
from outpost.cluster.nodes import node_collection
from outpost.kube import access
from outpost.kube.messages import FIRST_NAMED, first_named, ref
from outpost.kube.nodes import KWOK_FAKE_VALUE, KWOK_NODE_ANNOTATION, NodeFacts, select_nodes
from outpost.kube.objects import Lease
from outpost.kube.paths import LEASES, NODES, collection_path
from outpost.kube.selectors import MetadataSelector
from outpost.kube.timestamps import future_skew_parameter
from outpost.result import Finding, NextStep, Result
from outpost.runbook import Runbook

NAME = "kwok-node-consistency"
FAILS_WHEN = (
    "a fake node not Ready, or its Lease not renewed within its duration, or a Lease duration over "
    "{max_lease_duration_seconds:g} s"
)

# kwok's in-cluster install runs Deployment kube-system/kwok-controller (sigs.k8s.io/kwok@v0.8.0,
# kustomize/kwok/deployment.yaml); under kwokctl it is a process or container of the cluster kwokctl made.
KWOK_LOGS = "kubectl -n kube-system logs deployment/kwok-controller --tail=200 (kwokctl: kwokctl logs kwok-controller)"
LEASE_TABLE = (
    "kubectl -n {namespace} get leases -o custom-columns=NAME:.metadata.name,HOLDER:.spec.holderIdentity,"
    "RENEWED:.spec.renewTime,DURATION:.spec.leaseDurationSeconds"
)
NODE_NOT_READY = Runbook(
    "node-not-ready",
    "A KWOK fake node is not Ready",
    "kwok-controller stopped or lost the node's Lease, so nobody plays the node's stages and the node lifecycle "
    "controller marks it NotReady/Unknown; or a stage configuration sets a condition it should not",
    "kubectl describe node {node}",
    KWOK_LOGS,
)
LEASE_STALE = Runbook(
    "lease-stale",
    "A KWOK fake node's Lease is not renewed in time",
    "kwok-controller stopped or is wedged (it renews every quarter of the duration), or another holder took the "
    "Lease; a renewTime ahead of now is a holder with a skewed clock",
    "kubectl -n {namespace} get lease {node} -o yaml",
    KWOK_LOGS,
)
LEASE_ABSENT = Runbook(
    "lease-absent",
    "A KWOK fake node has no Lease",
    "kwok-controller never took the node (it does not manage nodes of this selector, or it is not running), or "
    "the Lease was deleted and nobody re-created it",
    "kubectl describe node {node}",
    KWOK_LOGS,
)
LEASE_TOO_LONG = Runbook(
    "lease-too-long",
    "A KWOK fake node's Lease announces a duration nobody would wait out",
    "a client other than kwok-controller holds the Lease with a long (or no) leaseDurationSeconds: kwok takes a "
    "node Lease back only after renewTime + duration, so the node is not played until then; deleting the Lease "
    "lets kwok re-acquire it at once",
    "kubectl -n {namespace} get lease {node} -o yaml",
    "sigs.k8s.io/kwok pkg/kwok/controllers/node_lease_controller.go (tryAcquireOrRenew)",
)
MANY_NOT_READY = Runbook(
    "many-not-ready",
    "More KWOK fake nodes than the ones named are not Ready",
    "kwok-controller is down or overloaded: it plays every fake node's stages",
    "kubectl get nodes -o wide",
    KWOK_LOGS,
)
MANY_LEASES_STALE = Runbook(
    "many-leases-stale",
    "More KWOK fake node Leases than the ones named are stale or absent",
    "kwok-controller is down, or too slow for the number of nodes (raise its node-lease parallelism or duration)",
    LEASE_TABLE,
    KWOK_LOGS,
)
MANY_LEASES_TOO_LONG = Runbook(
    "many-leases-too-long",
    "More KWOK fake node Leases than the ones named announce an over-long duration",
    "a client other than kwok-controller took many node Leases, or kwok runs with nodeLeaseDurationSeconds above "
    "max_lease_duration_seconds (raise the bound to it)",
    LEASE_TABLE,
    "sigs.k8s.io/kwok kustomize/kwok/kwok.yaml (nodeLeaseDurationSeconds)",
)
NO_FAKE_NODES = Runbook(
    "no-fake-nodes",
    "No node is selected as a KWOK fake node",
    "no fake node exists (kwok-controller creates none: it plays the nodes kwokctl or you create, in-cluster only "
    "those annotated kwok.x-k8s.io/node=fake), or the selector is not what the nodes carry (kwokctl's carry that "
    "annotation and the label type=kwok; nodes made otherwise may carry neither)",
    "kubectl get nodes -o wide --show-labels",
    KWOK_LOGS,
)

RUNBOOKS = (
    NODE_NOT_READY,
    LEASE_STALE,
    LEASE_ABSENT,
    LEASE_TOO_LONG,
    MANY_NOT_READY,
    MANY_LEASES_STALE,
    MANY_LEASES_TOO_LONG,
    NO_FAKE_NODES,
)


class KwokNodeConsistencyParams(Params):
    selector: MetadataSelector = Field(
        default_factory=lambda: MetadataSelector("annotation", KWOK_NODE_ANNOTATION, KWOK_FAKE_VALUE),
        description="Which nodes are KWOK fake nodes: {source: label|annotation, key, value (null: key present)}.",
    )
    allow_no_nodes: bool = Field(False, description="Zero selected nodes is ok instead of error.")
    lease_namespace: str = Field("kube-node-lease", description="Namespace of the node Leases.")
    max_lease_duration_seconds: float = Field(
        600.0,
        gt=0,
        description="Upper bound on the renewal interval judged: a Lease is stale once older than "
        "min(its own leaseDurationSeconds, this), and a Lease whose own duration exceeds "
        "this is reported. 600 s passes kwok's 40 s, kwokctl's 200 s (40 s x heartbeat "
        "factor 5) and the sandbox's 40/160/400 s, and flags a foreign day-long Lease.",
    )
    max_future_skew_seconds: float = future_skew_parameter("renewTime")


@dataclass(frozen=True)
class KwokNodeData:
    nodes: tuple[NodeFacts, ...]
    leases: tuple[Lease, ...]


def fetch(cluster: Cluster, params: KwokNodeConsistencyParams) -> KwokNodeData:
    # An annotation cannot be selected on the server: every node is read (page by page, reduced to
    # its facts) and the selection is made in `evaluate`, where it is tested.
    leases = Collection(collection_path(LEASES, params.lease_namespace), Lease, keep_view)
    nodes, lease_views = read_collections(cluster, node_collection(params.selector.label_query()), leases)
    return KwokNodeData(tuple(nodes), tuple(lease_views))


def declared_access(params: KwokNodeConsistencyParams) -> list[access.Access]:
    return [
        access.list_(NODES),
        access.watch(NODES),
        access.list_(LEASES, params.lease_namespace),
        access.watch(LEASES, params.lease_namespace),
    ]


def _named(errors: list[Finding], lines: list[Finding], what: str, more: NextStep) -> None:
    """The first lines, then one line counting the rest, with the step `more`."""
    errors.extend(lines[:FIRST_NAMED])
    if len(lines) > FIRST_NAMED:
        errors.append(Finding(f"{len(lines) - FIRST_NAMED} more {what} ({len(lines)} in all)", more))


def evaluate(data: KwokNodeData, params: KwokNodeConsistencyParams, now: datetime) -> Result:
    selected = select_nodes(data.nodes, params.selector)
    details: dict[str, Any] = {
        "selector": str(params.selector),
        "selected": len(selected.nodes),
        "nodes_read": selected.total,
    }
    if not selected.nodes:
        if params.allow_no_nodes:
            return Result.ok(
                NAME, f"no node selected by {params.selector} ({selected.total} nodes read; allowed)", details
            )
        return Result.error(
            NAME,
            f"nodes: none selected by {params.selector} ({selected.total} nodes read); "
            "set allow_no_nodes if that is expected",
            NO_FAKE_NODES.step(),
            **details,
        )
    leases = {lease.name: lease for lease in data.leases}
    bound = params.max_lease_duration_seconds
    not_ready: list[str] = []
    stale: list[Finding] = []
    long_held: list[Finding] = []
    for node in selected.nodes:
        if not node.is_ready:
            not_ready.append(node.name)
        lease = leases.get(node.name)
        lease_ref = ref("Lease", node.name, params.lease_namespace)
        names = {"namespace": params.lease_namespace, "node": node.name}
        if lease is None:
            line = f"{lease_ref}: absent (want a node Lease renewed within its duration)"
            stale.append(LEASE_ABSENT.at(line, **names))
            continue
        duration = lease.spec.lease_duration_seconds
        holder = lease.spec.holder_identity or "no holder"
        age = lease.age_seconds(now)
        limit = min(duration, bound) if duration > 0 else bound
        if age is None:
            line = f"{lease_ref}: observed no renewTime, holder {holder} (want renewed within {limit:g} s)"
            stale.append(LEASE_STALE.at(line, **names))
        elif age < -params.max_future_skew_seconds:
            line = (
                f"{lease_ref}: observed renewTime {-age:.1f} s in the future, holder {holder} (want at most "
                f"{params.max_future_skew_seconds:g} s ahead of this probe's clock: a holder that stopped "
                "would hide until then)"
            )
            stale.append(LEASE_STALE.at(line, **names))
        elif age > limit:
            own = "its leaseDurationSeconds" if duration and duration <= bound else "max_lease_duration_seconds"
            line = f"{lease_ref}: observed renewTime {age:.1f} s ago, holder {holder} (want within {limit:g} s, {own})"
            stale.append(LEASE_STALE.at(line, **names))
        if duration > bound:
            line = (
                f"{lease_ref}: observed leaseDurationSeconds {duration}, holder {holder} "
                f"(want <= {bound:g} s: a holder that stopped renewing would look alive for {duration} s)"
            )
            long_held.append(LEASE_TOO_LONG.at(line, **names))
        elif duration <= 0:
            line = f"{lease_ref}: observed no leaseDurationSeconds, holder {holder} (want 1..{bound:g} s)"
            long_held.append(LEASE_TOO_LONG.at(line, **names))
    ready_facts = {node.name: node for node in selected.nodes}
    not_ready_lines = [
        NODE_NOT_READY.at(f"node {name}: observed {ready_facts[name].ready_text} (want Ready=True)", node=name)
        for name in not_ready
    ]
    errors: list[Finding] = []
    table = {"namespace": params.lease_namespace}
    _named(errors, not_ready_lines, "nodes not Ready", MANY_NOT_READY.step())
    _named(errors, stale, "stale node Leases", MANY_LEASES_STALE.step(**table))
    _named(errors, long_held, "node Leases with an over-long duration", MANY_LEASES_TOO_LONG.step(**table))
    n = len(selected.nodes)
    details.update(
        {
            "ready": n - len(not_ready),
            "not_ready": not_ready[:FIRST_NAMED],
            "not_ready_count": len(not_ready),
            "stale_lease_count": len(stale),
            "long_lease_count": len(long_held),
            "max_lease_duration_seconds": bound,
        }
    )
    if errors:
        parts = [
            f"{len(not_ready)} not Ready ({first_named(not_ready)})" if not_ready else "",
            f"{len(stale)} with a stale Lease" if stale else "",
            f"{len(long_held)} with a Lease duration over {bound:g} s" if long_held else "",
        ]
        named = "; ".join(part for part in parts if part)
        return Result.failed(NAME, f"KWOK fake nodes ({n}): {named}: {errors[0].line}", errors, details)
    return Result.ok(NAME, f"all {n} KWOK fake nodes Ready with their Leases renewed in time", details)


CHECK = CheckSpec(
    name=NAME,
    system="kwok",
    layer="node",
    severity="warning",
    schedule_minutes=1,
    fails_when=FAILS_WHEN,
    params=KwokNodeConsistencyParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
