"""Koordinator and OpenKruise object faults: stale NodeMetrics, CPU utilization, PodGroups failed or
stuck, eviction Events, webhook configurations deleted, a manager scaled to zero, a stale leader
Lease.

Guarantees: apply changes only the objects it records in its undo; heal restores them from the
record or from the installed manifests, and waits until they are healthy again.
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
from typing import Any

from outpost.kube.paths import (
    DEPLOYMENTS,
    EVENTS,
    LEASES,
    MUTATING_WEBHOOKS,
    POD_GROUPS,
    VALIDATING_WEBHOOKS,
    object_path,
)
from outpost_sandbox import systems
from outpost_sandbox.backends.behaviour import (
    DEFAULT_CPU_RATIO,
    cpu_usage_millis,
    read_behaviour,
    write_behaviour,
)
from outpost_sandbox.faults.base import (
    FAULT_PREFIX,
    LEADER_LEASES,
    MANAGERS,
    WEBHOOK_CONFIGS,
    Apply,
    FaultContext,
    FaultError,
    Heal,
    age_seconds,
    node_target,
    required_target,
    rfc3339,
    utc_now,
    wait_for,
)


# ---- Koordinator objects -------------------------------------------------------------------------
def nodemetric_stale_apply(ctx: FaultContext) -> dict[str, Any]:
    node = node_target(ctx)
    data = read_behaviour(ctx.sdir)
    data["stale_nodemetrics"] = sorted(set(data.get("stale_nodemetrics") or []) | {node})
    write_behaviour(ctx.sdir, data)
    time.sleep(0.5)  # let a refresh already in flight finish before we backdate
    ctx.kube.apply({"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                    "metadata": {"name": node},
                    "status": {"updateTime": rfc3339(utc_now() - dt.timedelta(seconds=600))}}, "status")
    return {"node": node}


def _nodemetric_age(ctx: FaultContext, node: str) -> float:
    nm = ctx.kube.get(f"/apis/slo.koordinator.sh/v1alpha1/nodemetrics/{node}")
    return age_seconds(nm["status"]["updateTime"])


def nodemetric_stale_heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
    node = undo["node"]
    data = read_behaviour(ctx.sdir)
    data["stale_nodemetrics"] = [n for n in data.get("stale_nodemetrics") or [] if n != node]
    write_behaviour(ctx.sdir, data)
    wait_for(f"nodemetric {node} refreshed", 30, lambda: _nodemetric_age(ctx, node) < 60)


def _nodemetrics_report(ctx: FaultContext, ratio: float) -> bool:
    """True once every node's NodeMetric reports the usage the daemon derives from `ratio`."""
    stale = set(read_behaviour(ctx.sdir).get("stale_nodemetrics") or [])
    nodes = {n["metadata"]["name"]: n for n in ctx.kube.get("/api/v1/nodes")["items"]}
    metrics = {m["metadata"]["name"]: m for m in ctx.kube.get("/apis/slo.koordinator.sh/v1alpha1/nodemetrics")["items"]}
    for name, node in nodes.items():
        if name in stale:
            continue
        want = f"{cpu_usage_millis(str(node['status'].get('allocatable', {}).get('cpu', '1')), ratio)}m"
        usage = (((metrics.get(name) or {}).get("status") or {}).get("nodeMetric") or {}).get("nodeUsage") or {}
        if (usage.get("resources") or {}).get("cpu") != want:
            return False
    return True


def utilization_fault(ratio: float) -> tuple[Apply, Heal]:
    def set_ratio(ctx: FaultContext, value: float) -> None:
        data = read_behaviour(ctx.sdir)
        data["cpu_ratio"] = value
        write_behaviour(ctx.sdir, data)
        wait_for(f"every NodeMetric reporting {value:.0%} CPU", 60, lambda: _nodemetrics_report(ctx, value))

    def apply(ctx: FaultContext) -> dict[str, Any]:
        set_ratio(ctx, ratio)
        return {}

    def heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
        set_ratio(ctx, DEFAULT_CPU_RATIO)

    return apply, heal


def podgroup_fault(phase: str) -> tuple[Apply, Heal]:
    name = f"{FAULT_PREFIX}-{phase.lower()}-gang"

    def apply(ctx: FaultContext) -> dict[str, Any]:
        k = ctx.kube
        k.apply({"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": {"name": name, "namespace": "default"},
                 "spec": {"minMember": 3, "scheduleTimeoutSeconds": 60}})
        start = rfc3339(utc_now() - dt.timedelta(hours=1))
        if phase == "Pending":
            # The gang's members really cannot schedule: they ask for a node that does not exist.
            k.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": name, "namespace": "default"},
                     "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                              "template": {"metadata": {"labels": {
                                  "app": name, "pod-group.scheduling.sigs.k8s.io": name,
                                  "koordinator.sh/qosClass": "BE"}},
                                  "spec": {"nodeSelector": {"outpost.sandbox/no-such-node": "true"},
                                           "containers": [{"name": "w", "image": "library/busybox:1.36"}]}}}})
            systems.set_podgroup_phase(k, "default", name, "Pending", schedule_start=start)
        else:
            k.apply({"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "default"},
                     "status": {"phase": "Failed", "failed": 3, "scheduleStartTime": start}}, "status")
        return {"name": name}

    def heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
        ctx.kube.delete(object_path(DEPLOYMENTS, undo["name"], "default"))
        ctx.kube.delete(object_path(POD_GROUPS, undo["name"], "default"))

    return apply, heal


