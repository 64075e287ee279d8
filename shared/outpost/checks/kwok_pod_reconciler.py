"""kwok-pod-reconciler: the KWOK tutorial's reconcile job, done safely. A job, run like a check.

The tutorial's script patches EVERY Pending pod to Running with admin rights and pings whatever happened. This
job advances only what kwok itself would have, leaves each pod exactly where kwok would, and pings only when the
run completed (all citations sigs.k8s.io/kwok@v0.8.0):
- opt-in, under an identity of its own (`cluster_auth`; the sandbox's `outpost-reconciler`) holding only list
  nodes, list pods, patch pods/status;
- it moves only pods the `pod-ready` stage would (`kustomize/stage/pod/fast/pod-ready.yaml`: Pending, not being
  deleted, Ready not True), bound to a node the fake-node selector selects, and Pending for at least
  `min_pending_seconds` so it never races a healthy kwok; never an unbound pod or one on another node;
- it writes the status that stage writes, since the stage never matches the pod again: Running, `startTime`,
  conditions (including each readiness gate) merged by type as kwok's patch merges them (`pkg/utils/lifecycle/
  next.go`), container and init-container statuses, and `hostIP(s)` as kwok picks them (`node_controller.go`
  getNodeHostIPs); a node without such an address is left alone, since kwok would use a `--node-ip` it cannot see;
- `podIP` only for hostNetwork pods (`pod_controller.go` funcPodIPsWith): kwok allocates other pod IPs in its
  own memory, so one chosen here could be handed out twice. Such a pod is Ready but no Service endpoint
  (k8s.io/endpointslice@v0.37.2 ShouldPodBeInEndpoints); deleting it lets its owner recreate it for kwok.
  kwok's `pod-complete` and `pod-delete` stages still apply to moved pods;
- each write is ONE merge patch of `status` with the pod's resourceVersion as precondition: a changed pod gets a
  409 and waits for the next run, a gone one (404) is skipped, and the precondition makes replacing the
  condition list safe. The answer is checked before a pod counts as moved; a second run finds nothing;
- at most `max_pods` a run (the rest in `details.left_for_next_run`); `dry_run` sends the same with `dryRun=All`;
- any other failed write stops the run as `error` naming the pod, listing those already moved (no ping).
The result names the pods moved (`details.moved`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster, ClusterWriter
from outpost.errors import ClusterError, ClusterResponseError
from outpost.kube import (
    NODES,
    PODS,
    READY,
    MetadataSelector,
    Node,
    Pod,
    access,
    age_seconds,
    collection_path,
    find_condition,
    format_time,
    is_true,
    object_path,
    parse,
)
from outpost.result import Result
from outpost.runbook import Runbook

NAME = "kwok-pod-reconciler"
FAILS_WHEN = "the run could not complete (a write refused or failed); never moves pods off fake nodes"

# By field selector, so that it exits 0 and shows nothing rather than failing when the pod is gone meanwhile.
THE_POD = "kubectl -n {namespace} get pods --field-selector metadata.name={pod} -o wide"
WRITE_FAILED = Runbook(
    "write-failed",
    "The reconciler's write of a pod's status failed or was answered wrongly",
    "403: the reconciler's own identity lacks patch on pods/status (outpost rbac grants it to that identity "
    "only); 422: a validating webhook or the API server's validation refused the status; 5xx or a timeout: the API "
    "server is in trouble; an answer other than Running and Ready on the same node: a mutating webhook or another "
    "controller rewrote the status",
    THE_POD,
    "docs/rbac.md",
)
NO_FAKE_NODES = Runbook(
    "no-fake-nodes",
    "No node is selected as a KWOK fake node, so nothing can be reconciled",
    "kwok-controller has not created or taken any node, or the fake-node selector is not the one the nodes carry "
    "(kwok marks its nodes with annotation kwok.x-k8s.io/node=fake)",
    "kubectl get nodes -o wide --show-labels",
    "docs/checks.md#kwok-pod-reconciler",
)
POD_LEFT_ALONE = Runbook(
    "pod-left-alone",
    "A Pending pod on a fake node was left for kwok or for the next run",
    "its node reports no InternalIP or ExternalIP (kwok would use its own --node-ip, which the job cannot see), or "
    "the pod changed or went away between the job's read and its write (kwok came back, or its owner recreated it)",
    THE_POD,
    "kubectl -n kube-system logs deployment/kwok-controller --tail=200",
)
LEFT_FOR_NEXT_RUN = Runbook(
    "left-for-next-run",
    "More Pending pods on fake nodes than a run moves",
    "kwok-controller is down or far behind, so Pending pods pile up beyond max_pods per run; the next runs move "
    "the rest",
    "kubectl get pods -A --field-selector status.phase=Pending -o wide",
    "kubectl -n kube-system logs deployment/kwok-controller --tail=200",
)

RUNBOOKS = (WRITE_FAILED, NO_FAKE_NODES, POD_LEFT_ALONE, LEFT_FOR_NEXT_RUN)

NAMED_IN_SUMMARY = 5
STAGE_CONDITIONS = ("Initialized", READY, "ContainersReady")
"""The conditions kwok's pod-ready stage sets True, in its template's order."""

IP = ipaddress.IPv4Address | ipaddress.IPv6Address


class KwokPodReconcilerParams(Params):
    fake_node_source: Literal["label", "annotation"] = Field(
        "annotation", description="Select fake nodes by an annotation (upstream) or a label (e.g. type=kwok)."
    )
    fake_node_key: str = Field("kwok.x-k8s.io/node", min_length=1, description="Key marking a fake node (kwok's own).")
    fake_node_value: str | None = Field("fake", description="Required value; null selects on the key alone.")
    namespaces: list[str] = Field(default_factory=list, description="Only pods in these namespaces; default: all.")
    max_pods: int = Field(50, ge=1, le=1000, description="Pods moved per run at most.")
    min_pending_seconds: int = Field(
        60, ge=0, le=86400, description="Leave pods Pending for less than this to kwok (no race with it)."
    )
    dry_run: bool = Field(False, description="Send every patch with dryRun=All: nothing is changed.")

    @field_validator("fake_node_key")
    @classmethod
    def _key(cls, value: str) -> str:
        MetadataSelector("label", value)  # raises ValueError for a malformed key
        return value

    @property
    def fake_nodes(self) -> MetadataSelector:
        return MetadataSelector(self.fake_node_source, self.fake_node_key, self.fake_node_value)


@dataclass(frozen=True)
class Skipped:
    pod: str
    why: str


@dataclass
class ReconcileData:
    fake_nodes: int
    pending_seen: int
    dry_run: bool
    moved: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    not_on_fake_nodes: int = 0
    unbound: int = 0
    too_recent: int = 0
    already_ready: int = 0
    left_for_next_run: int = 0
    failure: str | None = None
    failed_pod: str = ""
    """`namespace/name` of the pod `failure` is about."""


def pending_since(pod: Pod) -> datetime | None:
    """When the pod was bound (PodScheduled True), else created: how long it has waited for its node."""
    scheduled = find_condition(pod.status.conditions, "PodScheduled")
    if scheduled is not None and scheduled.true and scheduled.last_transition_time is not None:
        return scheduled.last_transition_time
    return pod.metadata.creation_timestamp


def _go_ip(text: str) -> IP | None:
    """`text` read as k8s.io/utils/net ParseIPSloppy reads it (leading zeros allowed, no zone), or None."""
    octets = text.split(".")
    if len(octets) == 4 and all(o.isascii() and o.isdigit() for o in octets):
        text = ".".join(str(int(o)) for o in octets)
    if "%" in text:
        return None
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped  # Go's net.IP holds ::ffff:a.b.c.d as the IPv4 address
    return ip


def kwok_host_ips(node: Node) -> list[str]:
    """The node's IPs as kwok gives them to its pods (getNodeHostIPs): InternalIPs, then ExternalIPs; the
    first, and the first after it of the other IP family."""
    ordered = [
        ip
        for kind in ("InternalIP", "ExternalIP")
        for a in node.status.addresses
        if a.type == kind and (ip := _go_ip(a.address)) is not None
    ]
    if not ordered:
        return []
    other = next((ip for ip in ordered[1:] if ip.version != ordered[0].version), None)
    return [str(ip) for ip in (ordered[0], other) if ip is not None]


def _merged_by_type(current: list[dict[str, Any]], stage: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`stage` conditions merged into `current` as a strategic merge patch (patchMergeKey `type`) merges them
    (`k8s.io/apimachinery@v0.37.2, pkg/util/strategicpatch/patch.go`, mergeSlice): a condition already there
    keeps the fields the stage does not set (reason, message); patched conditions come in the stage's order,
    the pod's other ones keep their place relative to the patched ones it already had."""
    server_order = [c.get("type") for c in current]
    merged = [dict(c) for c in current]
    for condition in stage:
        at = next((i for i, c in enumerate(merged) if c.get("type") == condition["type"]), None)
        if at is None:
            merged.append(dict(condition))
        else:
            merged[at] = {**merged[at], **condition}
    stage_order = list(dict.fromkeys(c["type"] for c in stage))
    patched = sorted((c for c in merged if c.get("type") in stage_order), key=lambda c: stage_order.index(c["type"]))
    server_only = [c for c in merged if c.get("type") not in stage_order]
    result: list[dict[str, Any]] = []
    while patched or server_only:
        # a server-only condition goes first only when both were on the pod and it came first there
        if server_only and (
            not patched
            or (
                patched[0]["type"] in server_order
                and server_order.index(server_only[0].get("type")) < server_order.index(patched[0]["type"])
            )
        ):
            result.append(server_only.pop(0))
        else:
            result.append(patched.pop(0))
    return result


