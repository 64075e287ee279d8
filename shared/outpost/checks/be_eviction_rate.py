"""be-eviction-rate: is Koordinator evicting best-effort (BE) pods faster than allowed?

koordlet reports each eviction as a Warning Event `evictPodSuccess` on the pod (docs/contracts.md "Koordinator").
Those Events, filtered on the server, count when last seen within `window_seconds`: more than `max_evictions`
fails, any is `degraded`. The window must be shorter than the event TTL (`event_ttl_seconds`, 1 h upstream),
since older Events are deleted and would be undercounted. Both Event APIs map onto one view, "last seen" being the
first time field set (writers fill different ones); an Event with `count` N is N evictions; a future one is
inside the window. Only BE pods count, but an evicted pod is usually gone, so an unresolvable one counts unless
`count_unresolved_pods` is false. `details.by_reason` groups them by koordlet's reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Self

from pydantic import Field, model_validator

from outpost.check import CheckSpec, Params
from outpost.cluster import Cluster
from outpost.kube import (
    EVENTS,
    EVENTS_K8S_IO,
    PODS,
    Event,
    KubeObject,
    access,
    collection_path,
    core_event_shape,
    object_path,
    parse,
    parse_items,
)
from outpost.result import Finding, Result
from outpost.runbook import Runbook

NAME = "be-eviction-rate"
FAILS_WHEN = "more evictPodSuccess events in the window than allowed"
# koord-manager's ConfigMap (koordinator-sh/charts v1.6.0): its resource-threshold-config holds the eviction
# thresholds koordlet applies (memoryEvictThresholdPercent, cpuEvictBESatisfaction*).
THRESHOLDS = "kubectl -n koordinator-system get configmap slo-controller-config -o yaml"
EVICTIONS_ABOVE_LIMIT = Runbook(
    "evictions-above-limit",
    "koordlet evicts best-effort pods faster than allowed",
    "LS pods' usage grew on the nodes named below (memory above memoryEvictThresholdPercent, or BE CPU satisfaction "
    "below cpuEvictBESatisfactionLowerPercent), or more batch (BE) pods are scheduled than the nodes' spare "
    "resources hold; the Events' reasons say which",
    "kubectl get events {scope} --field-selector reason={reason} --sort-by=.lastTimestamp",
    THRESHOLDS,
)
POD_EVICTED = Runbook(
    "pod-evicted",
    "koordlet evicted a best-effort pod",
    "the node of the pod ran short of the resource the reason names (memory, or CPU for BE pods) because of LS "
    "pods' usage; one eviction is the QoS working, many are a node or a batch workload sized wrong",
    "kubectl -n {namespace} get events --field-selector involvedObject.name={pod},reason={reason} -o wide",
    THRESHOLDS,
)
MORE_EVICTIONS = Runbook(
    "more-evictions",
    "More eviction Events than the ones named",
    "as for the evictions named before this line: many BE pods evicted at once, usually from the same nodes",
    "kubectl get events {scope} --field-selector reason={reason} --sort-by=.lastTimestamp",
    THRESHOLDS,
)

RUNBOOKS = (EVICTIONS_ABOVE_LIMIT, POD_EVICTED, MORE_EVICTIONS)

_MESSAGE = re.compile(r"evict Pod:\s*(?P<pod>[^,\s]+)\s*,\s*reason:\s*(?P<reason>[^,]+)")
LISTED = 10


class BeEvictionRateParams(Params):
    window_seconds: int = Field(1800, ge=60, description="Count evictions whose last occurrence is this recent.")
    event_ttl_seconds: int = Field(3600, ge=60, description="The API server's --event-ttl (upstream default 1 h).")
    max_evictions: int = Field(5, ge=0, description="Evictions allowed in the window; more fail the check.")
    reason: str = Field("evictPodSuccess", min_length=1, description="Event reason koordlet gives an eviction.")
    qos_label: str = Field("koordinator.sh/qosClass", min_length=1, description="Pod label holding its QoS class.")
    qos_value: str = Field("BE", min_length=1, description="The QoS class whose evictions count (best-effort).")
    namespace: str | None = Field(None, description="Only Events in this namespace; default: every namespace.")
    api: Literal["core/v1", "events.k8s.io/v1"] = Field("core/v1", description="Which Events API to read.")
    count_unresolved_pods: bool = Field(
        True, description="Count evictions of pods that no longer exist (their QoS cannot be read any more)."
    )
    max_pod_lookups: int = Field(
        200,
        ge=0,
        le=2000,
        description="Pods looked up by name to read their QoS; beyond that they count as unresolved.",
    )
    reason_groups: dict[str, list[str]] = Field(
        default_factory=lambda: {"memory": ["memory"], "cpu": ["cpu"]},
        description="Group name -> substrings (case-insensitive) of koordlet's reason; no match is 'other'.",
    )

    @model_validator(mode="after")
    def _window_within_ttl(self) -> Self:
        if self.window_seconds >= self.event_ttl_seconds:
            raise ValueError(
                f"window_seconds ({self.window_seconds}) must be shorter than event_ttl_seconds "
                f"({self.event_ttl_seconds}): Events older than the TTL are deleted, so a longer "
                "window would undercount"
            )
        return self


@dataclass(frozen=True)
class PodQos:
    """What we know of an evicted pod: its QoS label value, or None when the pod no longer exists."""

    namespace: str
    name: str
    qos: str | None


@dataclass(frozen=True)
class BeEvictionData:
    path: str
    events: list[Event]
    pods: dict[tuple[str, str], PodQos]
    """(namespace, name) -> what the pod's labels say, for every pod an Event names that we looked up."""
    lookups_skipped: int = 0


