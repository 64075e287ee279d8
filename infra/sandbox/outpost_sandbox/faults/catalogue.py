"""The fault catalogue: every fault by name, with the checks it fails, its help text and target.

Guarantees: names, targets and help texts are what `outpost sandbox break --help` lists; the order
is the order of that list.
"""

from __future__ import annotations

from collections.abc import Mapping

from outpost_sandbox.backends.behaviour import (
    TARGETS,
    TLS_TARGETS,
)
from outpost_sandbox.faults.backends import backend_fault
from outpost_sandbox.faults.base import (
    DEFAULT_PROBE_SUBJECT,
    LEADER_LEASES,
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
    webhook_cert_expiring_apply,
    webhook_cert_expiring_heal,
)
from outpost_sandbox.faults.extension_objects import (
    evictions_apply,
    evictions_heal,
    leader_lease_apply,
    leader_lease_heal,
    nodemetric_stale_apply,
    nodemetric_stale_heal,
    podgroup_fault,
    scaled_to_zero_apply,
    scaled_to_zero_heal,
    utilization_fault,
    webhook_deleted_apply,
    webhook_deleted_heal,
)
from outpost_sandbox.faults.nodes import daemonset_pod_missing, node_lease_stale_apply, node_lease_stale_heal
from outpost_sandbox.faults.overload import overload_apply, overload_heal


def _fault(name: str, checks: tuple[str, ...], help_: str, pair: tuple[Apply, Heal],
           target_help: str = "", by_target: Mapping[str, tuple[str, ...]] | None = None) -> Fault:
    return Fault(name, checks, help_, pair[0], pair[1], target_help, dict(by_target or {}))


def _backend_fault(name: str, checks: tuple[str, ...], help_: str, pair: tuple[Apply, Heal],
                   target_help: str) -> Fault:
    """A backend fault fails only those of its checks that read the backend it is aimed at."""
    by_target = {target: tuple(c for c in checks if c in read_by) for target, read_by in TARGET_CHECKS.items()}
    return _fault(name, checks, help_, pair, target_help, by_target)


