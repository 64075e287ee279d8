"""Koordinator and OpenKruise object faults: stale NodeMetrics, CPU utilization, PodGroups failed or
stuck, eviction Events, a manager scaled to zero.

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
    POD_GROUPS,
    PODS,
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
    Apply,
    FaultContext,
    FaultError,
    Heal,
    backdate_nodemetric,
    node_target,
    nodemetric_age,
    required_target,
    rfc3339,
    utc_now,
    wait_for,
)
from outpost_sandbox.kubelet.daemon import has_own_kubelet


# ---- Koordinator objects -------------------------------------------------------------------------
def nodemetric_stale_apply(ctx: FaultContext) -> dict[str, Any]:
    node = node_target(ctx)
    data = read_behaviour(ctx.sdir)
    data["stale_nodemetrics"] = sorted(set(data.get("stale_nodemetrics") or []) | {node})
    write_behaviour(ctx.sdir, data)
    time.sleep(0.5)  # let a refresh already in flight finish before we backdate
    backdate_nodemetric(ctx, node, 600)
    return {"node": node}


def nodemetric_stale_heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
    node = undo["node"]
    data = read_behaviour(ctx.sdir)
    data["stale_nodemetrics"] = [n for n in data.get("stale_nodemetrics") or [] if n != node]
    write_behaviour(ctx.sdir, data)
    wait_for(f"nodemetric {node} refreshed", 30, lambda: nodemetric_age(ctx, node) < 60)


def _nodemetrics_report(ctx: FaultContext, ratio: float) -> bool:
    """True once every KWOK node's NodeMetric reports the usage the daemon derives from `ratio` (the process node's
    real koordlet reports this machine's own usage, which no behaviour steers)."""
    stale = set(read_behaviour(ctx.sdir).get("stale_nodemetrics") or [])
    nodes = {n["metadata"]["name"]: n for n in ctx.kube.get("/api/v1/nodes")["items"]}
    nodes = {name: n for name, n in nodes.items() if not has_own_kubelet(n)}
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


def _gang_pod(name: str, index: int, gang: str, node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "koord-scheduler",
        "restartPolicy": "Never",
        "tolerations": [{"key": "kwok-controller/provider", "operator": "Exists"}],
        "nodeSelector": node_selector or {"type": "kwok"},
        "containers": [
            {"name": "w", "image": "library/busybox:1.36", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
        ],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{index}",
            "namespace": "default",
            "labels": {systems.GANG_LABEL: gang, "app": name},
        },
        "spec": spec,
    }


def _scheduled_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"), None)


