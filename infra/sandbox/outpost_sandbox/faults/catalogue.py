"""The fault catalogue: every fault by name, with the checks it fails, its help text and target.

Guarantees: names, targets and help texts are what `outpost sandbox break --help` lists; the order
is the order of that list.
"""

from __future__ import annotations

from collections.abc import Mapping

from outpost_sandbox.backends.behaviour import TARGETS
from outpost_sandbox.faults.backends import backend_fault
from outpost_sandbox.faults.base import (
    DEFAULT_PROBE_SUBJECT,
    NO_KOORDLET_LABEL,
    NO_KRUISE_DAEMON_LABEL,
    TARGET_CHECKS,
    Apply,
    Fault,
    Heal,
)
from outpost_sandbox.faults.control_plane import (
    apiserver_cert_fault,
    component_down_fault,
    kwok_down_fault,
)
from outpost_sandbox.faults.extension_objects import (
    evictions_apply,
    evictions_heal,
    nodemetric_stale_apply,
    nodemetric_stale_heal,
    podgroup_fault,
    scaled_to_zero_apply,
    scaled_to_zero_heal,
    utilization_fault,
)
from outpost_sandbox.faults.managers import (
    LEADER_LEASES,
    cert_expiring_fault,
    certs_deleted_fault,
    down_fault,
    frozen_fault,
    lease_stolen_fault,
    webhook_deleted_apply,
    webhook_deleted_heal,
)
from outpost_sandbox.faults.nodes import (
    agent_fault,
    daemonset_pod_missing,
    node_lease_stale_apply,
    node_lease_stale_heal,
)
from outpost_sandbox.faults.overload import overload_apply, overload_heal


def _fault(
    name: str,
    checks: tuple[str, ...],
    help_: str,
    pair: tuple[Apply, Heal],
    target_help: str = "",
    by_target: Mapping[str, tuple[str, ...]] | None = None,
) -> Fault:
    return Fault(name, checks, help_, pair[0], pair[1], target_help, dict(by_target or {}))


def _backend_fault(name: str, checks: tuple[str, ...], help_: str, pair: tuple[Apply, Heal], target_help: str) -> Fault:
    """A backend fault fails only those of its checks that read the backend it is aimed at."""
    by_target = {target: tuple(c for c in checks if c in read_by) for target, read_by in TARGET_CHECKS.items()}
    return _fault(name, checks, help_, pair, target_help, by_target)


_BACKEND_TARGETS = "backend target: " + ", ".join(sorted(TARGETS))
_KOORD_DOWN = ("koord-manager-health", "koord-webhook", "admission-dry-run", "leader-leases")
_KRUISE_DOWN = (
    "kruise-manager-health",
    "kruise-webhook",
    "admission-dry-run",
    "kruise-manager-replicas",
    "leader-leases",
)
MANAGER_DOWN = {
    "koord-manager": _KOORD_DOWN,
    "kruise-controller-manager": _KRUISE_DOWN,
    "koord-scheduler": ("leader-leases",),
    "koord-descheduler": ("leader-leases",),
}
"""What a manager's outage fails, per manager Deployment: its health, its webhook (no ready endpoint), admission
(both pod webhooks fail closed, so the API server refuses the dry-run pod naming the webhook), its replicas,
its leader Lease (expired before `break` returns)."""
SYSTEM_DOWN = {"koordinator": _KOORD_DOWN, "kruise": _KRUISE_DOWN}
SERVING = ("koord-manager", "kruise-controller-manager")
"""The managers that serve health and webhook ports: freezing one is a hang those checks must tell from a refusal
(a frozen scheduler is seen only in its Lease, as a killed one is)."""
_MANAGER_TARGETS = "manager deployment: " + ", ".join(sorted(MANAGER_DOWN))
_ALL = tuple(sorted({check for checks in MANAGER_DOWN.values() for check in checks}))


