"""kwok-pod-reconciler: the KWOK tutorial's reconcile job, done safely. A job, run like a check.

The tutorial's script patches EVERY Pending pod of the cluster to Running, with admin rights, and pings
its heartbeat whatever happened. This job advances only what KWOK itself would have advanced, and pings
only when the run completed:

- opt-in (`CheckSpec.opt_in`): it does nothing unless the configuration enables it;
- it writes under an identity of its own (the check's `cluster_auth`; the sandbox's `outpost-reconciler`),
  whose RBAC is exactly what it declares: list nodes, list pods, patch pods/status (`outpost.rbac`);
- it moves only pods that are `Pending`, not being deleted, bound (`spec.nodeName` set) to a node the
  fake-node selector selects (annotation `kwok.x-k8s.io/node=fake` by default), and Pending for at least
  `min_pending_seconds` (a healthy kwok moves a pod within seconds; the job must not race it). Never a pod
  on any other node, never an unbound pod;
- each write is a merge patch of the pod's `status` subresource, `{"status": {"phase": "Running"}}`,
  carrying the pod's `metadata.resourceVersion` as a precondition: a pod that changed since it was listed
  (kwok came back, it was recreated) gets a 409 and is left alone for the next run; a pod gone meanwhile
  (404) is skipped. The API server's answer is checked (phase Running, same node) before a pod counts as
  moved. A second run finds nothing to do (idempotent);
- at most `max_pods` pods per run (the rest are counted in `details.left_for_next_run`);
- `dry_run`: the same patches with `dryRun=All` (admitted, validated, authorised, persisted nowhere);
- a write that fails otherwise (403, 422, 5xx, timeout, deadline) stops the run: the result is `error`
  naming the pod and the cause, with the pods already moved listed in `details` (no ping).

The result says how many pods were moved and names them (`details.moved`, the summary's first few).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from outpost.checks.base import CheckSpec, Params
from outpost.cluster import Cluster, ClusterWriter
from outpost.errors import ClusterError, ClusterResponseError
from outpost.kube import (
    NODES,
    PODS,
    MetadataSelector,
    ObjectMeta,
    Pod,
    access,
    age_seconds,
    collection_path,
    find_condition,
    object_path,
    parse,
    parse_items,
)
from outpost.result import Result, Status

NAME = "kwok-pod-reconciler"
NAMED_IN_SUMMARY = 5


class KwokPodReconcilerParams(Params):
    fake_node_source: Literal["label", "annotation"] = Field(
        "annotation", description="Select fake nodes by an annotation (upstream) or a label (e.g. type=kwok).")
    fake_node_key: str = Field("kwok.x-k8s.io/node", min_length=1)
    fake_node_value: str | None = Field("fake", description="Required value; null selects on the key alone.")
    namespaces: list[str] = Field(default_factory=list, description="Only pods in these namespaces; default: all.")
    max_pods: int = Field(50, ge=1, le=1000, description="Pods moved per run at most.")
    min_pending_seconds: int = Field(
        60, ge=0, le=86400, description="Leave pods Pending for less than this to kwok (no race with it).")
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
    left_for_next_run: int = 0
    failure: str | None = None


def pending_since(pod: Pod) -> datetime | None:
    """When the pod was bound (PodScheduled True), else created: how long it has waited for its node."""
    scheduled = find_condition(pod.status.conditions, "PodScheduled")
    if scheduled is not None and scheduled.true and scheduled.last_transition_time is not None:
        return scheduled.last_transition_time
    return pod.metadata.creation_timestamp


def fetch(cluster: Cluster, params: KwokPodReconcilerParams) -> ReconcileData:
    if not isinstance(cluster, ClusterWriter):
        raise ClusterError(f"{NAME}: needs a write client; the runner gave a read-only one")
    selector = params.fake_nodes
    nodes_path = collection_path(NODES)
    node_items = cluster.list(nodes_path, label_selector=selector.label_query(), metadata_only=True)
    metas = [parse(ObjectMeta, item.get("metadata") if isinstance(item, dict) else None, f"LIST {nodes_path}")
             for item in node_items]
    fake = {meta.name for meta in metas if selector.matches(meta.labels, meta.annotations)}
    pods: list[Pod] = []
    scopes: list[str | None] = list(params.namespaces) or [None]
    for namespace in scopes:
        path = collection_path(PODS, namespace)
        pods += parse_items(Pod, cluster.list(path, field_selector="status.phase=Pending"), f"LIST {path}")
    data = ReconcileData(fake_nodes=len(fake), pending_seen=len(pods), dry_run=params.dry_run)
    now = datetime.now(UTC)
    candidates: list[Pod] = []
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        if pod.status.phase != "Pending" or pod.terminating:
            continue  # the server filtered on phase; judge again rather than trust it
        if not pod.node_name:
            data.unbound += 1
        elif pod.node_name not in fake:
            data.not_on_fake_nodes += 1
        elif (age_seconds(pending_since(pod), now) or 0.0) < params.min_pending_seconds:
            data.too_recent += 1
        else:
            candidates.append(pod)
    data.left_for_next_run = max(0, len(candidates) - params.max_pods)
    for pod in candidates[:params.max_pods]:
        who = f"{pod.namespace}/{pod.name}"
        path = object_path(PODS, pod.name, pod.namespace, "status")
        patch: dict[str, Any] = {"metadata": {"resourceVersion": pod.metadata.resource_version},
                                 "status": {"phase": "Running"}}
        try:
            answer = cluster.merge_patch(path, patch, dry_run=params.dry_run)
        except ClusterResponseError as error:
            if error.status_code == 404:
                data.skipped.append(Skipped(who, "gone before it was patched"))
                continue
            if error.status_code == 409:
                data.skipped.append(Skipped(who, "changed since it was listed (left for the next run)"))
                continue
            data.failure = f"pod {who}: patching status to Running failed: {error}"
            break
        except ClusterError as error:
            data.failure = f"pod {who}: patching status to Running failed: {error}"
            break
        after = parse(Pod, answer, f"PATCH {path}")
        if after.status.phase != "Running" or after.node_name != pod.node_name:
            data.failure = (f"pod {who}: the API server answered phase {after.status.phase or '(none)'} on node "
                            f"{after.node_name or '(none)'} (want Running on {pod.node_name})")
            break
        data.moved.append(who)
    return data


def declared_access(params: KwokPodReconcilerParams) -> list[access.Access]:
    """Under its own write identity: LIST nodes and Pending pods, PATCH pods/status (nothing else)."""
    scopes: list[str | None] = list(params.namespaces) or [None]
    needed: list[access.Access] = [access.list_(NODES)]
    needed += [access.list_(PODS, namespace) for namespace in scopes]
    needed += [access.patch(PODS, "status", namespace, when="a Pending pod on a fake node is due")
               for namespace in scopes]
    return needed


def evaluate(data: ReconcileData, params: KwokPodReconcilerParams, now: datetime) -> Result:
    verb = "would move" if data.dry_run else "moved"
    details: dict[str, Any] = {
        "dry_run": data.dry_run,
        "moved_count": len(data.moved),
        "moved": list(data.moved),
        "fake_nodes": data.fake_nodes,
        "pending_seen": data.pending_seen,
        "left_alone": {"not_on_fake_nodes": data.not_on_fake_nodes, "unbound": data.unbound,
                       "pending_less_than_min": data.too_recent},
        "skipped": [{"pod": s.pod, "why": s.why} for s in data.skipped],
        "left_for_next_run": data.left_for_next_run,
        "fake_node_selector": str(params.fake_nodes),
    }
    named = ", ".join(data.moved[:NAMED_IN_SUMMARY]) + (
        f" and {len(data.moved) - NAMED_IN_SUMMARY} more" if len(data.moved) > NAMED_IN_SUMMARY else "")
    done = f"{verb} {len(data.moved)} Pending pod(s) on fake nodes to Running" + (f": {named}" if named else "")
    if data.failure is not None:
        return Result(check=NAME, status=Status.ERROR, summary=f"{data.failure} (after {verb} {len(data.moved)})",
                      errors=[data.failure], details=details)
    if data.fake_nodes == 0:
        why = f"no node selected by {params.fake_nodes}: nothing to reconcile, and the selector may be wrong"
        return Result.error(NAME, f"{NAME}: {why}", **details)
    notes = [f"pod {s.pod}: {s.why}" for s in data.skipped]
    if data.left_for_next_run:
        notes.append(f"{data.left_for_next_run} more pod(s) over max_pods {params.max_pods}, left for the next run")
    if notes:
        return Result(check=NAME, status=Status.DEGRADED, summary=f"{done}; {len(notes)} note(s)", errors=notes,
                      details=details)
    return Result(check=NAME, status=Status.OK, summary=done, details=details)


CHECK = CheckSpec(
    name=NAME,
    system="kwok",
    layer="job",
    severity="warning",
    schedule_minutes=5,
    fails_when="the run could not complete (a write refused or failed); never moves pods off fake nodes",
    params=KwokPodReconcilerParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    writes=True,
    opt_in=True,
)