def ready_status(pod: dict[str, Any], host_ips: list[str], now: datetime) -> dict[str, Any]:
    """The pod's `status` after kwok's pod-ready stage (its statusTemplate, rendered over the pod's JSON, merged
    as kwok's patch merges it), except `podIP` for a pod that is not hostNetwork (kwok's IP pool is its own)."""
    spec: dict[str, Any] = pod.get("spec") or {}
    status: dict[str, Any] = pod.get("status") or {}
    at = format_time(now)  # kwok writes RFC3339Nano; the API server keeps seconds
    gates = [gate.get("conditionType") for gate in spec.get("readinessGates") or []]
    stage = [{"lastTransitionTime": at, "status": "True", "type": kind} for kind in (*STAGE_CONDITIONS, *gates)]
    containers = [
        {
            "image": c.get("image"),
            "name": c.get("name"),
            "ready": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": at}},
        }
        for c in spec.get("containers") or []
    ]
    inits = [
        {"image": c.get("image"), "name": c.get("name"), "ready": True, "restartCount": 0}
        | (
            {"started": True, "state": {"running": {"startedAt": at}}}
            if c.get("restartPolicy") == "Always"
            else {"state": {"terminated": {"exitCode": 0, "finishedAt": at, "reason": "Completed", "startedAt": at}}}
        )
        for c in spec.get("initContainers") or []
    ]
    ready: dict[str, Any] = {
        "conditions": _merged_by_type(list(status.get("conditions") or []), stage),
        "containerStatuses": containers or None,  # the template renders an empty range as null: field removed
        "initContainerStatuses": inits or None,
        "phase": "Running",
        "startTime": at,
    }
    if host_ips:  # kwok merges hostIPs/podIPs by ip into the pod's own; a Pending pod nobody ran has none
        ready |= {"hostIP": host_ips[0], "hostIPs": [{"ip": ip} for ip in host_ips]}
        if spec.get("hostNetwork"):
            ready |= {"podIP": host_ips[0], "podIPs": [{"ip": ip} for ip in host_ips]}
    return ready


