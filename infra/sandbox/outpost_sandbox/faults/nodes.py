"""Node faults: a DaemonSet's pod missing from one node (the real controller takes it off), a node
Lease kwok stops renewing; and the shared recovery after a node or control-plane outage.

The process node's real koordlet and kruise-daemon are killed (held in CrashLoopBackOff) or frozen (SIGSTOP) by
its kubelet, as the managers are.

Guarantees: apply returns once the outcome is observable through the API server; heal returns
once the nodes are Ready and the extension systems' pods are ready again.
"""

from __future__ import annotations

import time
from typing import Any

from outpost.kube.objects import Node, parse
from outpost.kube.paths import LEASES, NODES, object_path
from outpost_sandbox import systems
from outpost_sandbox.backends.kube import Kube, SandboxApiError
from outpost_sandbox.faults.base import (
    Apply,
    FaultContext,
    FaultError,
    Heal,
    age_seconds,
    backdate_nodemetric,
    fake_nodes,
    hold_on_process_node,
    node_target,
    nodemetric_age,
    pod_process_state,
    pod_ready,
    rfc3339,
    utc_now,
    wait_for,
)
from outpost_sandbox.kubelet.daemon import NODE_NAME as PROCESS_NODE
from outpost_sandbox.poll import poll_until


# ---- DaemonSet coverage --------------------------------------------------------------------------
def daemonset_pod_missing(label: str, ns: str, ds: str) -> tuple[Apply, Heal]:
    def pods_on(ctx: FaultContext, node: str) -> list[str]:
        sel = "koord-app=koordlet" if ds == "koordlet" else "control-plane=daemon"
        pods = ctx.kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=sel, fieldSelector=f"spec.nodeName={node}")[
            "items"
        ]
        return [p["metadata"]["name"] for p in pods]

    def apply(ctx: FaultContext) -> dict[str, Any]:
        node = node_target(ctx)
        ctx.kube.merge_patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {label: "true"}}})
        wait_for(f"daemonset {ns}/{ds} to leave node {node}", 90, lambda: not pods_on(ctx, node))
        return {"node": node}

    def heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
        node = undo["node"]
        ctx.kube.merge_patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {label: None}}})
        wait_for(
            f"daemonset {ns}/{ds} back on node {node}",
            90,
            lambda: systems.daemonset_ready(ctx.kube, ns, ds) and bool(pods_on(ctx, node)),
        )

    return apply, heal


# ---- node liveness (kwok) ------------------------------------------------------------------------
def node_ready(ctx: FaultContext, node: str) -> bool:
    return parse(Node, ctx.kube.get(object_path(NODES, node)), "node-ready").ready


KWOK_RENEW_WINDOW_S = 12.0  # kwok renews every quarter of the 40 s lease duration, plus jitter
FAULT_HOLDER = "outpost-sandbox-fault"


def node_lease_stale_apply(ctx: FaultContext) -> dict[str, Any]:
    """Stop the renewal of one node's Lease, as when its kubelet dies.

    kwok renews a node Lease only while it holds it, and treats a node whose Lease another holder
    holds (unexpired) as not its own: it stops renewing it and stops playing its stages. So the
    fault takes the Lease over for a foreign holder with a long leaseDurationSeconds, renewing it
    one last time. From then on nobody renews it: it is stale against kwok's 40 s duration after
    40 s, and after node-monitor-grace-period the real node lifecycle controller turns the node
    NotReady (Unknown). The renewTime is deliberately not backdated: the lifecycle controller only
    acts once the live Lease is exactly the one it last saw renewed.
    """
    node = node_target(ctx)
    path = object_path(LEASES, node, "kube-node-lease")
    spec = ctx.kube.get(path)["spec"]
    last = rfc3339(utc_now(), micro=True)
    ctx.kube.merge_patch(
        path, {"spec": {"holderIdentity": FAULT_HOLDER, "leaseDurationSeconds": 86400, "renewTime": last}}
    )
    undo = {"node": node, "holder": spec.get("holderIdentity"), "duration": spec.get("leaseDurationSeconds", 40)}
    # Proof, not hope: a whole kwok renew window must pass with our last renewal untouched.
    time.sleep(KWOK_RENEW_WINDOW_S)
    now_spec = ctx.kube.get(path)["spec"]
    if now_spec.get("renewTime") != last or now_spec.get("holderIdentity") != FAULT_HOLDER:
        release_node_lease(ctx.kube, node, undo["duration"])
        raise FaultError(f"lease kube-node-lease/{node}: still renewed by {now_spec.get('holderIdentity')}")
    return undo


def release_node_lease(kube: Kube, node: str, duration: int | None = None) -> None:
    """`node`'s Lease left without a holder (`duration` restored when given), for kwok to take.

    Released, not handed back: kwok re-plays a node's stages (Ready again) only when it *acquires* the lease, not
    when it finds itself already holding it.
    """
    spec: dict[str, Any] = {"holderIdentity": None}
    if duration is not None:
        spec["leaseDurationSeconds"] = duration
    kube.merge_patch(object_path(LEASES, node, "kube-node-lease"), {"spec": spec})


