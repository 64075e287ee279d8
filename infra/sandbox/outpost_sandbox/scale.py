"""How the control plane and kwok are tuned for the node count: one `ScaleProfile` per tier, chosen by
`scale_profile`.

One table, so the flags the launcher passes, the Lease durations the faults and readiness checks recognise as
kwok's, and the timeouts `up` waits cannot disagree for a given sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from outpost_sandbox.nodes import POD_CIDR

MAX_NODES = 65000
NODE_LEASE_SECONDS = 40
"""The kubelet's default nodeLeaseDurationSeconds, which kwok uses up to `SCALE_PROFILES[0].max_nodes`."""


@dataclass(frozen=True)
class ScaleProfile:
    """How the control plane and kwok are tuned for a sandbox of up to `max_nodes` fake nodes.

    Why: every fake node costs the one machine what a real node costs a real control plane, above all
    its Lease renewal (a kubelet renews every leaseDuration/4 = 10 s: 5,000 nodes are 500 writes a
    second, each fanned out to every Lease watcher). A real 5,000-node control plane has many cores
    for that; this one has 2, so past a few hundred nodes the renewals queue behind each other, Leases
    lag past --node-monitor-grace-period and the node lifecycle controller marks healthy nodes
    NotReady (and their pods NotReady with them). Large clusters are tuned exactly here: a longer
    node lease (kubelet `nodeLeaseDurationSeconds`) with a grace period and startup grace to match
    (kube-controller-manager `--node-monitor-grace-period`, `--node-startup-grace-period`), more
    workers where work queues up behind API latency, more client QPS for the controllers that
    create and bind one pod per node. Each tier keeps the renewal rate (4 x nodes / lease) at or
    under ~50 writes a second. `None` leaves the component's own default.

    The first tier is the sandbox as it always was (kubelet and controller-manager defaults): the
    e2e tests and every fault run there, so failure detection keeps its real timing (a Lease is
    stale after 40 s, the node NotReady 50 s after its last renewal).
    """

    max_nodes: int
    node_lease_seconds: int
    """kwok --node-lease-duration-seconds (kubelet nodeLeaseDurationSeconds); kwok renews every quarter."""
    node_monitor_grace_seconds: int | None = None
    """kube-controller-manager --node-monitor-grace-period (default 50 s against the default 40 s
    lease: 1.25 leases). Kept at 1.25 leases: as many missed renewals tolerated as upstream tolerates."""
    node_startup_grace_seconds: int | None = None
    """--node-startup-grace-period (default 60 s): how long a node created without a Ready condition
    may wait for kwok's first Lease and node-initialize; at 5,000 nodes kwok works through minutes of
    node creations, so it is at least the grace period."""
    node_monitor_period_seconds: int | None = None
    """--node-monitor-period (default 5 s): each pass walks every node; with minutes of grace, a
    pass every 10 s detects as well and costs half."""
    kwok_parallelism: int | None = None
    """kwok's nodeLeaseParallelism, nodePlayStageParallelism and podPlayStageParallelism (default 4
    each): its workers wait on the API server, and its client has no rate limit, so more workers
    hide latency instead of adding load. Needed at bring-up: 5,000 Leases, 5,000 node-initialize
    and 10,000 pod-ready patches."""
    scheduler_qps: tuple[int, int] | None = None
    """kube-scheduler --kube-api-qps/--kube-api-burst (default 50/100): one DaemonSet pod per node
    per DaemonSet is 10,000 bindings at 5,000 nodes, over 3 minutes at 50 a second."""
    install_timeout_seconds: float = 240.0
    """How long `up` waits for the extension systems to be ready (10,000 DaemonSet pods to create,
    bind and make Ready at 5,000 nodes)."""

    @property
    def kwok_ready_timeout_seconds(self) -> float:
        """How long a (re)started kwok may take to renew every node Lease: kwok v0.8.0 retries a Lease it failed
        to take over (its Lease cache not yet filled, it tries to create one that exists) a renew interval later,
        a quarter lease plus 4 % jitter (`node_lease_controller.go`): 100 s at a 400 s lease. A minute more for
        the rest; the component's own `ready_timeout` (90 s) stays the floor."""
        return self.node_lease_seconds / 4 * 1.04 + 60.0

    def controller_manager_flags(self) -> list[str]:
        flags = []
        if self.node_monitor_grace_seconds is not None:
            flags.append(f"--node-monitor-grace-period={self.node_monitor_grace_seconds}s")
        if self.node_startup_grace_seconds is not None:
            flags.append(f"--node-startup-grace-period={self.node_startup_grace_seconds}s")
        if self.node_monitor_period_seconds is not None:
            flags.append(f"--node-monitor-period={self.node_monitor_period_seconds}s")
        return flags

    def scheduler_flags(self) -> list[str]:
        if self.scheduler_qps is None:
            return []
        qps, burst = self.scheduler_qps
        return [f"--kube-api-qps={qps}", f"--kube-api-burst={burst}"]

    def kwok_configuration(self) -> str | None:
        """A KwokConfiguration document, or None to run kwok with its defaults.

        kwok applies no defaults to a configuration it loads from a file (v0.8.0 `config.Load`
        unmarshals and converts only), so every option is spelled out, the untuned ones with
        upstream's default values (`pkg/apis/config/v1alpha1/zz_generated.defaults.go`); the
        command-line flags still override cidr, the node selector and the lease duration.
        """
        if self.kwok_parallelism is None:
            return None
        options = {
            "cidr": POD_CIDR,
            "manageAllNodes": False,
            "enableDebuggingHandlers": True,
            "enableContentionProfiling": False,
            "enableProfilingHandler": True,
            "nodeLeaseParallelism": self.kwok_parallelism,
            "nodePlayStageParallelism": self.kwok_parallelism,
            "podPlayStageParallelism": self.kwok_parallelism,
            "podsOnNodeSyncParallelism": 1,
            "enablePodsOnNodeSyncListPager": True,
            "enablePodsOnNodeSyncStreamWatch": False,
        }
        return yaml.safe_dump(
            {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration", "options": options},
            sort_keys=False,
        )


def _tuned(
    max_nodes: int,
    node_lease_seconds: int,
    install_timeout_seconds: float,
    node_monitor_period_seconds: int | None = None,
) -> ScaleProfile:
    """A tier past upstream's defaults: both grace periods 1.25 leases (upstream's 50 s against its 40 s lease), 16
    kwok workers, the scheduler at 100/200 QPS."""
    grace = node_lease_seconds * 5 // 4
    return ScaleProfile(
        max_nodes=max_nodes,
        node_lease_seconds=node_lease_seconds,
        node_monitor_grace_seconds=grace,
        node_startup_grace_seconds=grace,
        node_monitor_period_seconds=node_monitor_period_seconds,
        kwok_parallelism=16,
        scheduler_qps=(100, 200),
        install_timeout_seconds=install_timeout_seconds,
    )


SCALE_PROFILES = (
    # As upstream ships every default: what the e2e tests and faults run against (50 renewals/s at 500 nodes).
    ScaleProfile(max_nodes=500, node_lease_seconds=NODE_LEASE_SECONDS),
    # 160 s lease, renewed every 40 s: 50 renewals/s at 2,000 nodes.
    _tuned(max_nodes=2000, node_lease_seconds=160, install_timeout_seconds=480.0),
    # 400 s lease, renewed every 100 s: 50 renewals/s at 5,000 nodes (measured on 2 cores; beyond
    # 5,000 the rate grows again and the machine, not this table, is the limit).
    _tuned(max_nodes=MAX_NODES, node_lease_seconds=400, install_timeout_seconds=900.0, node_monitor_period_seconds=10),
)
KWOK_LEASE_DURATIONS = frozenset(profile.node_lease_seconds for profile in SCALE_PROFILES)
"""A node Lease with one of these durations is kwok's (a sandbox may have been grown from one tier to the next);
the node-lease-stale fault takes one over with a far longer one."""


def scale_profile(nodes: int) -> ScaleProfile:
    """The tuning for a sandbox that has (had) `nodes` fake nodes."""
    return next(profile for profile in SCALE_PROFILES if nodes <= profile.max_nodes)