@dataclass(frozen=True)
class Candidate:
    pod: Pod
    raw: dict[str, Any]
    host_ips: list[str]


def fetch(cluster: Cluster, params: KwokPodReconcilerParams) -> ReconcileData:
    if not isinstance(cluster, ClusterWriter):
        raise ClusterError(f"{NAME}: needs a write client; the runner gave a read-only one")
    selector = params.fake_nodes
    nodes_path = collection_path(NODES)
    # Whole Nodes, not metadata: the pods' host IPs are the nodes' addresses (same `list nodes` grant).
    node_items = cluster.list(nodes_path, label_selector=selector.label_query())
    nodes = [parse(Node, item, f"LIST {nodes_path}") for item in node_items]
    fake = {
        node.metadata.name: kwok_host_ips(node)
        for node in nodes
        if selector.matches(node.metadata.labels, node.metadata.annotations)
    }
    listed: list[tuple[Pod, dict[str, Any]]] = []
    scopes: list[str | None] = list(params.namespaces) or [None]
    for namespace in scopes:
        path = collection_path(PODS, namespace)
        listed += [
            (parse(Pod, item, f"LIST {path}"), item)
            for item in cluster.list(path, field_selector="status.phase=Pending")
        ]
    data = ReconcileData(fake_nodes=len(fake), pending_seen=len(listed), dry_run=params.dry_run)
    now = datetime.now(UTC)
    candidates: list[Candidate] = []
    for pod, raw in sorted(listed, key=lambda pair: (pair[0].namespace, pair[0].name)):
        if pod.status.phase != "Pending" or pod.terminating:
            continue  # the server filtered on phase; judge again rather than trust it
        if not pod.node_name:
            data.unbound += 1
        elif pod.node_name not in fake:
            data.not_on_fake_nodes += 1
        elif is_true(pod.status.conditions, READY):
            data.already_ready += 1  # kwok's pod-ready selects only pods whose Ready is not True
        elif (age_seconds(pending_since(pod), now) or 0.0) < params.min_pending_seconds:
            data.too_recent += 1
        elif not fake[pod.node_name]:
            data.skipped.append(
                Skipped(
                    f"{pod.namespace}/{pod.name}",
                    (
                        f"node {pod.node_name} reports no InternalIP or ExternalIP: kwok would use its --node-ip, "
                        f"which this job cannot see (left to kwok)"
                    ),
                )
            )
        else:
            candidates.append(Candidate(pod, raw, fake[pod.node_name]))
    data.left_for_next_run = max(0, len(candidates) - params.max_pods)
    for candidate in candidates[: params.max_pods]:
        pod = candidate.pod
        who = f"{pod.namespace}/{pod.name}"
        path = object_path(PODS, pod.name, pod.namespace, "status")
        patch: dict[str, Any] = {
            "metadata": {"resourceVersion": pod.metadata.resource_version},
            "status": ready_status(candidate.raw, candidate.host_ips, now),
        }
        try:
            answer = cluster.merge_patch(path, patch, dry_run=params.dry_run)
        except ClusterResponseError as error:
            if error.status_code == 404:
                data.skipped.append(Skipped(who, "gone before it was patched"))
                continue
            if error.status_code == 409:
                data.skipped.append(Skipped(who, "changed since it was listed (left for the next run)"))
                continue
            data.failure, data.failed_pod = f"pod {who}: patching status to Running failed: {error}", who
            break
        except ClusterError as error:
            data.failure, data.failed_pod = f"pod {who}: patching status to Running failed: {error}", who
            break
        after = parse(Pod, answer, f"PATCH {path}")
        ready = find_condition(after.status.conditions, READY)
        if after.status.phase != "Running" or ready is None or not ready.true or after.node_name != pod.node_name:
            data.failure = (
                f"pod {who}: the API server answered phase {after.status.phase or '(none)'}, Ready "
                f"{ready.status if ready else '(none)'} on node {after.node_name or '(none)'} "
                f"(want Running, Ready True on {pod.node_name})"
            )
            data.failed_pod = who
            break
        data.moved.append(who)
    return data