def hand_node_lease_to_kwok(kube: Kube, node: str, duration: int | None = None, timeout: float = 60) -> None:
    """`release_node_lease`, then wait until kwok holds the Lease and renews it: a Lease another holder took is
    otherwise left unrenewed until that holder's duration runs out (kwok takes only a released or expired one)."""
    release_node_lease(kube, node, duration)

    def renewed() -> bool:
        spec = kube.get(object_path(LEASES, node, "kube-node-lease"))["spec"]
        return bool(spec.get("holderIdentity")) and age_seconds(spec.get("renewTime")) < 40

    wait_for(f"kwok holding and renewing lease kube-node-lease/{node} again", timeout, renewed)


def node_lease_stale_heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
    hand_node_lease_to_kwok(ctx.kube, undo["node"], undo["duration"])
    restore_systems(ctx)


def restore_systems(ctx: FaultContext, timeout: float = 180) -> None:
    """After an outage: replace pods the node lifecycle controller left NotReady, wait for ready.

    Repeated, because the lifecycle controller may still see a node as not ready for a moment
    after it is back and mark the fresh replacement pods NotReady too.
    """
    wait_for("every node Ready", 90, lambda: all(node_ready(ctx, n) for n in fake_nodes(ctx)))
    last_error: list[Exception] = []

    def revived_and_ready() -> bool:
        try:
            # A pod's replacement can be refused for a moment after the API server is back: on the charts,
            # kruise's `Fail` pod webhook gates koordinator-system's pods, and its endpoints may still be
            # NotReady ("no endpoints available"). Tried again, as a controller would.
            systems.revive_pods(ctx.kube)
            systems.wait_ready(ctx.kube, timeout=15)
        except (systems.SystemsError, SandboxApiError) as exc:
            last_error[:] = [exc]
            return False
        return True

    poll_until(
        "systems ready after heal",
        timeout,
        revived_and_ready,
        interval=0,
        fail=lambda _message: FaultError(f"systems not ready after heal: {last_error[-1]}"),
    )


# ---- the process node's real agents -------------------------------------------------------------------
AGENTS = {  # agent -> (namespace, its DaemonSet's pod selector)
    "koordlet": ("koordinator-system", "koord-app=koordlet"),
    "kruise-daemon": ("kruise-system", "control-plane=daemon"),
}
STALE_BY_S = 600.0
KOORDLET_REPORT_WAIT_S = 180.0
"""koordlet reports one reportIntervalSeconds (60 s by default) after it starts, once it has listed its pods from
the kubelet (koordinator@v1.6.0 pkg/koordlet/statesinformer/impl/states_nodemetric.go), and a restart waits out
the kubelet's back-off first."""


def _agent_pod(ctx: FaultContext, agent: str) -> dict[str, Any] | None:
    return systems.process_node_pod(ctx.kube, *AGENTS[agent])


def _agent_process_state(ctx: FaultContext, agent: str) -> str:
    """The kernel's state letter of the agent's process on the process node (S/R alive, T stopped), '' if none."""
    pod = _agent_pod(ctx, agent)
    return "" if pod is None else pod_process_state(ctx.state_dir, pod)


def agent_fault(agent: str, kind: str) -> tuple[Apply, Heal]:
    """The process node's real `agent` killed and kept down (`kind` crashloop) or stopped with SIGSTOP (frozen).

    Apply returns once the kernel shows it (no process, or state T) and, for crashloop, the pod is NotReady; for
    koordlet, once its NodeMetric reads as long unreported. Heal returns once the agent runs, its pod is Ready and,
    for koordlet, its own report is fresh again."""

    def apply(ctx: FaultContext) -> dict[str, Any]:
        if _agent_pod(ctx, agent) is None:
            raise FaultError(f"no {agent} pod on the process node {PROCESS_NODE}")
        hold_on_process_node(ctx, kind, *AGENTS[agent], True)
        want = "" if kind == "crashloop" else "T"
        wait_for(f"{agent} on {PROCESS_NODE} {kind}", 30, lambda: _agent_process_state(ctx, agent) == want)
        if kind == "crashloop":
            wait_for(f"the {agent} pod on {PROCESS_NODE} NotReady", 30, lambda: not pod_ready(_agent_pod(ctx, agent)))
        if agent == "koordlet":
            backdate_nodemetric(ctx, PROCESS_NODE, STALE_BY_S)
        return {"agent": agent}

    def heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
        hold_on_process_node(ctx, kind, *AGENTS[agent], False)
        wait_for(
            f"{agent} running and its pod Ready on {PROCESS_NODE}",
            90,
            lambda: _agent_process_state(ctx, agent) not in ("", "T") and pod_ready(_agent_pod(ctx, agent)),
        )
        if agent == "koordlet":
            wait_for(
                f"koordlet's own NodeMetric report for {PROCESS_NODE}",
                KOORDLET_REPORT_WAIT_S,
                lambda: nodemetric_age(ctx, PROCESS_NODE) < 60,
            )

    return apply, heal