def _events_path(params: BeEvictionRateParams) -> str:
    kind = EVENTS if params.api == "core/v1" else EVENTS_K8S_IO
    return collection_path(kind, params.namespace)


def fetch(cluster: Cluster, params: BeEvictionRateParams) -> BeEvictionData:
    path = _events_path(params)
    raw = cluster.list(path, field_selector=f"reason={params.reason}")
    events = parse_items(
        Event, (core_event_shape(item) if isinstance(item, dict) else item for item in raw), f"LIST {path}"
    )
    # Which pods do the Events name? Their labels say whether they are BE, if they still exist.
    wanted = sorted(
        {
            (e.involved_object.namespace or e.namespace, e.involved_object.name)
            for e in events
            if e.involved_object.kind == "Pod" and e.involved_object.name
        }
    )
    pods: dict[tuple[str, str], PodQos] = {}
    for namespace, name in wanted[: params.max_pod_lookups]:
        pod_path = object_path(PODS, name, namespace)
        found = cluster.get_object(pod_path)
        if found is None:
            pods[(namespace, name)] = PodQos(namespace, name, None)
            continue
        pod = parse(KubeObject, found, f"GET {pod_path}")
        pods[(namespace, name)] = PodQos(namespace, name, pod.metadata.labels.get(params.qos_label, ""))
    return BeEvictionData(
        path=path, events=events, pods=pods, lookups_skipped=max(0, len(wanted) - params.max_pod_lookups)
    )


def declared_access(params: BeEvictionRateParams) -> list[access.Access]:
    """The Events (LIST, by reason) and every pod they name (GET; any name, so in every namespace read)."""
    kind = EVENTS if params.api == "core/v1" else EVENTS_K8S_IO
    needed: list[access.Access] = [access.list_(kind, params.namespace)]
    if params.max_pod_lookups > 0:
        # An Event names pods of its own namespace: with `namespace` set, that namespace only.
        needed.append(access.get(PODS, None, params.namespace, when="an eviction Event names a pod"))
    return needed