def evictions_apply(ctx: FaultContext) -> dict[str, Any]:
    count = int(ctx.options.get("count") or 10)
    pods = ctx.kube.get("/api/v1/namespaces/default/pods", labelSelector="koordinator.sh/qosClass=BE,app=be-batch")
    if not pods["items"]:
        raise FaultError("deployment default/be-batch has no pods to attribute evictions to")
    names = []
    now = utc_now()
    for i in range(count):
        pod = pods["items"][i % len(pods["items"])]
        meta = pod["metadata"]
        name = f"{FAULT_PREFIX}-evict-{secrets.token_hex(4)}"
        ctx.kube.create("/api/v1/namespaces/default/events", {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": meta["namespace"],
                               "name": meta["name"], "uid": meta["uid"]},
            "type": "Warning", "reason": "evictPodSuccess",
            "message": f"evict Pod:{meta['namespace']}/{meta['name']}, reason: evictPodByBECPUSatisfaction, "
                       "message: BE pods suppressed for LS latency",
            "source": {"component": "koordlet", "host": pod["spec"].get("nodeName", "")},
            "reportingComponent": "koordlet", "reportingInstance": pod["spec"].get("nodeName", ""),
            "firstTimestamp": rfc3339(now), "lastTimestamp": rfc3339(now), "count": 1})
        names.append(name)
    return {"events": names}


def evictions_heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
    for name in undo["events"]:
        ctx.kube.delete(object_path(EVENTS, name, "default"))


def manifest_docs(ctx: FaultContext) -> list[dict[str, Any]]:
    return systems.load_manifests(systems.template_values(ctx.sdir))


def webhook_deleted_apply(ctx: FaultContext) -> dict[str, Any]:
    system = required_target(ctx, sorted(WEBHOOK_CONFIGS), "system")
    mut, val = WEBHOOK_CONFIGS[system]
    ctx.kube.delete(object_path(MUTATING_WEBHOOKS, mut))
    ctx.kube.delete(object_path(VALIDATING_WEBHOOKS, val))
    return {"system": system}


def webhook_deleted_heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
    names = set(WEBHOOK_CONFIGS[undo["system"]])
    for doc in manifest_docs(ctx):
        if doc["metadata"]["name"] in names:
            ctx.kube.apply(doc)


def scaled_to_zero_apply(ctx: FaultContext) -> dict[str, Any]:
    name = required_target(ctx, sorted(MANAGERS), "deployment")
    ns = MANAGERS[name]
    ctx.kube.merge_patch(object_path(DEPLOYMENTS, name, ns), {"spec": {"replicas": 0}})
    wait_for(f"deployment {ns}/{name} to have no pods", 60, lambda: not ctx.kube.get(
        f"/api/v1/namespaces/{ns}/pods",
        labelSelector="koord-app=koord-manager" if name == "koord-manager"
        else "control-plane=controller-manager")["items"])
    return {"name": name}


def scaled_to_zero_heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
    name = undo["name"]
    ns = MANAGERS[name]
    ctx.kube.merge_patch(object_path(DEPLOYMENTS, name, ns),
                         {"spec": {"replicas": systems.DEFAULT_REPLICAS[name]}})
    wait_for(f"deployment {ns}/{name} ready", 90, lambda: systems.deployment_ready(ctx.kube, ns, name))


def leader_lease_apply(ctx: FaultContext) -> dict[str, Any]:
    name = required_target(ctx, sorted(LEADER_LEASES), "leader lease")
    data = read_behaviour(ctx.sdir)
    data["stale_leases"] = sorted(set(data.get("stale_leases") or []) | {name})
    write_behaviour(ctx.sdir, data)
    time.sleep(0.5)
    ctx.kube.merge_patch(object_path(LEASES, name, LEADER_LEASES[name]),
                         {"spec": {"renewTime": rfc3339(utc_now() - dt.timedelta(seconds=120), micro=True)}})
    return {"name": name}


def leader_lease_heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
    name = undo["name"]
    data = read_behaviour(ctx.sdir)
    data["stale_leases"] = [n for n in data.get("stale_leases") or [] if n != name]
    write_behaviour(ctx.sdir, data)

    def fresh() -> bool:
        lease = ctx.kube.get(object_path(LEASES, name, LEADER_LEASES[name]))
        return age_seconds(lease["spec"]["renewTime"]) < 15

    wait_for(f"lease {LEADER_LEASES[name]}/{name} renewed", 30, fresh)