def podgroup_fault(phase: str) -> tuple[Apply, Heal]:
    """A gang the real koord-scheduler handles: stuck (members that cannot be placed) or failed (a member failed).

    Stuck: 3 members ask for a node that does not exist; koord-scheduler marks each PodScheduled=False,
    Unschedulable, and the PodGroup Scheduling. The wait starts at that condition's lastTransitionTime, which
    kube-scheduler keeps while the pod stays unschedulable, so it is moved an hour back: the only way for the first
    run after `break` to meet a gang stuck longer than koord's 600 s wait without waiting 10 minutes.
    Failed: 3 members run, then one fails. koord-scheduler v1.6.0 drops a terminated pod from its gang cache before
    its PodGroup controller counts it (coscheduling/core/gang_cache.go onPodDelete), so the PodGroup keeps its last
    status (Running, running 3) until the scheduler restarts, then reads Scheduling with running 2; it reaches
    Failed only when the failed member is still cached. What shows the failure at once is the member pod itself.
    """
    name = f"{FAULT_PREFIX}-{phase.lower()}-gang"
    stuck = phase == "Pending"

    def pods(ctx: FaultContext) -> list[dict[str, Any]]:
        return list(ctx.kube.get("/api/v1/namespaces/default/pods", labelSelector=f"app={name}")["items"])

    def group(ctx: FaultContext) -> dict[str, Any]:
        found: dict[str, Any] = ctx.kube.get(object_path(POD_GROUPS, name, "default"))
        return found

    def apply(ctx: FaultContext) -> dict[str, Any]:
        try:
            return staged(ctx)
        except Exception:
            heal(ctx, {"name": name})  # nothing half-made stays behind a break that failed
            raise

    def staged(ctx: FaultContext) -> dict[str, Any]:
        k = ctx.kube
        selector = {"outpost.sandbox/no-such-node": "true"} if stuck else None
        # Members first, then their PodGroup: koord-scheduler holds a member back while its gang has fewer pods
        # than minMember and reconsiders held members when a PodGroup is added or updated, not when a sibling is
        # (and the waits below requeue the gang should the last member still be held: systems.requeue_gang).
        for i in range(3):
            k.apply(_gang_pod(name, i, name, selector))
        k.apply(
            {
                "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"minMember": 3},
            }
        )
        if stuck:

            def unschedulable() -> bool:
                conditions = [_scheduled_condition(p) for p in pods(ctx)]
                return len(conditions) == 3 and all(
                    c is not None and c.get("reason") == "Unschedulable" for c in conditions
                )

            wait_for(
                f"koord-scheduler to find the members of {name} unschedulable",
                60,
                systems.requeuing(k, "default", name, unschedulable),
            )
            hour_ago = rfc3339(utc_now() - dt.timedelta(hours=1))
            for pod in pods(ctx):
                condition = dict(_scheduled_condition(pod) or {}, lastTransitionTime=hour_ago)
                others = [c for c in pod["status"].get("conditions") or [] if c.get("type") != "PodScheduled"]
                k.merge_patch(
                    object_path(PODS, pod["metadata"]["name"], "default") + "/status",
                    {"status": {"conditions": [*others, condition]}},
                )
        else:
            wait_for(
                f"koord-scheduler to report {name} Running",
                60,
                systems.requeuing(
                    k, "default", name, lambda: (group(ctx).get("status") or {}).get("phase") == "Running"
                ),
            )
            failed = pods(ctx)[0]
            now = rfc3339(utc_now())
            k.merge_patch(
                object_path(PODS, failed["metadata"]["name"], "default") + "/status",
                {
                    "status": {
                        "phase": "Failed",
                        "containerStatuses": [
                            {
                                "name": "w",
                                "image": "library/busybox:1.36",
                                "imageID": "",
                                "ready": False,
                                "restartCount": 0,
                                "started": False,
                                "state": {
                                    "terminated": {
                                        "exitCode": 1,
                                        "reason": "Error",
                                        "startedAt": now,
                                        "finishedAt": now,
                                    }
                                },
                            }
                        ],
                    }
                },
            )
        return {"name": name}

    def heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
        for pod in pods(ctx):
            ctx.kube.delete(object_path(PODS, pod["metadata"]["name"], "default"), {"gracePeriodSeconds": "0"})
        ctx.kube.delete(object_path(POD_GROUPS, undo["name"], "default"))
        wait_for(f"the members of {undo['name']} gone", 60, lambda: not pods(ctx))

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
        ctx.kube.create(
            "/api/v1/namespaces/default/events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": "default"},
                "involvedObject": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "type": "Warning",
                "reason": "evictPodSuccess",
                "message": f"evict Pod:{meta['namespace']}/{meta['name']}, reason: evictPodByBECPUSatisfaction, "
                "message: BE pods suppressed for LS latency",
                "source": {"component": "koordlet", "host": pod["spec"].get("nodeName", "")},
                "reportingComponent": "koordlet",
                "reportingInstance": pod["spec"].get("nodeName", ""),
                "firstTimestamp": rfc3339(now),
                "lastTimestamp": rfc3339(now),
                "count": 1,
            },
        )
        names.append(name)
    return {"events": names}


def evictions_heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
    for name in undo["events"]:
        ctx.kube.delete(object_path(EVENTS, name, "default"))


def scaled_to_zero_apply(ctx: FaultContext) -> dict[str, Any]:
    """The manager Deployment scaled to 0: its pods are deleted and the process node's kubelet stops each manager."""
    name = required_target(ctx, sorted(systems.MANAGERS), "deployment")
    ns, selector, _lease = systems.MANAGERS[name]
    ctx.kube.merge_patch(object_path(DEPLOYMENTS, name, ns), {"spec": {"replicas": 0}})
    wait_for(
        f"deployment {ns}/{name} to have no pods",
        60,
        lambda: not ctx.kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=selector)["items"],
    )
    return {"name": name}


def scaled_to_zero_heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
    name = undo["name"]
    ns = systems.MANAGERS[name][0]
    ctx.kube.merge_patch(
        object_path(DEPLOYMENTS, name, ns), {"spec": {"replicas": systems.upstream_replicas(ctx.state_dir, name)}}
    )
    systems.wait_managers(ctx.kube, 180)