def declared_access(params: KwokPodReconcilerParams) -> list[access.Access]:
    """Under its own write identity: LIST nodes and Pending pods, PATCH pods/status (nothing else)."""
    scopes: list[str | None] = list(params.namespaces) or [None]
    needed: list[access.Access] = [access.list_(NODES)]
    needed += [access.list_(PODS, namespace) for namespace in scopes]
    needed += [
        access.patch(PODS, "status", namespace, when="a Pending pod on a fake node is due") for namespace in scopes
    ]
    return needed


def _pod_names(who: str) -> dict[str, str]:
    """`namespace/name` as the names a runbook is filled in with."""
    namespace, _, pod = who.partition("/")
    return {"namespace": namespace, "pod": pod}


def evaluate(data: ReconcileData, params: KwokPodReconcilerParams, now: datetime) -> Result:
    verb = "would move" if data.dry_run else "moved"
    details: dict[str, Any] = {
        "dry_run": data.dry_run,
        "moved_count": len(data.moved),
        "moved": list(data.moved),
        "fake_nodes": data.fake_nodes,
        "pending_seen": data.pending_seen,
        "left_alone": {
            "not_on_fake_nodes": data.not_on_fake_nodes,
            "unbound": data.unbound,
            "pending_less_than_min": data.too_recent,
            "already_ready": data.already_ready,
        },
        "skipped": [{"pod": s.pod, "why": s.why} for s in data.skipped],
        "left_for_next_run": data.left_for_next_run,
        "fake_node_selector": str(params.fake_nodes),
    }
    named = ", ".join(data.moved[:NAMED_IN_SUMMARY]) + (
        f" and {len(data.moved) - NAMED_IN_SUMMARY} more" if len(data.moved) > NAMED_IN_SUMMARY else ""
    )
    done = f"{verb} {len(data.moved)} Pending pod(s) on fake nodes to Running" + (f": {named}" if named else "")
    if data.failure is not None:
        return Result.unobserved(
            NAME,
            f"{data.failure} (after {verb} {len(data.moved)})",
            [WRITE_FAILED.at(data.failure, **_pod_names(data.failed_pod))],
            details,
        )
    if data.fake_nodes == 0:
        why = f"no node selected by {params.fake_nodes}: nothing to reconcile, and the selector may be wrong"
        return Result.error(NAME, f"{NAME}: {why}", NO_FAKE_NODES.step(), **details)
    notes = [POD_LEFT_ALONE.at(f"pod {s.pod}: {s.why}", **_pod_names(s.pod)) for s in data.skipped]
    if data.left_for_next_run:
        notes.append(
            LEFT_FOR_NEXT_RUN.at(
                f"{data.left_for_next_run} more pod(s) over max_pods {params.max_pods}, left for the next run"
            )
        )
    if notes:
        return Result.degraded(NAME, f"{done}; {len(notes)} note(s)", notes, details)
    return Result.ok(NAME, done, details)


CHECK = CheckSpec(
    name=NAME,
    system="kwok",
    layer="job",
    severity="warning",
    schedule_minutes=5,
    fails_when=FAILS_WHEN,
    params=KwokPodReconcilerParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
    writes=True,
    opt_in=True,
)
