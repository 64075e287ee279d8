"""Control-plane faults: the API server's certificate expiring or expired, etcd, the API server or kwok stopped.

Guarantees: certificate faults reissue real certificates from the sandbox PKI and republish what
the API serves; a stopped component's heal returns once it works again (after etcd or the API
server, once the watching components have been restarted and the systems are ready: the real managers
exit when they lose the API server for longer than their renew deadline, and the process node's kubelet
restarts them).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from outpost_sandbox import cluster, scale
from outpost_sandbox.faults.base import (
    Apply,
    FaultContext,
    FaultError,
    Heal,
    age_seconds,
    fake_nodes,
    utc_now,
    wait_for,
)
from outpost_sandbox.faults.nodes import restore_systems


# ---- certificates ----------------------------------------------------------------------------------
def apiserver_cert_fault(days: float) -> tuple[Apply, Heal]:
    def apply(ctx: FaultContext) -> dict[str, Any]:
        not_after = utc_now() + dt.timedelta(days=days)
        not_before = not_after - dt.timedelta(days=90) if days < 0 else None
        cluster.rotate_apiserver_cert(not_after=not_after, state_dir=ctx.state_dir, not_before=not_before)
        return {}

    def heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
        cluster.rotate_apiserver_cert(not_after=None, state_dir=ctx.state_dir)
        # The API server restarted twice: the real managers may have lost it past their renew deadline and exited.
        restore_systems(ctx)

    return apply, heal


NODE_LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


def _every_node_lease_expired(ctx: FaultContext) -> bool:
    """Every fake node's Lease (kwok's; the process node's kubelet keeps renewing its own) has expired."""
    fake = set(fake_nodes(ctx))
    specs = [lease.get("spec") or {} for lease in ctx.kube.list(NODE_LEASES) if lease["metadata"]["name"] in fake]
    return bool(specs) and all(
        age_seconds(spec.get("renewTime")) > float(spec.get("leaseDurationSeconds") or 0) for spec in specs
    )


def component_down_fault(
    component: str,
    visible_when: Callable[[FaultContext], bool] | None = None,
    visible_what: str = "",
    visible_within: float = 0,
) -> tuple[Apply, Heal]:
    """Stop a sandbox component. With `visible_when`, `break` returns only once the outage can be observed
    at all: a kwok stopped a second ago left every node Lease freshly renewed, and neither Kubernetes' own
    node lifecycle controller nor any monitor can tell it from a healthy kwok until the Leases outlive
    their duration (40 s here). Waiting for that is part of staging the fault, so the first run after
    `break` meets the outage as a user would meet a dead kwok."""

    def apply(ctx: FaultContext) -> dict[str, Any]:
        if not cluster.stop_component(component, state_dir=ctx.state_dir):
            raise FaultError(f"sandbox component {component} was not running")
        if visible_when is not None:
            wait_for(visible_what, visible_within, lambda: visible_when(ctx))
        return {}

    def heal(ctx: FaultContext, undo: dict[str, Any]) -> None:
        # Returns once the component works again (kwok: every node Lease renewed), and after etcd
        # or the API server, once /readyz is 200 and the watching components are restarted.
        cluster.start_component(component, state_dir=ctx.state_dir, wait=True)
        restore_systems(ctx)

    return apply, heal


def kwok_down_fault() -> tuple[Apply, Heal]:
    return component_down_fault(
        "kwok",
        _every_node_lease_expired,
        "every node Lease to outlive its leaseDurationSeconds after kwok stopped",
        scale.NODE_LEASE_SECONDS * 3,
    )