def koordlet_reason(message: str) -> str:
    """`evictPodByBECPUSatisfaction` from `evict Pod:ns/name, reason: evictPodByBECPUSatisfaction, ...`."""
    match = _MESSAGE.search(message)
    return match["reason"].strip() if match else ""


def reason_group(reason: str, groups: dict[str, list[str]]) -> str:
    lowered = reason.lower()
    for group, needles in groups.items():
        if any(needle.lower() in lowered for needle in needles):
            return group
    return "other"


def evaluate(data: BeEvictionData, params: BeEvictionRateParams, now: datetime) -> Result:
    by_reason: dict[str, int] = {}
    counted: list[tuple[Finding, int, str]] = []  # (line, occurrences, group)
    unresolved = 0
    not_be = 0
    outside = 0
    for event in sorted(data.events, key=lambda e: (e.namespace, e.name)):
        subject = event.involved_object
        if subject.kind != "Pod" or event.reason != params.reason:
            continue
        seen = event.last_seen
        if seen is not None and (now - seen).total_seconds() > params.window_seconds:
            outside += 1
            continue
        namespace = subject.namespace or event.namespace
        pod = data.pods.get((namespace, subject.name))
        qos = pod.qos if pod is not None else None
        if qos is None:
            if not params.count_unresolved_pods:
                continue
            unresolved += 1
        elif qos != params.qos_value:
            not_be += 1
            continue
        reason = koordlet_reason(event.message) or "(reason not in message)"
        group = reason_group(reason, params.reason_groups)
        occurrences = event.occurrences
        by_reason[group] = by_reason.get(group, 0) + occurrences
        when = seen.isoformat() if seen is not None else "undated"
        times = f" x{occurrences}" if occurrences > 1 else ""
        line = f"pod {namespace}/{subject.name}: evicted{times} ({reason}) at {when}"
        finding = POD_EVICTED.at(line, namespace=namespace, pod=subject.name, reason=params.reason)
        counted.append((finding, occurrences, group))
    total = sum(n for _, n, _ in counted)
    details: dict[str, Any] = {
        "path": data.path,
        "window_seconds": params.window_seconds,
        "evictions": total,
        "max_evictions": params.max_evictions,
        "by_reason": dict(sorted(by_reason.items())),
        "events_in_window": len(counted),
        "events_outside_window": outside,
        "unresolved_pods": unresolved,
        "not_best_effort": not_be,
        "pod_lookups_skipped": data.lookups_skipped,
    }
    scope = {"scope": f"-n {params.namespace}" if params.namespace else "-A", "reason": params.reason}
    lines = [line for line, _, _ in counted]
    more = MORE_EVICTIONS.at(f"... and {len(lines) - LISTED} more eviction Events", **scope)
    listed = lines[:LISTED] + ([more] if len(lines) > LISTED else [])
    grouped = ", ".join(f"{group} {count}" for group, count in sorted(by_reason.items()))
    window = f"{params.window_seconds // 60} min" if params.window_seconds % 60 == 0 else f"{params.window_seconds} s"
    if total > params.max_evictions:
        head = (
            f"{params.qos_value} pods: observed {total} {params.reason} in the last {window} "
            f"(want at most {params.max_evictions}): {grouped}"
        )
        return Result.failed(NAME, head, [EVICTIONS_ABOVE_LIMIT.at(head, **scope), *listed], details)
    if total:
        summary = (
            f"{total} {params.qos_value} eviction(s) in the last {window} "
            f"(at most {params.max_evictions} allowed): {grouped}"
        )
        return Result.degraded(NAME, summary, listed, details)
    return Result.ok(NAME, f"no {params.qos_value} evictions in the last {window}", details)


CHECK = CheckSpec(
    name=NAME,
    system="koordinator",
    layer="workload SLO",
    severity="warning",
    schedule_minutes=5,
    fails_when=FAILS_WHEN,
    params=BeEvictionRateParams,
    fetch=fetch,
    evaluate=evaluate,
    access=declared_access,
    runbooks=RUNBOOKS,
)