def _system_fault(name: str, extra: tuple[str, ...], help_: str, pair: tuple[Apply, Heal]) -> Fault:
    """A fault aimed at one system (koordinator or kruise) that holds its manager down."""
    by_target = {system: (*extra, *checks) for system, checks in SYSTEM_DOWN.items()}
    return _fault(
        name,
        tuple(sorted({c for checks in by_target.values() for c in checks})),
        help_,
        pair,
        "koordinator or kruise",
        by_target,
    )


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in [
        _backend_fault(
            "backend-down",
            ("kruise-daemon-coverage", "ls-latency"),
            "the backend resets connections",
            backend_fault("down"),
            _BACKEND_TARGETS,
        ),
        _backend_fault(
            "backend-500",
            ("kruise-daemon-coverage", "ls-latency"),
            "the backend answers 500",
            backend_fault("500"),
            _BACKEND_TARGETS,
        ),
        _backend_fault(
            "backend-hang",
            ("kruise-daemon-coverage", "ls-latency"),
            "the backend accepts and never answers",
            backend_fault("hang"),
            _BACKEND_TARGETS,
        ),
        _backend_fault(
            "backend-slow",
            ("ls-latency",),
            "the backend answers after --delay-ms (default 3000)",
            backend_fault("slow"),
            _BACKEND_TARGETS,
        ),
        _backend_fault(
            "backend-wrong-body",
            ("ls-latency",),
            "the backend answers 200 with a wrong body",
            backend_fault("wrong-body"),
            _BACKEND_TARGETS,
        ),
        _fault(
            "manager-down",
            _ALL,
            "the manager's processes are killed and kept down (CrashLoopBackOff); break "
            "returns once no process of it runs, its pods are NotReady and its leader Lease reads as expired "
            "(renewTime moved back past its duration: time compressed, nothing left renews it)",
            down_fault(),
            _MANAGER_TARGETS,
            MANAGER_DOWN,
        ),
        _fault(
            "manager-frozen",
            _ALL,
            "the manager's processes are stopped (SIGSTOP): ports accept, nothing answers; "
            "break returns once its readiness probe failed and its Lease expired",
            frozen_fault(),
            "manager deployment: " + ", ".join(sorted(SERVING)),
            {name: MANAGER_DOWN[name] for name in SERVING},
        ),
        _fault(
            "manager-lease-stolen",
            ("leader-leases",),
            "a foreign holder takes the manager's leader Lease for an "
            "hour: the manager exits, restarts and is ready but not leading",
            lease_stolen_fault(),
            "lease: " + ", ".join(sorted(LEADER_LEASES)),
            dict.fromkeys(LEADER_LEASES, ("leader-leases",)),
        ),
        _fault(
            "koordlet-missing",
            ("koordlet-coverage",),
            "the koordlet DaemonSet leaves one node",
            daemonset_pod_missing(NO_KOORDLET_LABEL, "koordinator-system", "koordlet"),
            "node (default: first)",
        ),
        _fault(
            "kruise-daemon-missing",
            ("kruise-daemon-coverage",),
            "the kruise-daemon DaemonSet leaves one node",
            daemonset_pod_missing(NO_KRUISE_DAEMON_LABEL, "kruise-system", "kruise-daemon"),
            "node (default: first)",
        ),
        _fault(
            "koordlet-down",
            ("koordlet-coverage", "nodemetric-freshness"),
            "the process node's real koordlet is killed and kept down (CrashLoopBackOff): its pod NotReady, its "
            "NodeMetric no longer reported",
            agent_fault("koordlet", "crashloop"),
        ),
        _fault(
            "koordlet-frozen",
            ("nodemetric-freshness",),
            "the process node's real koordlet is stopped (SIGSTOP): its pod stays Ready (the chart gives it no "
            "probe), only its NodeMetric goes unreported",
            agent_fault("koordlet", "frozen"),
        ),
        _fault(
            "kruise-daemon-down",
            ("kruise-daemon-coverage",),
            "the process node's real kruise-daemon is killed and kept down (CrashLoopBackOff)",
            agent_fault("kruise-daemon", "crashloop"),
        ),
        _fault(
            "node-lease-stale",
            ("kwok-node-consistency",),
            "one node's Lease stops being renewed (kwok lets go of it), then the node turns NotReady",
            (node_lease_stale_apply, node_lease_stale_heal),
            "node (default: first)",
        ),
        _fault(
            "nodemetric-stale",
            ("nodemetric-freshness",),
            "one node's NodeMetric stops being refreshed",
            (nodemetric_stale_apply, nodemetric_stale_heal),
            "node (default: first)",
        ),
        _fault("node-utilization-low", ("node-utilization",), "NodeMetrics report 20 % CPU", utilization_fault(0.20)),
        _fault(
            "node-utilization-high",
            ("node-utilization",),
            "every NodeMetric reports 90 % CPU: above LoadAware's 65 % on every node, its Filter rejects them all",
            utilization_fault(0.90),
        ),
        _fault(
            "podgroup-failed",
            ("gang-scheduling",),
            "one of a running gang's 3 members fails (koord-scheduler v1.6.0 leaves its PodGroup's status as it was)",
            podgroup_fault("Failed"),
        ),
        _fault(
            "podgroup-stuck",
            ("gang-scheduling",),
            "a gang's 3 members ask for a node that does not exist: "
            "koord-scheduler finds them unschedulable (their wait backdated by an hour)",
            podgroup_fault("Pending"),
        ),
        _fault(
            "be-evictions",
            ("be-eviction-rate",),
            "--count (default 10) evictPodSuccess Events on BE pods",
            (evictions_apply, evictions_heal),
        ),
        _fault(
            "webhook-config-deleted",
            ("koord-webhook", "kruise-webhook", "admission-dry-run", "webhook-cert-expiry"),
            "the system's mutating and validating webhook configurations are deleted (the running manager does "
            "not recreate them)",
            (webhook_deleted_apply, webhook_deleted_heal),
            "koordinator or kruise",
            {
                "koordinator": ("koord-webhook", "admission-dry-run", "webhook-cert-expiry"),
                "kruise": ("kruise-webhook", "admission-dry-run", "webhook-cert-expiry"),
            },
        ),
        _fault(
            "manager-scaled-to-zero",
            _ALL,
            "the manager Deployment is scaled to 0",
            (scaled_to_zero_apply, scaled_to_zero_heal),
            _MANAGER_TARGETS,
            MANAGER_DOWN,
        ),
        _system_fault(
            "webhook-cert-expiring",
            ("webhook-cert-expiry",),
            "with the manager down, its webhook certificate Secret and caBundles hold a CA and certificate "
            "expiring in --days (default 5); heal lets the manager replace them",
            cert_expiring_fault(),
        ),
        _system_fault(
            "webhook-certs-deleted",
            ("webhook-cert-expiry",),
            "with the manager down, its webhook certificate Secret is deleted; heal lets the manager "
            "generate a new CA and certificate (caught by webhook-cert-expiry with read_serving_secrets: the "
            "caBundles alone still hold the old CA)",
            certs_deleted_fault(),
        ),
        _fault(
            "apiserver-overload",
            ("apiserver-triage",),
            "Priority and Fairness rejects the subject's requests with 429 while /readyz stays 200",
            (overload_apply, overload_heal),
            f"user:NAME, group:NAME or sa:NS/NAME (default {DEFAULT_PROBE_SUBJECT})",
        ),
        _fault(
            "apiserver-cert-expiring",
            ("apiserver-cert-expiry",),
            "API server certificate expires in 5 days",
            apiserver_cert_fault(5),
        ),
        _fault(
            "apiserver-cert-expired",
            ("apiserver-cert-expiry", "apiserver-triage"),
            "API server certificate expired a day ago",
            apiserver_cert_fault(-1),
        ),
        _fault("etcd-down", ("apiserver-health", "apiserver-triage"), "etcd is stopped", component_down_fault("etcd")),
        _fault(
            "apiserver-down",
            ("apiserver-health", "apiserver-triage"),
            "kube-apiserver is stopped",
            component_down_fault("kube-apiserver"),
        ),
        _fault(
            "kwok-down",
            ("kwok-node-consistency",),
            "kwok is stopped: no node Lease is renewed (break returns once every Lease has outlived its duration)",
            kwok_down_fault(),
        ),
    ]
}