_BACKEND_TARGETS = "backend target: " + ", ".join(sorted(TARGETS))
FAULTS: dict[str, Fault] = {f.name: f for f in [
    _backend_fault("backend-down", ("koord-manager-health", "koord-webhook", "kruise-manager-health", "kruise-webhook",
                            "admission-dry-run", "kruise-daemon-coverage", "ls-latency"),
           "the backend resets connections", backend_fault("down"), _BACKEND_TARGETS),
    _backend_fault("backend-500", ("koord-manager-health", "koord-webhook", "kruise-manager-health", "kruise-webhook",
                           "admission-dry-run", "kruise-daemon-coverage", "ls-latency"),
           "the backend answers 500", backend_fault("500"), _BACKEND_TARGETS),
    _backend_fault("backend-hang", ("koord-manager-health", "koord-webhook", "kruise-manager-health", "kruise-webhook",
                            "admission-dry-run", "kruise-daemon-coverage", "ls-latency"),
           "the backend accepts and never answers", backend_fault("hang"), _BACKEND_TARGETS),
    _backend_fault("backend-slow", ("ls-latency", "koord-manager-health", "kruise-manager-health"),
           "the backend answers after --delay-ms (default 3000)",
           backend_fault("slow"), _BACKEND_TARGETS),
    _backend_fault("backend-wrong-body", ("kruise-manager-health", "koord-manager-health", "admission-dry-run"),
           "the backend answers 200 with a wrong body",
           backend_fault("wrong-body"), _BACKEND_TARGETS),
    _backend_fault("backend-tls-bad-ca", ("admission-dry-run",),
           "the webhook serves a certificate from a foreign CA", backend_fault("tls-bad-ca", TLS_TARGETS),
           "koord-webhook or kruise-webhook"),
    _backend_fault("backend-tls-expired", ("admission-dry-run",),
           "the webhook serves an expired certificate", backend_fault("tls-expired", TLS_TARGETS),
           "koord-webhook or kruise-webhook"),
    _backend_fault("webhook-no-mutate", ("admission-dry-run",), "the webhook allows without mutating",
           backend_fault("no-mutate", TLS_TARGETS), "koord-webhook or kruise-webhook"),
    _fault("koordlet-missing", ("koordlet-coverage",), "the koordlet DaemonSet leaves one node",
           daemonset_pod_missing(NO_KOORDLET_LABEL, "koordinator-system", "koordlet"), "node (default: first)"),
    _fault("kruise-daemon-missing", ("kruise-daemon-coverage",), "the kruise-daemon DaemonSet leaves one node",
           daemonset_pod_missing(NO_KRUISE_DAEMON_LABEL, "kruise-system", "kruise-daemon"), "node (default: first)"),
    _fault("node-lease-stale", ("kwok-node-consistency",),
           "one node's Lease stops being renewed (kwok lets go of it), then the node turns NotReady",
           (node_lease_stale_apply, node_lease_stale_heal), "node (default: first)"),
    _fault("nodemetric-stale", ("nodemetric-freshness",), "one node's NodeMetric stops being refreshed",
           (nodemetric_stale_apply, nodemetric_stale_heal), "node (default: first)"),
    _fault("node-utilization-low", ("node-utilization",), "NodeMetrics report 20 % CPU",
           utilization_fault(0.20)),
    _fault("node-utilization-high", ("node-utilization",), "NodeMetrics report 90 % CPU",
           utilization_fault(0.90)),
    _fault("podgroup-failed", ("gang-scheduling",), "a PodGroup in phase Failed", podgroup_fault("Failed")),
    _fault("podgroup-stuck", ("gang-scheduling",), "a PodGroup Pending for an hour, members unschedulable",
           podgroup_fault("Pending")),
    _fault("be-evictions", ("be-eviction-rate",), "--count (default 10) evictPodSuccess Events on BE pods",
           (evictions_apply, evictions_heal)),
    _fault("webhook-config-deleted", ("koord-webhook", "kruise-webhook", "admission-dry-run"),
           "the system's mutating and validating webhook configurations are deleted",
           (webhook_deleted_apply, webhook_deleted_heal), "koordinator or kruise",
           {"koordinator": ("koord-webhook", "admission-dry-run"), "kruise": ("kruise-webhook", "admission-dry-run")}),
    _fault("manager-scaled-to-zero", ("koord-manager-health", "kruise-manager-health", "kruise-manager-replicas",
                                      "leader-leases"),
           "the manager Deployment is scaled to 0", (scaled_to_zero_apply, scaled_to_zero_heal),
           "koord-manager or kruise-controller-manager",
           {"koord-manager": ("koord-manager-health", "leader-leases"),
            "kruise-controller-manager": ("kruise-manager-health", "kruise-manager-replicas", "leader-leases")}),
    _fault("leader-lease-stale", ("leader-leases",), "a leader Lease is no longer renewed",
           (leader_lease_apply, leader_lease_heal), "lease: " + ", ".join(sorted(LEADER_LEASES))),
    _fault("apiserver-overload", ("apiserver-triage",),
           "Priority and Fairness rejects the subject's requests with 429 while /readyz stays 200",
           (overload_apply, overload_heal), f"user:NAME, group:NAME or sa:NS/NAME (default {DEFAULT_PROBE_SUBJECT})"),
    _fault("webhook-cert-expiring", ("webhook-cert-expiry",),
           "webhook CA (caBundle) and serving certificates expire in --days (default 5)",
           (webhook_cert_expiring_apply, webhook_cert_expiring_heal)),
    _fault("apiserver-cert-expiring", ("apiserver-cert-expiry",), "API server certificate expires in 5 days",
           apiserver_cert_fault(5)),
    _fault("apiserver-cert-expired", ("apiserver-cert-expiry", "apiserver-triage"),
           "API server certificate expired a day ago", apiserver_cert_fault(-1)),
    _fault("etcd-down", ("apiserver-health", "apiserver-triage"), "etcd is stopped", component_down_fault("etcd")),
    _fault("apiserver-down", ("apiserver-health", "apiserver-triage"), "kube-apiserver is stopped",
           component_down_fault("kube-apiserver")),
    _fault("kwok-down", ("kwok-node-consistency",),
           "kwok is stopped: no node Lease is renewed (break returns once every Lease has outlived its duration)",
           kwok_down_fault()),
]}
